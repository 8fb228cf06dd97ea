import { epochMsToLocal, localToEpochMs } from '../time/london.js';

/** Working intervals per ISO weekday (1 Monday .. 7 Sunday), minutes of the London day. */
export type WeeklyCalendar = ReadonlyMap<number, readonly (readonly [number, number])[]>;

const DAY_MS = 86_400_000;

function pad(value: number): string {
  return value < 10 ? `0${value}` : String(value);
}

/**
 * The instant of a London wall time given as a date and minute of day. A wall time inside the
 * spring gap (01:00-02:00) is taken as the end of the gap, so a working interval that starts in
 * it simply starts when the clocks have gone forward; minute 1440 is the next day's midnight.
 */
export function wallInstant(date: string, minute: number): number {
  if (minute >= 1440) {
    const next = new Date(Date.parse(`${date}T00:00:00Z`) + DAY_MS).toISOString().slice(0, 10);
    return wallInstant(next, minute - 1440);
  }
  const local = `${date}T${pad(Math.floor(minute / 60))}:${pad(minute % 60)}:00`;
  try {
    return localToEpochMs(local);
  } catch {
    return localToEpochMs(`${date}T02:00:00`);
  }
}

/** ISO weekday of a `YYYY-MM-DD` calendar date. */
export function isoWeekday(date: string): number {
  const day = new Date(`${date}T00:00:00Z`).getUTCDay();
  return day === 0 ? 7 : day;
}

export function nextDate(date: string): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + DAY_MS).toISOString().slice(0, 10);
}

/**
 * Working time (real minutes) of a calendar between two instants, day by day in London wall
 * time, so a working day that contains a clock change is as long as it really is.
 */
export function workingMinutesBetween(calendar: WeeklyCalendar, fromMs: number, toMs: number): number {
  if (!(toMs > fromMs)) return 0;
  let total = 0;
  let date = epochMsToLocal(fromMs).slice(0, 10);
  const lastDate = epochMsToLocal(toMs).slice(0, 10);
  for (;;) {
    for (const [start, end] of calendar.get(isoWeekday(date)) ?? []) {
      const from = Math.max(fromMs, wallInstant(date, start));
      const to = Math.min(toMs, wallInstant(date, end));
      if (to > from) total += to - from;
    }
    if (date >= lastDate) break;
    date = nextDate(date);
  }
  return total / 60_000;
}
