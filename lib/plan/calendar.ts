import { epochMsToLocal, localToEpochMs, offsetMsAt } from '../time/london.js';

/** Working intervals per ISO weekday (1 Monday .. 7 Sunday), minutes of the London day. */
export type WeeklyCalendar = ReadonlyMap<number, readonly (readonly [number, number])[]>;

const DAY_MS = 86_400_000;

function pad(value: number): string {
  return value < 10 ? `0${value}` : String(value);
}

/**
 * The instant of a London wall time given as a date and minute of day. A wall time inside a
 * spring gap is taken as the end of the gap (the first wall minute that exists), so a working
 * interval that starts in it simply starts when the clocks have gone forward. The gap is searched
 * for rather than assumed: it was 01:00-02:00 only from 1981, 02:00-03:00 before. Minute 1440
 * is the next day's midnight.
 */
export function wallInstant(date: string, minute: number): number {
  if (minute >= 1440) return wallInstant(nextDate(date), minute - 1440);
  for (let candidate = minute; candidate < 1440; candidate += 1) {
    try {
      return localToEpochMs(`${date}T${pad(Math.floor(candidate / 60))}:${pad(candidate % 60)}:00`);
    } catch {
      // Inside the gap: try the next wall minute.
    }
  }
  return wallInstant(nextDate(date), 0);
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
 * Europe/London only ever changes its offset at wall times before 04:00 (02:00/03:00 from 1916,
 * 01:00/02:00 since 1981, midnight for the 1847 switch from local mean time). A calendar whose
 * working intervals all lie between 04:00 and 23:59 therefore never works through a clock change:
 * each of its full working days lasts exactly its wall-clock minutes.
 */
const FIRST_MINUTE_CLEAR_OF_CLOCK_CHANGES = 240;

function clearOfClockChanges(calendar: WeeklyCalendar): boolean {
  for (const intervals of calendar.values()) {
    for (const [start, end] of intervals) if (start < FIRST_MINUTE_CLEAR_OF_CLOCK_CHANGES || end >= 1440) return false;
  }
  return true;
}

function weeklyWallMinutes(calendar: WeeklyCalendar): number {
  let total = 0;
  for (const intervals of calendar.values()) for (const [start, end] of intervals) total += end - start;
  return total;
}

/**
 * London's clock changes are at least 28 days apart (16 March and 13 April 1947), so a stretch of
 * at most 27 days whose two ends have the same offset contains none. Blocks are whole weeks, so
 * each holds every weekday equally often.
 */
const STEADY_BLOCK_WEEKS = 3;

/**
 * Before summer time (first on 21 May 1916) London changed its offset once, from local mean time
 * to GMT on 1 December 1847. A stretch ending before this date whose ends have the same offset
 * therefore contains no change however long it is, so an ancient start is counted in a few long
 * blocks instead of thousands of three-week ones.
 */
const SUMMER_TIME_ERA = '1916-01-01';

/** London's UTC offset (ms) at midnight UTC `days` days after a `YYYY-MM-DD` date. */
function offsetAtUtcMidnight(date: string, days: number): number {
  // Straight from the offset, not through a formatted wall time: midnight UTC of 0000-01-01 is a
  // London wall time in year -1 (local mean time was behind UTC), which has no canonical form.
  return offsetMsAt(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS);
}

const daysFrom = (date: string, days: number): string =>
  new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY_MS).toISOString().slice(0, 10);

const daysBetween = (from: string, to: string): number =>
  Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS);

/**
 * Working time (real minutes) of a calendar between two instants, day by day in London wall
 * time, so a working day that contains a clock change is as long as it really is.
 *
 * Counting stops at `limitMinutes` (the result is then `limitMinutes`): callers that only need to
 * know whether a bound is reached pass it, so an ancient start does not walk millennia of days.
 * Whole weeks strictly inside the span are counted arithmetically when the calendar is clear of
 * clock changes, so the default office calendar costs the same for any span.
 */
export function workingMinutesBetween(
  calendar: WeeklyCalendar,
  fromMs: number,
  toMs: number,
  limitMinutes = Number.POSITIVE_INFINITY,
): number {
  if (!(toMs > fromMs)) return 0;
  const weekly = weeklyWallMinutes(calendar);
  if (weekly === 0) return 0;
  const limitMs = limitMinutes * 60_000;
  const dayMs = (date: string): number => {
    let ms = 0;
    for (const [start, end] of calendar.get(isoWeekday(date)) ?? []) {
      const from = Math.max(fromMs, wallInstant(date, start));
      const to = Math.min(toMs, wallInstant(date, end));
      if (to > from) ms += to - from;
    }
    return ms;
  };
  const firstDate = epochMsToLocal(fromMs).slice(0, 10);
  const lastDate = epochMsToLocal(toMs).slice(0, 10);
  let total = dayMs(firstDate);
  if (lastDate > firstDate) {
    total += dayMs(lastDate);
    let date = nextDate(firstDate);
    const fullWeeks = Math.floor(daysBetween(date, lastDate) / 7);
    if (fullWeeks > 0 && clearOfClockChanges(calendar)) {
      // Whole days strictly inside the span whose working intervals no clock change can touch.
      total += fullWeeks * weekly * 60_000;
      date = daysFrom(date, fullWeeks * 7);
    }
    while (date < lastDate && total < limitMs) {
      // A block of whole days with one offset throughout (checked a day beyond each end, which
      // brackets the London days whatever the offset) lasts exactly its wall-clock minutes. Before
      // summer time a block may run to the era's end; one that holds the 1847 change is halved
      // until it no longer does.
      const eraEnd = lastDate < SUMMER_TIME_ERA ? lastDate : SUMMER_TIME_ERA;
      let weeks = date < eraEnd ? Math.max(STEADY_BLOCK_WEEKS, Math.floor((daysBetween(date, eraEnd) - 1) / 7)) : STEADY_BLOCK_WEEKS;
      for (;;) {
        const blockEnd = daysFrom(date, weeks * 7);
        if (blockEnd <= lastDate && offsetAtUtcMidnight(date, -1) === offsetAtUtcMidnight(blockEnd, 1)) {
          total += weeks * weekly * 60_000;
          date = blockEnd;
          break;
        }
        if (weeks === STEADY_BLOCK_WEEKS) {
          total += dayMs(date);
          date = nextDate(date);
          break;
        }
        weeks = Math.max(STEADY_BLOCK_WEEKS, Math.floor(weeks / 2));
      }
    }
  }
  return Math.min(total, limitMs) / 60_000;
}
