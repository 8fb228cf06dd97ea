import type { WeeklyCalendar } from '../plan/calendar.js';
import type { Db } from './open.js';

/** Weekly working calendars of staff members. */
export function calendarStatements(db: Db) {
  const intervals = db.prepare<[number], { weekday: number; startMinute: number; endMinute: number }>(`
    SELECT weekday, start_minute AS startMinute, end_minute AS endMinute
      FROM calendar_intervals WHERE staff_id = ? ORDER BY weekday, start_minute`);
  return {
    calendarOf(staffId: number): WeeklyCalendar {
      const calendar = new Map<number, [number, number][]>();
      for (const row of intervals.all(staffId)) {
        const day = calendar.get(row.weekday);
        if (day === undefined) calendar.set(row.weekday, [[row.startMinute, row.endMinute]]);
        else day.push([row.startMinute, row.endMinute]);
      }
      return calendar;
    },
  };
}

export type CalendarStatements = ReturnType<typeof calendarStatements>;
