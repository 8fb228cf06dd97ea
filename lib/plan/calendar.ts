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
 * London's clock changes are always more than 27 days apart (the closest: 16 March 02:00Z and
 * 13 April 01:00Z 1947): a stretch of 21 days holds at most one, and holds one exactly when its
 * two ends have different offsets.
 */
const CHANGE_SCAN_DAYS = 21;

/**
 * Before summer time (first on 21 May 1916) London changed its offset once, from local mean time
 * to GMT on 1 December 1847: any stretch before this date holds at most one change.
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
 * The UTC date on which the offset changes between midnight UTC `lo` and `hi` days after `date`,
 * when it does (once at most: the caller knows).
 */
function changeBetween(date: string, lo: number, hi: number): string | null {
  const before = offsetAtUtcMidnight(date, lo);
  if (before === offsetAtUtcMidnight(date, hi)) return null;
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (offsetAtUtcMidnight(date, mid) === before) lo = mid;
    else hi = mid;
  }
  return daysFrom(date, lo);
}

/** A change's UTC date and the dates either side: the London dates its instant may fall on. */
const around = (change: string): string[] => [daysFrom(change, -1), change, daysFrom(change, 1)];

/** The dates around London's one change of offset before summer time (see SUMMER_TIME_ERA). */
let aroundEraChange: readonly string[] | undefined;

function aroundChangesBeforeSummerTime(): readonly string[] {
  if (aroundEraChange === undefined) {
    // Year 0000 is as far back as a local-date-time reaches.
    const change = changeBetween('0000-01-01', 0, daysBetween('0000-01-01', SUMMER_TIME_ERA));
    aroundEraChange = change === null ? [] : around(change);
  }
  return aroundEraChange;
}

/** Per year from 1916, the dates around London's changes of offset in it: found once per process. */
const aroundChangesByYear = new Map<number, readonly string[]>();

function aroundChangesInYear(year: number): readonly string[] {
  const known = aroundChangesByYear.get(year);
  if (known !== undefined) return known;
  const first = `${String(year).padStart(4, '0')}-01-01`;
  // Counted, not parsed: year 9999's next new year has no YYYY-MM-DD form.
  const days = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 366 : 365;
  const dates: string[] = [];
  for (let day = 0; day < days; day += CHANGE_SCAN_DAYS) {
    const change = changeBetween(first, day, Math.min(day + CHANGE_SCAN_DAYS, days));
    if (change !== null) dates.push(...around(change));
  }
  aroundChangesByYear.set(year, dates);
  return dates;
}

/**
 * The London dates in [from, to) on which a calendar may work other than its wall-clock minutes:
 * those around a change of offset. On every other day an interval lasts exactly its wall minutes.
 */
export function daysNearChanges(from: string, to: string): Set<string> {
  // The day after 9999-12-31 is written with an expanded year ("+010000-01-01"): past every date.
  const end = /^\d{4}-/.test(to) ? to : '9999-12-32';
  const days = new Set<string>();
  const add = (dates: readonly string[]) => {
    for (const date of dates) if (date >= from && date < end) days.add(date);
  };
  if (from < SUMMER_TIME_ERA) add(aroundChangesBeforeSummerTime());
  // A year's dates may spill a day into the next or the previous one.
  const lastYear = Number(end.slice(0, 4));
  for (let year = Math.max(1916, Number(from.slice(0, 4)) - 1); year <= lastYear; year += 1) add(aroundChangesInYear(year));
  return days;
}

function wallMinutesOfDay(calendar: WeeklyCalendar, weekday: number): number {
  let total = 0;
  for (const [start, end] of calendar.get(weekday) ?? []) total += end - start;
  return total;
}

/** Per calendar, how much a date's working time differs from its wall minutes (a clock change). */
const changeCorrections = new WeakMap<WeeklyCalendar, Map<string, number>>();

function changeCorrection(calendar: WeeklyCalendar, date: string): number {
  let corrections = changeCorrections.get(calendar);
  if (corrections === undefined) {
    corrections = new Map();
    changeCorrections.set(calendar, corrections);
  }
  let correction = corrections.get(date);
  if (correction === undefined) {
    const weekday = isoWeekday(date);
    correction = -wallMinutesOfDay(calendar, weekday) * 60_000;
    for (const [start, end] of calendar.get(weekday) ?? []) correction += wallInstant(date, end) - wallInstant(date, start);
    corrections.set(date, correction);
  }
  return correction;
}

/** The wall-clock minutes (in ms) of the whole London days [from, to), whole weeks at once. */
function wholeDaysWallMs(calendar: WeeklyCalendar, weekly: number, from: string, to: string): number {
  const days = daysBetween(from, to);
  let ms = Math.floor(days / 7) * weekly * 60_000;
  let weekday = isoWeekday(from);
  for (let extra = 0; extra < days % 7; extra += 1) {
    ms += wallMinutesOfDay(calendar, weekday) * 60_000;
    weekday = weekday === 7 ? 1 : weekday + 1;
  }
  return ms;
}

/** What clock changes add to or take from the wall minutes of the whole London days [from, to). */
function clockChangeMs(calendar: WeeklyCalendar, from: string, to: string): number {
  if (clearOfClockChanges(calendar)) return 0;
  let ms = 0;
  for (const date of daysNearChanges(from, to)) ms += changeCorrection(calendar, date);
  return ms;
}

/**
 * The most clock changes can take from a span's working time: an hour a change, and London never
 * changed more than four times a year (double summer time, 1941-1945 and 1947).
 */
const yearsMaxLossMs = (from: string, to: string): number => (Number(to.slice(0, 4)) - Number(from.slice(0, 4)) + 1) * 4 * 3_600_000;

/**
 * Working time (real minutes) of a calendar between two instants in London wall time, so a
 * working day that contains a clock change is as long as it really is: the first and last days
 * interval by interval, the days between by their wall minutes (whole weeks at once), corrected
 * on the few days around each clock change. The cost follows the span's years since 1916, not
 * its days, so a night shift started years ago costs about what one started last week does.
 *
 * The result is at most `limitMinutes`; a span whose wall minutes reach it even after the most
 * clock changes could take is answered without looking for them.
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
    const inner = nextDate(firstDate);
    if (inner < lastDate) {
      total += wholeDaysWallMs(calendar, weekly, inner, lastDate);
      // Past the limit whatever the clock changes took: they need not be looked for.
      if (total - yearsMaxLossMs(inner, lastDate) >= limitMs) return limitMinutes;
      total += clockChangeMs(calendar, inner, lastDate);
    }
  }
  return Math.min(total, limitMs) / 60_000;
}
