import t from 'tap';
import { calendar, EVERY_DAY, minutes, OFFICE, WEEKDAYS } from '../helpers/calendars.js';
import { isoWeekday, nextDate, wallInstant, workingMinutesBetween, type WeeklyCalendar } from '../../lib/plan/calendar.js';
import { ELAPSED_MINUTES_LIMIT, elapsedPlannedMinutes, elapsedUntilChange } from '../../lib/plan/remaining.js';
import { epochMsToLocal, localToEpochMs } from '../../lib/time/london.js';

/**
 * workingMinutesBetween: real working minutes of a weekly London calendar between two instants
 * (contract 5, elapsed planned duration). Days are walked in London wall time, so a working day
 * containing a clock change is as long as it really is.
 */

const at = (local: string): number => localToEpochMs(local);



t.test('workingMinutesBetween: one working day, whole and in part', async (t) => {
  // Monday 16 November 2026.
  t.equal(workingMinutesBetween(OFFICE, at('2026-11-16T00:00:00'), at('2026-11-17T00:00:00')), 480, 'the whole day');
  t.equal(workingMinutesBetween(OFFICE, at('2026-11-16T09:00:00'), at('2026-11-16T10:00:00')), 60);
  t.equal(workingMinutesBetween(OFFICE, at('2026-11-16T08:00:00'), at('2026-11-16T09:30:00')), 30, 'before the day starts counts nothing');
  t.equal(workingMinutesBetween(OFFICE, at('2026-11-16T16:30:00'), at('2026-11-16T23:00:00')), 30, 'after it ends neither');
  t.equal(workingMinutesBetween(OFFICE, at('2026-11-16T09:00:30'), at('2026-11-16T10:00:00')), 59.5, 'seconds count');
  t.equal(workingMinutesBetween(OFFICE, at('2026-11-16T10:00:00'), at('2026-11-16T10:00:00')), 0, 'an empty span');
  t.equal(workingMinutesBetween(OFFICE, at('2026-11-16T12:00:00'), at('2026-11-16T10:00:00')), 0, 'a reversed span');
  // In summer time the day is the same 8 hours of wall time.
  t.equal(workingMinutesBetween(OFFICE, at('2026-07-01T00:00:00'), at('2026-07-02T00:00:00')), 480, 'a BST day');
  t.equal(workingMinutesBetween(OFFICE, Date.parse('2026-07-01T08:00:00Z'), Date.parse('2026-07-01T09:00:00Z')), 60,
    '08:00-09:00 UTC is 09:00-10:00 in London');
});

t.test('workingMinutesBetween: a weekend has no working time on the default calendar', async (t) => {
  t.equal(workingMinutesBetween(OFFICE, at('2026-11-14T00:00:00'), at('2026-11-16T00:00:00')), 0, 'Saturday and Sunday');
  t.equal(workingMinutesBetween(OFFICE, at('2026-11-13T12:00:00'), at('2026-11-16T10:00:00')), 300 + 60, 'Friday noon to Monday 10:00');
  t.equal(workingMinutesBetween(OFFICE, at('2026-11-13T09:00:00'), at('2026-11-20T17:00:00')), 6 * 480, 'six working days');
  t.equal(workingMinutesBetween(OFFICE, at('2026-10-23T16:00:00'), at('2026-10-26T09:30:00')), 90, 'a weekend with the autumn change');
  t.equal(workingMinutesBetween(OFFICE, at('2026-03-27T16:00:00'), at('2026-03-30T10:00:00')), 120, 'a weekend with the spring change');
});

t.test('workingMinutesBetween: a calendar with a lunch break counts only the working intervals', async (t) => {
  const lunch = calendar(WEEKDAYS, [['09:00', '12:30'], ['13:30', '17:00']]);
  t.equal(workingMinutesBetween(lunch, at('2026-11-16T00:00:00'), at('2026-11-17T00:00:00')), 420, 'the whole day');
  t.equal(workingMinutesBetween(lunch, at('2026-11-16T12:00:00'), at('2026-11-16T14:00:00')), 60, 'across lunch');
  t.equal(workingMinutesBetween(lunch, at('2026-11-16T12:40:00'), at('2026-11-16T13:20:00')), 0, 'inside lunch');
  const uneven = new Map([[1, [[minutes('09:00'), minutes('10:00')]] as const], [2, [[minutes('14:00'), minutes('15:30')]] as const]]);
  t.equal(workingMinutesBetween(uneven, at('2026-11-16T00:00:00'), at('2026-11-18T00:00:00')), 150, 'different days differ');
});

t.test('workingMinutesBetween: an interval may end at 24:00, the next midnight', async (t) => {
  const evening = calendar(EVERY_DAY, [['17:00', '24:00']]);
  t.equal(workingMinutesBetween(evening, at('2026-11-16T20:00:00'), at('2026-11-17T02:00:00')), 240, 'until midnight');
  t.equal(workingMinutesBetween(evening, at('2026-11-16T00:00:00'), at('2026-11-18T00:00:00')), 2 * 420);
  const allDay = calendar(EVERY_DAY, [['00:00', '24:00']]);
  t.equal(workingMinutesBetween(allDay, at('2026-11-16T00:00:00'), at('2026-11-18T00:00:00')), 2 * 1440, 'round the clock');
  t.equal(workingMinutesBetween(allDay, at('2026-11-16T23:30:00'), at('2026-11-17T00:30:00')), 60, 'across midnight');
});

t.test('workingMinutesBetween: round the clock, the spring clock-change day has 23 hours and the autumn one 25', async (t) => {
  const allDay = calendar(EVERY_DAY, [['00:00', '24:00']]);
  t.equal(workingMinutesBetween(allDay, at('2026-03-29T00:00:00'), at('2026-03-30T00:00:00')), 23 * 60, 'Sunday 29 March 2026');
  t.equal(workingMinutesBetween(allDay, at('2026-10-25T00:00:00'), at('2026-10-26T00:00:00')), 25 * 60, 'Sunday 25 October 2026');
  const sundays = calendar([7], [['00:00', '24:00']]);
  t.equal(workingMinutesBetween(sundays, at('2026-03-28T12:00:00'), at('2026-03-31T12:00:00')), 23 * 60, 'a wide window sees the same');
  t.equal(workingMinutesBetween(sundays, at('2026-10-24T12:00:00'), at('2026-10-27T12:00:00')), 25 * 60);
  t.equal(workingMinutesBetween(allDay, at('2026-03-28T00:00:00'), at('2026-04-01T00:00:00')), (4 * 24 - 1) * 60, 'four days, one short');
  // Shifts that contain the change: 01:00-03:00 is one real hour in spring and three in autumn.
  const night = calendar([7], [['01:00', '03:00']]);
  t.equal(workingMinutesBetween(night, at('2026-03-29T00:00:00'), at('2026-03-30T00:00:00')), 60, 'spring night shift');
  t.equal(workingMinutesBetween(night, at('2026-10-25T00:00:00'), at('2026-10-26T00:00:00')), 180, 'autumn night shift');
  t.equal(workingMinutesBetween(allDay, Date.parse('2026-10-25T00:30:00Z'), Date.parse('2026-10-25T01:30:00Z')), 60,
    'one real hour inside the repeated hour');
});

t.test('workingMinutesBetween: an interval boundary inside a spring gap is when the clocks went forward, in any year', async (t) => {
  const small = calendar([7], [['02:30', '04:00']]);
  // Since 1981 the gap is 01:00-02:00, so 02:30 exists.
  t.equal(workingMinutesBetween(small, at('2026-03-29T00:00:00'), at('2026-03-30T00:00:00')), 90);
  // In 1976 it was 02:00-03:00: the shift starts at 03:00 BST and lasts an hour.
  t.equal(workingMinutesBetween(small, at('1976-03-21T00:00:00'), at('1976-03-22T00:00:00')), 60, '21 March 1976');
  const inGap = calendar([7], [['01:30', '03:00']]);
  t.equal(workingMinutesBetween(inGap, at('2026-03-29T00:00:00'), at('2026-03-30T00:00:00')), 60, 'starts in the 2026 gap');
  t.equal(workingMinutesBetween(inGap, at('1976-03-21T00:00:00'), at('1976-03-22T00:00:00')), 30, '01:30-02:00 GMT, then the gap');
});

t.test('workingMinutesBetween: long spans are counted exactly, and counting stops at an optional limit', async (t) => {
  // Weekdays from Monday 1 January 1900 to Monday 16 November 2026, counted the slow way.
  let weekdays = 0;
  for (let day = Date.UTC(1900, 0, 1); day < Date.UTC(2026, 10, 16); day += 86_400_000) {
    const weekday = new Date(day).getUTCDay();
    if (weekday !== 0 && weekday !== 6) weekdays += 1;
  }
  t.equal(workingMinutesBetween(OFFICE, at('1900-01-01T00:00:00'), at('2026-11-16T10:00:00')), weekdays * 480 + 60);
  const night = calendar(EVERY_DAY, [['00:00', '24:00']]);
  t.equal(workingMinutesBetween(night, at('2020-01-01T00:00:00'), at('2026-01-01T00:00:00')), 2192 * 1440, 'six years round the clock (clock changes cancel out)');
  t.equal(workingMinutesBetween(night, at('0001-01-01T00:00:00'), at('2026-11-16T10:00:00'), 5000), 5000, 'stops at the limit');
  t.equal(workingMinutesBetween(OFFICE, at('2026-11-16T09:00:00'), at('2026-11-16T10:00:00'), 5000), 60, 'below the limit: exact');
  t.equal(elapsedPlannedMinutes(OFFICE, '0001-01-01T00:00:00', at('2026-11-16T10:00:00')), ELAPSED_MINUTES_LIMIT,
    'elapsed planned time beyond any estimate is settled at the limit');
  t.equal(elapsedPlannedMinutes(night, '0001-01-01T00:00:00', at('2026-11-16T10:00:00')), ELAPSED_MINUTES_LIMIT);
});

t.test('workingMinutesBetween: a start in year 0000 counts from there on a calendar that works at midnight', async (t) => {
  // Midnight UTC of 0000-01-01 was 31 December of year -1 on London's local mean time: it still counts.
  const sundays = calendar([7], [['00:00', '24:00']]);
  let count = 0;
  for (let day = Date.UTC(2000, 0, 1) - 730_485 * 86_400_000; day < Date.UTC(1900, 0, 1); day += 86_400_000) {
    if (new Date(day).getUTCDay() === 0) count += 1;
  }
  // No clock change before 1916 fell on a Sunday (1 December 1847 was a Wednesday).
  t.equal(workingMinutesBetween(sundays, at('0000-01-01T00:00:00'), at('1900-01-01T00:00:00')), count * 1440, 'Sundays of 1900 years');
  const sparse = calendar([1], [['00:00', '00:01']]);
  t.ok(workingMinutesBetween(sparse, at('0000-01-02T00:00:00'), at('2026-11-16T10:00:00')) > 100_000, 'a minute a week for 2,000 years');
});

t.test('workingMinutesBetween: long blocks before summer time give what short spans add up to, across 1847 and 1916', async (t) => {
  // Spans of 20 days are counted without long blocks: their sum is the reference.
  const chunked = (cal: ReturnType<typeof calendar>, from: string, to: string): number => {
    let total = 0;
    for (let start = at(from); start < at(to); start += 20 * 86_400_000) {
      total += workingMinutesBetween(cal, start, Math.min(start + 20 * 86_400_000, at(to)));
    }
    return total;
  };
  for (const [name, cal] of [
    ['Wednesdays 00:00-01:00 (the 1847 change fell on one)', calendar([3], [['00:00', '01:00']])],
    ['round the clock', calendar(EVERY_DAY, [['00:00', '24:00']])],
    ['nights 23:00-24:00 and 00:00-03:00', calendar(EVERY_DAY, [['00:00', '03:00'], ['23:00', '24:00']])],
  ] as const) {
    t.equal(workingMinutesBetween(cal, at('1840-01-01T00:00:00'), at('1856-01-01T00:00:00')),
      chunked(cal, '1840-01-01T00:00:00', '1856-01-01T00:00:00'), `1840-1856, ${name}`);
    t.equal(workingMinutesBetween(cal, at('1905-01-01T00:00:00'), at('1925-01-01T00:00:00')),
      chunked(cal, '1905-01-01T00:00:00', '1925-01-01T00:00:00'), `1905-1925, ${name}`);
  }
});

t.test('workingMinutesBetween: whole weeks and clock-change corrections give what a day-by-day count gives, from 1847 to 9999', async (t) => {
  // The reference walks every London day and clips each interval to the span: no weeks, no shortcuts.
  const dayByDay = (cal: WeeklyCalendar, fromMs: number, toMs: number): number => {
    let ms = 0;
    for (let date = epochMsToLocal(fromMs).slice(0, 10); date <= epochMsToLocal(toMs).slice(0, 10); date = nextDate(date)) {
      for (const [start, end] of cal.get(isoWeekday(date)) ?? []) {
        ms += Math.max(0, Math.min(toMs, wallInstant(date, end)) - Math.max(fromMs, wallInstant(date, start)));
      }
    }
    return ms / 60_000;
  };
  const calendars: [string, WeeklyCalendar][] = [
    ['nights 22:00-24:00 and 00:00-06:00 on weekdays', new Map([1, 2, 3, 4, 5].map((day) => [day, [[0, 360], [1320, 1440]] as const]))],
    ['round the clock', calendar(EVERY_DAY, [['00:00', '24:00']])],
    ['Sundays 01:00-03:00', calendar([7], [['01:00', '03:00']])],
    ['48 half-hour slots of 25 minutes', new Map(EVERY_DAY.map((day) => [day, Array.from({ length: 48 }, (_, slot) => [slot * 30, slot * 30 + 25] as const)]))],
    ['the office', OFFICE],
  ];
  let seed = 7;
  const random = (): number => (seed = (seed * 16_807) % 2_147_483_647) / 2_147_483_647;
  for (const [name, cal] of calendars) {
    for (const year of [1847, 1916, 1941, 1947, 1968, 1971, 1981, 2026, 2040, 9999]) {
      const fromMs = Date.UTC(year, 0, 1) + Math.floor(random() * 300 * 86_400_000);
      // Year 9999's spans end before its last day, whose 24:00 (year 10000) has no wall time of four digits.
      const toMs = Math.min(fromMs + Math.floor(random() * 400 * 86_400_000), Date.UTC(9999, 11, 30, 12));
      t.equal(workingMinutesBetween(cal, fromMs, toMs), dayByDay(cal, fromMs, toMs),
        `${name}, ${new Date(fromMs).toISOString()} to ${new Date(toMs).toISOString()}`);
    }
  }
});

t.test('elapsedUntilChange: elapsed time holds until the next whole working minute can be reached, at real speed unless intervals overlap', async (t) => {
  const lunch = calendar(WEEKDAYS, [['09:00', '12:30'], ['13:30', '17:00']]);
  const slots = new Map(WEEKDAYS.map((day) => [day, Array.from({ length: 48 }, (_, slot) => [slot * 30, slot * 30 + 25] as const)]));
  for (const [name, cal] of [['a lunch break', lunch], ['48 slots a day', slots]] as const) {
    const elapsed = elapsedUntilChange(cal, '2026-11-16T09:00:00', at('2026-11-16T09:00:30'));
    t.equal(elapsed.minutesPerMinute, 1, `${name}: working time grows at most as fast as real time`);
    t.equal(elapsed.until, at('2026-11-16T09:01:00'), `${name}: the answer holds until 09:01`);
  }
  // Intervals written with SQL may overlap; each counts, so the answer changes twice as fast.
  const overlapping = new Map([[1, [[540, 720], [600, 660]] as const]]);
  const doubled = elapsedUntilChange(overlapping, '2026-11-16T09:00:00', at('2026-11-16T10:00:00'));
  t.equal(doubled.minutes, 60);
  t.equal(doubled.minutesPerMinute, 2);
  t.equal(doubled.until, at('2026-11-16T10:00:30'), 'the 61st minute comes in half a minute');
});

t.test('elapsedPlannedMinutes: whole working minutes since startedAt, 0 when not started', async (t) => {
  t.equal(elapsedPlannedMinutes(OFFICE, null, at('2026-11-16T10:00:00')), 0);
  t.equal(elapsedPlannedMinutes(OFFICE, '2026-11-16T09:00:00', at('2026-11-16T10:00:00')), 60);
  t.equal(elapsedPlannedMinutes(OFFICE, '2026-11-16T09:00:30', at('2026-11-16T10:00:00')), 59, 'rounded down');
  t.equal(elapsedPlannedMinutes(OFFICE, '2026-11-16T11:00:00', at('2026-11-16T10:00:00')), 0, 'a start after now');
  t.equal(elapsedPlannedMinutes(new Map(), '2026-11-02T09:00:00', at('2026-11-16T10:00:00')), 0, 'no working time at all');
  t.equal(elapsedPlannedMinutes(calendar(EVERY_DAY, [['00:00', '24:00']]), '2026-10-25T01:30:00', Date.parse('2026-10-25T02:00:00Z')), 90,
    'an ambiguous start counts from its first occurrence');
});
