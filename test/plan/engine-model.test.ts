import fc from 'fast-check';
import t from 'tap';
import type { WeeklyCalendar } from '../../lib/plan/calendar.js';
import { planResource, workingTimeline, type Placement, type PlanItem } from '../../lib/plan/engine.js';
import { localToEpochMs } from '../../lib/time/london.js';
import type { TapTest } from '../helpers/api.js';

/**
 * The scheduler against a model of it, written another way: free working time as a list of
 * intervals and planned work as another, with none of the engine's segment bookkeeping. Work
 * takes free time in order from its notBefore; a suggestion is the start of the first run of free
 * time long enough with no planned work in between (time off the calendar does not break a run).
 * The engine (which merges planned work into shared segments, so a task skips past all of it in
 * one step) must place every task, and suggest every start, exactly as the model does.
 */

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

type Interval = readonly [start: number, end: number];

class Model {
  free: Interval[];
  readonly planned: Interval[] = [];

  constructor(free: Interval[]) {
    this.free = free;
  }

  place(notBefore: number, minutes: number): Placement | null {
    let needed = minutes * MINUTE_MS;
    const taken: Interval[] = [];
    const left: Interval[] = [];
    for (const [start, end] of this.free) {
      const from = Math.max(start, notBefore);
      if (needed === 0 || end <= from) {
        left.push([start, end]);
        continue;
      }
      const to = Math.min(end, from + needed);
      taken.push([from, to]);
      needed -= to - from;
      left.push(...([[start, from], [to, end]] as Interval[]).filter(([a, b]) => b > a));
    }
    this.free = left;
    this.planned.push(...taken);
    const first = taken[0];
    const last = taken[taken.length - 1];
    return first === undefined || last === undefined ? null : { start: first[0], finish: last[1], complete: needed === 0 };
  }

  suggest(minutes: number, notBefore: number): number | null {
    const pieces = this.free.filter(([, end]) => end > notBefore).map(([start, end]): Interval => [Math.max(start, notBefore), end]);
    const plannedBetween = (after: number, before: number) => this.planned.some(([start, end]) => start >= after && end <= before);
    let run: { start: number; length: number } | null = null;
    let previousEnd = notBefore;
    for (const [start, end] of pieces) {
      run = run === null || plannedBetween(previousEnd, start) ? { start, length: 0 } : run;
      run.length += end - start;
      previousEnd = end;
      if (run.length >= minutes * MINUTE_MS) return run.start;
    }
    return null;
  }
}

interface Case {
  readonly calendar: WeeklyCalendar;
  readonly now: number;
  readonly horizonDays: number;
  readonly reservations: PlanItem[];
  readonly tasks: PlanItem[];
  readonly questions: { minutes: number; notBefore: number }[];
}

const NOW = localToEpochMs('2026-11-16T10:00:00');

const calendarArb: fc.Arbitrary<WeeklyCalendar> = fc
  .array(
    fc.tuple(
      fc.integer({ min: 1, max: 7 }),
      fc.array(fc.tuple(fc.integer({ min: 0, max: 1439 }), fc.integer({ min: 1, max: 600 })), { minLength: 1, maxLength: 4 }),
    ),
    { maxLength: 7 },
  )
  .map((days) => new Map(days.map(([weekday, intervals]) => [weekday, intervals.map(([start, length]) => [start, Math.min(1440, start + length)] as const)])));

/** An instant from a little before now to past the horizon, at any millisecond. */
/**
 * An instant from a little before now to past the horizon: at any millisecond, or on a quarter
 * hour, where work placed earlier often ends and later work often starts.
 */
const instantArb = (horizonDays: number) => fc.oneof(
  fc.integer({ min: -DAY_MS, max: (horizonDays + 1) * DAY_MS }),
  fc.integer({ min: -4, max: (horizonDays + 1) * 96 }).map((quarter) => quarter * 15 * MINUTE_MS),
).map((offset) => NOW + offset);

const caseArb: fc.Arbitrary<Case> = fc.integer({ min: 1, max: 10 }).chain((horizonDays) => {
  const item = fc.record({
    minutes: fc.oneof(fc.integer({ min: 0, max: 90 }), fc.integer({ min: 0, max: 5000 })),
    notBefore: fc.oneof(fc.constant(0), instantArb(horizonDays)),
  });
  return fc.record({
    calendar: calendarArb,
    now: fc.integer({ min: 0, max: 7 * DAY_MS }).map((offset) => NOW + offset),
    horizonDays: fc.constant(horizonDays),
    reservations: fc.array(item, { maxLength: 4 }).map((items) => items.map((entry, index) => ({ id: 1000 + index, ...entry }))),
    tasks: fc.array(item, { maxLength: 60 }).map((items) => items.map((entry, index) => ({ id: index + 1, ...entry }))),
    questions: fc.array(fc.record({ minutes: fc.integer({ min: 1, max: 600 }), notBefore: instantArb(horizonDays) }), { maxLength: 12 }),
  });
});

function model(input: Case) {
  const horizonEnd = input.now + input.horizonDays * DAY_MS;
  const world = new Model(workingTimeline(input.calendar, input.now, horizonEnd).map(({ start, end }): Interval => [start, end]));
  for (const reservation of input.reservations) {
    if (reservation.minutes > 0) world.place(Math.max(input.now, reservation.notBefore), reservation.minutes);
  }
  const placements = new Map<number, Placement>();
  for (const task of input.tasks) {
    const placement = task.minutes > 0 ? world.place(Math.max(input.now, task.notBefore), task.minutes) : null;
    if (placement !== null) placements.set(task.id, placement);
  }
  const suggestions = input.questions.map((question) => world.suggest(question.minutes, Math.max(input.now, question.notBefore)));
  return { placements: [...placements], suggestions };
}

/** The engine's placements and suggestions for a case, as the model gives them. */
function engine(input: Case) {
  const plan = planResource(input);
  return { placements: [...plan.placements], suggestions: input.questions.map((question) => plan.suggest(question.minutes, question.notBefore)) };
}

/** Checks the engine against the model on `numRuns` cases drawn from `cases`. */
function agreesWithModel(t: TapTest, cases: fc.Arbitrary<Case>, numRuns: number, seed: number): void {
  fc.assert(
    fc.property(cases, (input) => {
      t.strictSame(engine(input), model(input));
      return true;
    }),
    { numRuns, seed },
  );
}

t.test('PLAN: the engine places every task and suggests every start exactly as the interval model does', async (t) => {
  agreesWithModel(t, caseArb, 600, 20261122);
});

/**
 * Many short working intervals a day over a few days, and hundreds of tasks: the engine keeps its
 * timeline in buckets of segments, and these cases fill buckets past their limit (so they are
 * halved) and place work across their edges, which the small cases above never reach.
 */
const denseCaseArb: fc.Arbitrary<Case> = fc.integer({ min: 3, max: 6 }).chain((horizonDays) => {
  // Mostly short work from scattered instants, which splits free segments; now and then a long
  // task, which fills many of them, across bucket edges.
  const item = fc.record({
    minutes: fc.oneof({ arbitrary: fc.integer({ min: 1, max: 3 }), weight: 39 }, { arbitrary: fc.integer({ min: 1, max: 600 }), weight: 1 }),
    notBefore: fc.oneof(
      { arbitrary: fc.constant(0), weight: 1 },
      { arbitrary: instantArb(horizonDays), weight: 1 },
      // Spread evenly over the horizon (fast-check otherwise favours the ends of a range).
      { arbitrary: fc.noBias(fc.integer({ min: 0, max: horizonDays * DAY_MS })).map((offset) => NOW + offset), weight: 3 },
    ),
  });
  return fc.record({
    calendar: fc.integer({ min: 24, max: 48 }).map((slots): WeeklyCalendar => {
      const period = Math.floor(1440 / slots);
      return new Map([1, 2, 3, 4, 5, 6, 7].map((weekday) => [weekday, Array.from({ length: slots }, (_, slot) => [slot * period, slot * period + period - 5] as const)]));
    }),
    now: fc.constant(NOW),
    horizonDays: fc.constant(horizonDays),
    reservations: fc.array(item, { maxLength: 4 }).map((items) => items.map((entry, index) => ({ id: 1000 + index, ...entry }))),
    tasks: fc.array(item, { minLength: 300, maxLength: 600 }).map((items) => items.map((entry, index) => ({ id: index + 1, ...entry }))),
    questions: fc.array(fc.record({ minutes: fc.integer({ min: 1, max: 600 }), notBefore: instantArb(horizonDays) }), { maxLength: 4 }),
  });
});

t.test('PLAN: with hundreds of tasks on calendars of many short intervals, the engine still places and suggests exactly as the model does', async (t) => {
  agreesWithModel(t, denseCaseArb, 40, 20261123);
});

t.test('PLAN: a full day of back-to-back tasks after a task that may not start yet is placed as the model places it', async (t) => {
  // The case the merging exists for, checked by hand too: 500 five-minute tasks from now, one
  // pinned to next week, then more from now: later ones must skip the merged run of planned work.
  const office: WeeklyCalendar = new Map([1, 2, 3, 4, 5].map((weekday) => [weekday, [[540, 1020] as const]]));
  const tasks: PlanItem[] = [];
  for (let id = 1; id <= 500; id += 1) tasks.push({ id, minutes: 5, notBefore: id === 250 ? NOW + 7 * DAY_MS : 0 });
  const input: Case = { calendar: office, now: NOW, horizonDays: 30, reservations: [], tasks, questions: [{ minutes: 60, notBefore: NOW }] };
  const plan = planResource(input);
  t.strictSame({ placements: [...plan.placements], suggestions: [plan.suggest(60)] }, model(input));
  // 420 minutes are left on Monday after 10:00: 84 tasks, then Tuesday from 09:00.
  t.equal(plan.placements.get(85)?.start, localToEpochMs('2026-11-17T09:00:00'));
  t.equal(plan.placements.get(250)?.start, localToEpochMs('2026-11-23T10:00:00'), 'the pinned task starts when it may');
});

t.test('PLAN: work placed after planned work, inside a free stretch, leaves that planned work between the free times around it', async (t) => {
  // Monday 10:00: free 10-11, planned 11-12 (a task that may start at 11), free 12-13, then a
  // task that may start at 13. Two free hours, 10-11 and 12-13, are not one uninterrupted run.
  const office: WeeklyCalendar = new Map([1, 2, 3, 4, 5].map((weekday) => [weekday, [[540, 1020] as const]]));
  const at = (time: string) => localToEpochMs(`2026-11-16T${time}:00`);
  const input: Case = {
    calendar: office, now: NOW, horizonDays: 7, reservations: [],
    tasks: [{ id: 1, minutes: 60, notBefore: at('11:00') }, { id: 2, minutes: 60, notBefore: at('13:00') }],
    questions: [{ minutes: 120, notBefore: NOW }, { minutes: 60, notBefore: NOW }],
  };
  const plan = planResource(input);
  const suggestions = input.questions.map((question) => plan.suggest(question.minutes, question.notBefore));
  t.strictSame({ placements: [...plan.placements], suggestions }, model(input));
  t.strictSame(suggestions, [at('14:00'), at('10:00')], 'two hours only after the second task; one hour at once');
});
