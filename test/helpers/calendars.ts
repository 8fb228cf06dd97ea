import type { WeeklyCalendar } from '../../lib/plan/calendar.js';

/** `HH:MM` as minutes of the day. */
export const minutes = (clock: string): number => Number(clock.slice(0, 2)) * 60 + Number(clock.slice(3, 5));

/** A calendar with the same intervals on each listed ISO weekday (1 Monday .. 7 Sunday). */
export function calendar(days: number[], intervals: [string, string][]): WeeklyCalendar {
  const day = intervals.map(([from, to]) => [minutes(from), minutes(to)] as const);
  return new Map(days.map((weekday) => [weekday, day]));
}

export const WEEKDAYS = [1, 2, 3, 4, 5];
export const EVERY_DAY = [1, 2, 3, 4, 5, 6, 7];
/** Monday-Friday 09:00-17:00, the default calendar. */
export const OFFICE = calendar(WEEKDAYS, [['09:00', '17:00']]);
