import t from 'tap';
import { calendar, EVERY_DAY, minutes, OFFICE, WEEKDAYS } from '../helpers/calendars.js';
import { isoWeekday, nextDate, wallInstant, type WeeklyCalendar } from '../../lib/plan/calendar.js';
import { HORIZON_DAYS, planResource, workingTimeline, type PlanItem, type ResourcePlan } from '../../lib/plan/engine.js';
import { epochMsToLocal, localToEpochMs } from '../../lib/time/london.js';

/**
 * The pure scheduler (contract 5): a resource's working time from now to the 365-day horizon in
 * Europe/London wall time, accepted Incoming work placed first, then tasks in offer order into
 * the earliest free working time at or after their notBefore. Every "now" is injected.
 */

const at = (local: string): number => localToEpochMs(local);
const local = (instant: number): string => epochMsToLocal(instant);
const DAY_MS = 86_400_000;


const LUNCH = calendar(WEEKDAYS, [['09:00', '12:30'], ['13:30', '17:00']]);
/** Monday 16 November 2026, 10:00 GMT. */
const MONDAY_10 = at('2026-11-16T10:00:00');

/** Free segments as `[start, end, real minutes]` in London wall time. */
function timeline(cal: WeeklyCalendar, from: string, to: string): [string, string, number][] {
  return workingTimeline(cal, at(from), at(to)).map((segment) => [local(segment.start), local(segment.end), (segment.end - segment.start) / 60_000]);
}

const task = (id: number, minutesOfWork: number, notBefore = 0): PlanItem => ({ id, minutes: minutesOfWork, notBefore });

/** Each placement as `[start, finish]` wall times (plus `incomplete` when the horizon cut it). */
function placed(plan: ResourcePlan): Record<number, string[]> {
  const result: Record<number, string[]> = {};
  for (const [id, placement] of plan.placements) {
    result[id] = [local(placement.start), local(placement.finish), ...(placement.complete ? [] : ['incomplete'])];
  }
  return result;
}

function plan(tasks: PlanItem[], options: { now?: number; cal?: WeeklyCalendar; reservations?: PlanItem[]; horizonDays?: number } = {}): ResourcePlan {
  return planResource({
    now: options.now ?? MONDAY_10,
    calendar: options.cal ?? OFFICE,
    reservations: options.reservations ?? [],
    tasks,
    ...(options.horizonDays === undefined ? {} : { horizonDays: options.horizonDays }),
  });
}

t.test('PLAN: a 09:00-17:00 working day lasts 8 hours on every clock-change day of 2026 and 2027', async (t) => {
  const daily = calendar(EVERY_DAY, [['09:00', '17:00']]);
  for (const day of ['2026-03-29', '2026-10-25', '2027-03-28', '2027-10-31']) {
    t.strictSame(timeline(daily, `${day}T00:00:00`, `${day}T23:00:00`), [[`${day}T09:00:00`, `${day}T17:00:00`, 480]], `Sunday ${day}`);
  }
  // The working days either side of each change keep their wall-clock hours, in GMT and in BST.
  t.strictSame(timeline(OFFICE, '2026-03-27T00:00:00', '2026-03-31T00:00:00'), [
    ['2026-03-27T09:00:00', '2026-03-27T17:00:00', 480],
    ['2026-03-30T09:00:00', '2026-03-30T17:00:00', 480],
  ], 'the weekend of the 2026 spring change');
  t.strictSame(timeline(OFFICE, '2027-10-29T00:00:00', '2027-11-02T00:00:00'), [
    ['2027-10-29T09:00:00', '2027-10-29T17:00:00', 480],
    ['2027-11-01T09:00:00', '2027-11-01T17:00:00', 480],
  ], 'the weekend of the 2027 autumn change');
  t.equal(workingTimeline(OFFICE, at('2026-03-30T09:00:00'), at('2026-03-30T17:00:00'))[0]?.start, Date.parse('2026-03-30T08:00:00Z'),
    '09:00 BST is 08:00 UTC');
});

t.test('PLAN: an overnight calendar covers 23 hours on the spring-change Sunday and 25 on the autumn one', async (t) => {
  const sundays = calendar([7], [['00:00', '24:00']]);
  t.strictSame(timeline(sundays, '2026-03-28T12:00:00', '2026-03-30T12:00:00'), [['2026-03-29T00:00:00', '2026-03-30T00:00:00', 23 * 60]], 'spring 2026');
  t.strictSame(timeline(sundays, '2026-10-24T12:00:00', '2026-10-26T12:00:00'), [['2026-10-25T00:00:00', '2026-10-26T00:00:00', 25 * 60]], 'autumn 2026');
  t.strictSame(timeline(sundays, '2027-03-27T12:00:00', '2027-03-29T12:00:00'), [['2027-03-28T00:00:00', '2027-03-29T00:00:00', 23 * 60]], 'spring 2027');
  t.strictSame(timeline(sundays, '2027-10-30T12:00:00', '2027-11-01T12:00:00'), [['2027-10-31T00:00:00', '2027-11-01T00:00:00', 25 * 60]], 'autumn 2027');

  // A night shift from Saturday 22:00 to Sunday 06:00 is one run of work over midnight.
  const nights = new Map([[6, [[minutes('22:00'), 1440]] as const], [7, [[0, minutes('06:00')]] as const]]);
  t.strictSame(timeline(nights, '2026-03-28T00:00:00', '2026-03-30T00:00:00'), [['2026-03-28T22:00:00', '2026-03-29T06:00:00', 7 * 60]], 'spring 2026 night');
  t.strictSame(timeline(nights, '2027-10-30T00:00:00', '2027-11-01T00:00:00'), [['2027-10-30T22:00:00', '2027-10-31T06:00:00', 9 * 60]], 'autumn 2027 night');

  // A shift that starts inside the spring gap starts when the clocks have gone forward.
  const early = calendar([7], [['01:30', '04:00']]);
  t.strictSame(timeline(early, '2027-03-28T00:00:00', '2027-03-29T00:00:00'), [['2027-03-28T02:00:00', '2027-03-28T04:00:00', 120]]);

  // Work planned round the clock over the autumn change gets its 25 hours of that Sunday.
  const allDay = calendar(EVERY_DAY, [['00:00', '24:00']]);
  const sunday = plan([task(1, 25 * 60), task(2, 60)], { now: at('2026-10-25T00:00:00'), cal: allDay });
  t.strictSame(placed(sunday), { 1: ['2026-10-25T00:00:00', '2026-10-26T00:00:00'], 2: ['2026-10-26T00:00:00', '2026-10-26T01:00:00'] });
});

t.test('PLAN: a year\'s timeline is every interval\'s wall times resolved one by one, clock-change days included, on any calendar', async (t) => {
  // The reference resolves each interval of each London day through wallInstant and merges what touches.
  const reference = (cal: WeeklyCalendar, from: number, to: number): [number, number][] => {
    const pieces: [number, number][] = [];
    for (let date = local(from).slice(0, 10); date <= local(to).slice(0, 10); date = nextDate(date)) {
      for (const [startMinute, endMinute] of [...(cal.get(isoWeekday(date)) ?? [])].sort((a, b) => a[0] - b[0])) {
        const start = Math.max(from, wallInstant(date, startMinute));
        const end = Math.min(to, wallInstant(date, endMinute));
        if (end <= start) continue;
        const last = pieces[pieces.length - 1];
        if (last !== undefined && last[1] >= start) last[1] = Math.max(last[1], end);
        else pieces.push([start, end]);
      }
    }
    return pieces;
  };
  for (const [name, cal] of [
    ['the office', OFFICE],
    ['nights 22:00-24:00 and 00:00-06:00', calendar(EVERY_DAY, [['00:00', '06:00'], ['22:00', '24:00']])],
    ['01:30-02:30 (inside both clock changes)', calendar(EVERY_DAY, [['01:30', '02:30']])],
    ['48 slots of 25 minutes', new Map(EVERY_DAY.map((day) => [day, Array.from({ length: 48 }, (_, slot) => [slot * 30, slot * 30 + 25] as const)]))],
  ] as const) {
    for (const start of ['2026-01-05T10:00:00', '1947-03-01T00:00:00', '1970-06-01T12:00:00']) {
      const from = at(start);
      t.strictSame(workingTimeline(cal, from, from + 365 * DAY_MS).map((segment) => [segment.start, segment.end]),
        reference(cal, from, from + 365 * DAY_MS), `${name}, a year from ${start}`);
    }
  }
});

t.test('PLAN: the timeline starts now and follows the calendar: weekends, lunch breaks, a day under way', async (t) => {
  t.strictSame(timeline(LUNCH, '2026-11-20T10:00:00', '2026-11-24T00:00:00'), [
    ['2026-11-20T10:00:00', '2026-11-20T12:30:00', 150],
    ['2026-11-20T13:30:00', '2026-11-20T17:00:00', 210],
    ['2026-11-23T09:00:00', '2026-11-23T12:30:00', 210],
    ['2026-11-23T13:30:00', '2026-11-23T17:00:00', 210],
  ], 'Friday from 10:00, then Monday');
  t.strictSame(timeline(OFFICE, '2026-11-21T10:00:00', '2026-11-23T00:00:00'), [], 'a weekend has no working time');
  t.strictSame(timeline(new Map(), '2026-11-16T00:00:00', '2026-12-16T00:00:00'), [], 'no calendar, no working time');
  const touching = calendar([1], [['09:00', '12:00'], ['12:00', '13:00']]);
  t.strictSame(timeline(touching, '2026-11-16T00:00:00', '2026-11-17T00:00:00'), [['2026-11-16T09:00:00', '2026-11-16T13:00:00', 240]], 'touching intervals merge');
  const unordered = calendar([1], [['13:30', '17:00'], ['09:00', '12:30']]);
  t.strictSame(timeline(unordered, '2026-11-16T00:00:00', '2026-11-17T00:00:00'), timeline(LUNCH, '2026-11-16T00:00:00', '2026-11-17T00:00:00'),
    "a day's intervals may come in any order");
});

t.test('PLAN: tasks are placed in offer order, each into the earliest free working time', async (t) => {
  t.strictSame(placed(plan([task(1, 120), task(2, 60), task(3, 30)])), {
    1: ['2026-11-16T10:00:00', '2026-11-16T12:00:00'],
    2: ['2026-11-16T12:00:00', '2026-11-16T13:00:00'],
    3: ['2026-11-16T13:00:00', '2026-11-16T13:30:00'],
  });
  t.strictSame(placed(plan([task(3, 30), task(2, 60), task(1, 120)])), {
    3: ['2026-11-16T10:00:00', '2026-11-16T10:30:00'],
    2: ['2026-11-16T10:30:00', '2026-11-16T11:30:00'],
    1: ['2026-11-16T11:30:00', '2026-11-16T13:30:00'],
  }, 'the order given is the order of placement');
  t.strictSame(placed(plan([task(1, 60)], { now: at('2026-11-16T07:15:00') })), { 1: ['2026-11-16T09:00:00', '2026-11-16T10:00:00'] },
    'before the working day: from its start');
});

t.test('PLAN: work longer than the free time left in a day is split across days and weekends', async (t) => {
  t.strictSame(placed(plan([task(1, 600)])), { 1: ['2026-11-16T10:00:00', '2026-11-17T12:00:00'] }, '7 hours Monday, 3 Tuesday');
  t.strictSame(placed(plan([task(1, 240)], { now: at('2026-11-20T15:00:00') })), { 1: ['2026-11-20T15:00:00', '2026-11-23T11:00:00'] },
    'Friday afternoon, then Monday morning');
  t.strictSame(placed(plan([task(1, 120)], { now: at('2026-03-27T16:00:00') })), { 1: ['2026-03-27T16:00:00', '2026-03-30T10:00:00'] },
    'over the 2026 spring change: an hour in GMT, an hour in BST');
  t.strictSame(placed(plan([task(1, 90)], { now: at('2027-10-29T16:30:00') })), { 1: ['2027-10-29T16:30:00', '2027-11-01T10:00:00'] },
    'over the 2027 autumn change');
});

t.test('PLAN: a later task fills a gap left before a task that may not start yet, and is split around planned work', async (t) => {
  const tasks = [task(1, 60, at('2026-11-17T09:00:00')), task(2, 120), task(3, 480)];
  t.strictSame(placed(plan(tasks)), {
    1: ['2026-11-17T09:00:00', '2026-11-17T10:00:00'],
    2: ['2026-11-16T10:00:00', '2026-11-16T12:00:00'],
    3: ['2026-11-16T12:00:00', '2026-11-17T13:00:00'],
  }, 'task 3: Monday 12:00-17:00, then Tuesday 10:00-13:00 around task 1');
});

t.test('PLAN: lunch-break calendars put no work into the break', async (t) => {
  t.strictSame(placed(plan([task(1, 240), task(2, 180)], { cal: LUNCH })), {
    1: ['2026-11-16T10:00:00', '2026-11-16T15:00:00'],
    2: ['2026-11-16T15:00:00', '2026-11-17T10:00:00'],
  }, '10:00-12:30 and 13:30-15:00, then 15:00-17:00 and 09:00-10:00');
  t.strictSame(placed(plan([task(1, 30)], { cal: LUNCH, now: at('2026-11-16T12:45:00') })), { 1: ['2026-11-16T13:30:00', '2026-11-16T14:00:00'] },
    'a start during lunch waits for the afternoon');
});

t.test('PLAN: a task is placed no earlier than its earliestStart and releaseDate (its notBefore)', async (t) => {
  t.strictSame(placed(plan([task(1, 60, at('2026-11-23T09:00:00'))])), { 1: ['2026-11-23T09:00:00', '2026-11-23T10:00:00'] }, 'next Monday');
  t.strictSame(placed(plan([task(1, 60, at('2026-11-21T12:00:00'))])), { 1: ['2026-11-23T09:00:00', '2026-11-23T10:00:00'] },
    'a Saturday notBefore waits for the next working time');
  t.strictSame(placed(plan([task(1, 60, at('2026-11-18T16:30:00'))])), { 1: ['2026-11-18T16:30:00', '2026-11-19T09:30:00'] },
    'late in a day: split over the night');
  t.strictSame(placed(plan([task(1, 60, at('2026-11-02T09:00:00'))])), { 1: ['2026-11-16T10:00:00', '2026-11-16T11:00:00'] }, 'a past one: from now');
});

t.test('PLAN: accepted Incoming work takes capacity before tasks', async (t) => {
  t.strictSame(placed(plan([task(1, 60)], { reservations: [task(100, 120)] })), { 1: ['2026-11-16T12:00:00', '2026-11-16T13:00:00'] },
    'a reservation from now comes first, whatever the task order');
  t.strictSame(placed(plan([task(1, 480)], { reservations: [task(100, 480, at('2026-11-17T09:00:00'))] })), {
    1: ['2026-11-16T10:00:00', '2026-11-18T10:00:00'],
  }, 'a reservation of all Tuesday: the task runs Monday, then Wednesday');
  t.notOk(plan([task(1, 60)], { reservations: [task(100, 1_000_000)] }).placements.has(1), 'a reservation filling the horizon leaves nothing');
  t.notOk(plan([], { reservations: [task(100, 60)] }).placements.has(100), 'reservations are not task placements');
});

t.test('PLAN: the horizon is 365 days; work that gets no working time within it is not allocated', async (t) => {
  const horizon = plan([task(1, 1_000_000), task(2, 30)]);
  t.equal(horizon.horizonDays, 365);
  t.equal(horizon.horizonEnd, MONDAY_10 + HORIZON_DAYS * DAY_MS, 'the horizon ends 365 days from now');
  t.strictSame(placed(horizon), { 1: ['2026-11-16T10:00:00', '2027-11-16T10:00:00', 'incomplete'] },
    'the huge task gets working time up to the horizon (Tuesday 16 November 2027, 10:00); the one behind it none');
  t.strictSame(Object.keys(placed(plan([task(1, 30, at('2027-11-17T09:00:00'))]))), [], 'a notBefore beyond the horizon');
  t.strictSame(placed(plan([task(1, 30, at('2027-11-16T09:50:00'))])), { 1: ['2027-11-16T09:50:00', '2027-11-16T10:00:00', 'incomplete'] },
    'working time just inside the horizon is an allocation, even when the work does not finish');
  t.strictSame(Object.keys(placed(plan([task(1, 30)], { horizonDays: 2, now: at('2026-11-20T17:00:00') }))), [], 'a shorter horizon with no working time in it');
  t.strictSame(Object.keys(placed(plan([task(1, 30)], { horizonDays: 3, now: at('2026-11-20T17:00:00') }))), ['1'], 'one that reaches Monday');
});

t.test('PLAN: a resource with no working time gets no allocation and no suggestion', async (t) => {
  const idle = plan([task(1, 30), task(2, 1)], { cal: new Map() });
  t.equal(idle.placements.size, 0);
  t.equal(idle.suggest(1), null);
});

t.test('PLAN: zero-minute work takes no capacity and gets no placement', async (t) => {
  t.strictSame(placed(plan([task(1, 0), task(2, 60)], { reservations: [task(100, 0)] })), { 2: ['2026-11-16T10:00:00', '2026-11-16T11:00:00'] });
});
