import t from 'tap';
import Database from 'better-sqlite3';
import { loadFixture } from '../../lib/fixtures/load.js';
import type { WeeklyCalendar } from '../../lib/plan/calendar.js';
import { planResource, type PlanItem, type ResourcePlan } from '../../lib/plan/engine.js';
import { createPlanner } from '../../lib/domain/planning/planner.js';
import { incomingSuggestion } from '../../lib/plan/suggestion.js';
import { calendarStatements } from '../../lib/store/calendars.js';
import { organisationStatements } from '../../lib/store/organisations.js';
import { planInputStatements } from '../../lib/store/plan-inputs.js';
import { localToEpochMs } from '../../lib/time/london.js';

/**
 * Incoming suggestedStart and suggestionReason (spec Incoming; contract 8): the earliest free
 * working time of the recipient that holds the whole estimate without planned work in between,
 * clear of their planned tasks and accepted Incoming work. A suggestion reserves nothing.
 */

const at = (local: string): number => localToEpochMs(local);
const minutes = (clock: string): number => Number(clock.slice(0, 2)) * 60 + Number(clock.slice(3, 5));
const LOCAL_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;

function calendar(days: number[], intervals: [string, string][]): WeeklyCalendar {
  const day = intervals.map(([from, to]) => [minutes(from), minutes(to)] as const);
  return new Map(days.map((weekday) => [weekday, day]));
}

const OFFICE = calendar([1, 2, 3, 4, 5], [['09:00', '17:00']]);
/** Monday 16 November 2026, 10:00 GMT. */
const MONDAY_10 = at('2026-11-16T10:00:00');

const item = (id: number, minutesOfWork: number, notBefore = 0): PlanItem => ({ id, minutes: minutesOfWork, notBefore });

function plan(options: { now?: number; cal?: WeeklyCalendar; reservations?: PlanItem[]; tasks?: PlanItem[] } = {}): ResourcePlan {
  return planResource({ now: options.now ?? MONDAY_10, calendar: options.cal ?? OFFICE, reservations: options.reservations ?? [], tasks: options.tasks ?? [] });
}

const suggested = (resourcePlan: ResourcePlan, estimate: number): string | null => incomingSuggestion(resourcePlan, estimate, 'Grace').suggestedStart;

t.test('SUGGEST: the earliest free working time that holds the estimate, as a YYYY-MM-DDTHH:mm:ss London wall time', async (t) => {
  const free = incomingSuggestion(plan(), 60, 'Grace');
  t.equal(free.suggestedStart, '2026-11-16T10:00:00', 'free now: now');
  t.match(free.suggestedStart, LOCAL_DATE_TIME, 'no offset, no fraction');
  t.equal(free.suggestionReason,
    'Earliest free working time of Grace that holds 60 minutes without interruption, clear of their planned tasks and accepted Incoming work; ' +
    'a suggestion reserves no capacity.');
  t.equal(suggested(plan({ now: at('2026-11-21T11:00:00') }), 60), '2026-11-23T09:00:00', 'on a Saturday: Monday 09:00');
  t.equal(suggested(plan({ now: Date.parse('2026-11-16T10:00:00.750Z') }), 60), '2026-11-16T10:00:00', 'a fraction of a second is dropped');
  t.equal(incomingSuggestion(plan(), 60, 'Grace', at('2026-11-16T10:00:45')).suggestedStart, '2026-11-16T10:00:45',
    'a plan reused 45 s later suggests from the later now, never from the past');
  t.equal(suggested(plan({ now: at('2027-07-03T12:00:00') }), 60), '2027-07-05T09:00:00', 'in summer, BST wall time');
  t.equal(suggested(plan({ now: at('2026-03-27T17:30:00') }), 60), '2026-03-30T09:00:00', 'after the spring change');
  t.equal(suggested(plan({ now: at('2027-10-29T17:30:00') }), 60), '2027-11-01T09:00:00', 'after the autumn change');
});

t.test('SUGGEST: work may pause outside working hours, and the suggestion reserves nothing', async (t) => {
  const resourcePlan = plan({ tasks: [item(1, 60)] });
  t.equal(suggested(resourcePlan, 900), '2026-11-16T11:00:00', '15 hours: from 11:00 on Monday until Wednesday');
  t.equal(suggested(resourcePlan, 900), '2026-11-16T11:00:00', 'asking again gives the same answer');
  t.equal(suggested(resourcePlan, 30), '2026-11-16T11:00:00', 'another suggestion is not moved by the first');
  t.strictSame([...resourcePlan.placements.keys()], [1], 'the plan itself is unchanged');
});

t.test("SUGGEST: the recipient's own planned tasks come first", async (t) => {
  t.equal(suggested(plan({ tasks: [item(1, 120), item(2, 60)] }), 30), '2026-11-16T13:00:00');
  t.equal(suggested(plan({ tasks: [item(1, 420)] }), 30), '2026-11-17T09:00:00', 'a full Monday: Tuesday');
  t.equal(suggested(plan({ tasks: [item(1, 60, at('2026-11-16T15:00:00'))] }), 300), '2026-11-16T10:00:00',
    'a task later in the day leaves a gap that holds the estimate');
});

t.test('SUGGEST: a suggestion never crosses planned work: it needs an uninterrupted run of free time', async (t) => {
  const booked = plan({ reservations: [item(100, 60, at('2026-11-16T13:00:00'))] });
  t.equal(suggested(booked, 180), '2026-11-16T10:00:00', '10:00-13:00 holds 180 minutes');
  t.equal(suggested(booked, 181), '2026-11-16T14:00:00', 'one more minute: after the planned hour');
  const split = plan({ tasks: [item(1, 60, at('2026-11-17T09:00:00'))] });
  t.equal(suggested(split, 420), '2026-11-16T10:00:00', 'Monday 10:00-17:00 holds exactly 420');
  t.equal(suggested(split, 421), '2026-11-17T10:00:00', 'Monday then Tuesday would cross the task at 09:00');
});

t.test('SUGGEST: a run of free time exactly as long as the work holds it, also when no longer run follows', async (t) => {
  // A one-day horizon from Monday 09:00: planned work at 09:00-10:00, 11:00-12:00 and 13:00-17:00
  // leaves two free hours, 10:00-11:00 and 12:00-13:00, and nothing after them.
  const monday9 = at('2026-11-16T09:00:00');
  const day = planResource({
    now: monday9, calendar: OFFICE, reservations: [], horizonDays: 1,
    tasks: [item(1, 60), item(2, 60, at('2026-11-16T11:00:00')), item(3, 240, at('2026-11-16T13:00:00'))],
  });
  t.equal(day.suggest(60), at('2026-11-16T10:00:00'), 'the first free hour');
  t.equal(day.suggest(60, at('2026-11-16T10:30:00')), at('2026-11-16T12:00:00'), 'from 10:30, the second, the last and longest run');
  t.equal(day.suggest(61), null, 'a minute more fits nowhere');
});

t.test('SUGGEST: null, with a reason, when nothing fits within the 365-day horizon', async (t) => {
  const none = incomingSuggestion(plan({ cal: new Map() }), 60, 'Grace');
  t.strictSame(none, { suggestedStart: null, suggestionReason: 'No free working time of Grace within 365 days holds 60 minutes.' }, 'no calendar');
  t.equal(suggested(plan({ reservations: [item(100, 1_000_000)] }), 1), null, 'a reservation filling the horizon');
  const short = planResource({ now: MONDAY_10, calendar: OFFICE, reservations: [], tasks: [], horizonDays: 7 });
  t.equal(incomingSuggestion(short, 3000, 'Grace').suggestionReason, 'No free working time of Grace within 7 days holds 3000 minutes.',
    "the reason names the plan's horizon");
  t.equal(suggested(plan(), 1_000_000), null, 'more than the horizon holds');
  t.equal(suggested(plan({ tasks: [item(1, 60, at('2026-12-01T09:00:00'))] }), 6000), '2026-12-01T10:00:00',
    '5220 free minutes before the task do not hold 6000: it fits only after the task');
});

/** The planner over a database: what the Incoming endpoints will use. */
t.test('SUGGEST: accepted Incoming work (planned or in progress) is respected; floating work is ignored', async (t) => {
  const db = new Database(':memory:');
  loadFixture(db, {
    organisations: [{ id: 1, name: 'Acme' }],
    staff: [{ id: 11, organisationId: 1, name: 'Grace', kind: 'human' }],
    projects: [{ id: 1, organisationId: 1, name: 'Work' }],
    tasks: [{ id: 1, projectId: 1, title: 'Her task', estimatedMinutes: 60, assignees: [{ staffMemberId: 11 }] }],
  }, { now: MONDAY_10 });
  const planner = createPlanner({ inputs: planInputStatements(db), calendars: calendarStatements(db), organisations: organisationStatements(db) });
  const suggest = (estimate: number) => incomingSuggestion(planner.planFor(1, 11, MONDAY_10), estimate, 'Grace').suggestedStart;
  const insert = db.prepare(`INSERT INTO incoming_items (id, organisation_id, recipient_id, title, estimated_minutes, requester,
      requested_at_utc, lifecycle, planned_start_local, actual_start_utc, revision) VALUES (?, 1, 11, 'Help', ?, 'Ada', ?, ?, ?, ?, ?)`);
  const bump = () => db.prepare('UPDATE organisations SET workspace_version = workspace_version + 1 WHERE id = 1').run();

  t.equal(suggest(120), '2026-11-16T11:00:00', 'after her task');
  insert.run(1, 480, MONDAY_10, 'floating', null, null, '00000000-0000-4000-8000-000000000001');
  insert.run(2, 480, MONDAY_10, 'floating', null, null, '00000000-0000-4000-8000-000000000002');
  bump();
  t.equal(suggest(120), '2026-11-16T11:00:00', 'floating items reserve nothing');

  db.prepare("UPDATE incoming_items SET lifecycle = 'planned', planned_start_local = '2026-11-16T14:00:00' WHERE id = 1").run();
  bump();
  t.equal(suggest(120), '2026-11-16T11:00:00', '11:00-14:00 still holds 120 minutes');
  t.equal(suggest(200), '2026-11-17T14:00:00', 'a planned item of 480 minutes from 14:00 runs to Tuesday 14:00');

  db.prepare("UPDATE incoming_items SET lifecycle = 'inprogress', actual_start_utc = ? WHERE id = 2").run(Date.parse('2026-11-16T09:30:00Z'));
  bump();
  t.equal(suggest(60), '2026-11-18T10:30:00',
    'an item started at 09:30 has 450 minutes left: Monday 10:00-14:00, Tuesday 14:00-17:00, Wednesday 09:00-09:30; then her task');

  db.prepare("UPDATE incoming_items SET lifecycle = 'completed' WHERE id IN (1, 2)").run();
  bump();
  t.equal(suggest(120), '2026-11-16T11:00:00', 'completed items reserve nothing');
});
