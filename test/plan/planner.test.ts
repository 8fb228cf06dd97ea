import t from 'tap';
import Database from 'better-sqlite3';
import { loadFixture } from '../../lib/fixtures/load.js';
import type { ResourcePlan } from '../../lib/plan/engine.js';
import { createPlanner, PLAN_MAX_AGE_MS, type CurrentPlan, type Planner } from '../../lib/domain/planning/planner.js';
import { calendarStatements } from '../../lib/store/calendars.js';
import type { Db } from '../../lib/store/open.js';
import { organisationStatements } from '../../lib/store/organisations.js';
import { planInputStatements } from '../../lib/store/plan-inputs.js';
import { epochMsToLocal, localToEpochMs } from '../../lib/time/london.js';

/**
 * The planner (contract 5): loads one resource's plannable tasks (offer order, remaining minutes,
 * notBefore from earliestStart and releaseDate) and accepted Incoming reservations from the
 * database, and caches the plan per resource and workspace version for at most 60 seconds.
 */

const ADA = 10;
const BOB = 12;
const GRACE = 11;
/** Monday 16 November 2026, 10:00 GMT. */
const NOW = localToEpochMs('2026-11-16T10:00:00');

interface World {
  db: Db;
  planner: Planner;
  plan(resourceId: number, now?: number): CurrentPlan;
}

/** One organisation: agents Ada and Bob, human Grace (default calendars), a project per priority. */
function world(tasks: Record<string, unknown>[], maxCachedEntries?: number): World {
  const db = new Database(':memory:');
  loadFixture(db, {
    organisations: [{ id: 1, name: 'Acme' }],
    staff: [
      { id: ADA, organisationId: 1, name: 'Ada', kind: 'agent' },
      { id: GRACE, organisationId: 1, name: 'Grace', kind: 'human' },
      { id: BOB, organisationId: 1, name: 'Bob', kind: 'agent' },
    ],
    projects: [
      { id: 1, organisationId: 1, name: 'Low', priorityName: 'low' },
      { id: 2, organisationId: 1, name: 'Normal', priorityName: 'normal' },
      { id: 3, organisationId: 1, name: 'High', priorityName: 'high' },
      { id: 4, organisationId: 1, name: 'Critical', priorityName: 'critical' },
    ],
    tasks,
  }, { now: NOW });
  const planner = createPlanner({
    inputs: planInputStatements(db), calendars: calendarStatements(db), organisations: organisationStatements(db),
    ...(maxCachedEntries === undefined ? {} : { maxCachedEntries }),
  });
  return { db, planner, plan: (resourceId, now = NOW) => planner.planFor(1, resourceId, now) };
}

/** Direct SQL skips the version bump every API mutation makes; plans are cached per version. */
const bump = (w: World) => w.db.prepare('UPDATE organisations SET workspace_version = workspace_version + 1 WHERE id = 1').run();

let revisions = 0;
/** An accepted or floating Incoming item for `recipient`, as the Incoming endpoints would leave it. */
function addIncoming(w: World, item: { id: number; recipient: number; minutes: number; lifecycle: string; plannedStart?: string; actualStartUtc?: string }) {
  revisions += 1;
  w.db.prepare(`INSERT INTO incoming_items (id, organisation_id, recipient_id, title, estimated_minutes, requester,
      requested_at_utc, lifecycle, planned_start_local, actual_start_utc, revision) VALUES (?, 1, ?, 'Help', ?, 'Ada', ?, ?, ?, ?, ?)`)
    .run(item.id, item.recipient, item.minutes, NOW - 3_600_000, item.lifecycle, item.plannedStart ?? null,
      item.actualStartUtc === undefined ? null : Date.parse(item.actualStartUtc), `00000000-0000-4000-8000-${String(revisions).padStart(12, '0')}`);
}

/** Placements as `[start, finish]` wall times. */
function placed(plan: ResourcePlan): Record<number, [string, string]> {
  const result: Record<number, [string, string]> = {};
  for (const [id, placement] of plan.placements) result[id] = [epochMsToLocal(placement.start), epochMsToLocal(placement.finish)];
  return result;
}

/** Planned working minutes of a task that fits inside one working day. */
function plannedMinutes(plan: ResourcePlan, taskId: number): number | undefined {
  const placement = plan.placements.get(taskId);
  return placement === undefined ? undefined : (placement.finish - placement.start) / 60_000;
}

const ada = [{ staffMemberId: ADA }];

t.test('PLANNER: tasks take capacity in offer order: project priority, project id, sequence, task id', async (t) => {
  const w = world([
    { id: 1, projectId: 1, title: 'Low', estimatedMinutes: 60, assignees: ada },
    { id: 2, projectId: 2, title: 'Normal, sequence 2', sequence: 2, estimatedMinutes: 60, assignees: ada },
    { id: 3, projectId: 2, title: 'Normal, sequence 1', sequence: 1, estimatedMinutes: 60, assignees: ada },
    { id: 4, projectId: 4, title: 'Critical', estimatedMinutes: 60, assignees: ada },
    { id: 5, projectId: 3, title: 'High', estimatedMinutes: 60, assignees: ada },
  ]);
  t.strictSame(placed(w.plan(ADA)), {
    4: ['2026-11-16T10:00:00', '2026-11-16T11:00:00'],
    5: ['2026-11-16T11:00:00', '2026-11-16T12:00:00'],
    3: ['2026-11-16T12:00:00', '2026-11-16T13:00:00'],
    2: ['2026-11-16T13:00:00', '2026-11-16T14:00:00'],
    1: ['2026-11-16T14:00:00', '2026-11-16T15:00:00'],
  });
});

t.test('PLANNER: only unfinished, unblocked tasks with remaining minutes take capacity', async (t) => {
  const w = world([
    { id: 1, projectId: 4, title: 'Done', status: 'Done', estimatedMinutes: 60, startedAt: '2026-11-13T09:00:00', completedAt: '2026-11-13T10:00:00', assignees: ada },
    { id: 2, projectId: 4, title: 'Waiting', isWaiting: true, estimatedMinutes: 60, assignees: ada },
    { id: 3, projectId: 4, title: 'After task 4', estimatedMinutes: 60, dependencyIds: [4], assignees: ada },
    { id: 4, projectId: 4, title: "Bob's prerequisite", estimatedMinutes: 60, assignees: [{ staffMemberId: BOB }] },
    { id: 5, projectId: 4, title: 'Overrun', status: 'InProgress', estimatedMinutes: 30, startedAt: '2026-11-16T09:00:00', assignees: ada },
    { id: 6, projectId: 4, title: 'Reconcile', estimatedMinutes: 0, assignees: ada },
    { id: 7, projectId: 4, title: 'Half done', status: 'InProgress', estimatedMinutes: 90, startedAt: '2026-11-16T09:00:00', assignees: ada },
    { id: 8, projectId: 1, title: 'Plannable', estimatedMinutes: 60, assignees: ada },
  ]);
  t.strictSame(placed(w.plan(ADA)), {
    7: ['2026-11-16T10:00:00', '2026-11-16T10:30:00'],
    8: ['2026-11-16T10:30:00', '2026-11-16T11:30:00'],
  }, 'task 7 has 30 of its 90 minutes left after an hour of working time; the others take none');
  t.strictSame(placed(w.plan(BOB)), { 4: ['2026-11-16T10:00:00', '2026-11-16T11:00:00'] }, "the prerequisite is in Bob's plan");
});

t.test('PLANNER: a task is planned from the later of its earliestStart and releaseDate', async (t) => {
  const w = world([
    { id: 1, projectId: 4, title: 'Both', estimatedMinutes: 60, earliestStart: '2026-11-23T09:00:00', releaseDate: '2026-11-25T13:00:00', assignees: ada },
    { id: 2, projectId: 4, title: 'Earliest start later', estimatedMinutes: 60, earliestStart: '2026-11-20T16:30:00', releaseDate: '2026-11-18T09:00:00', assignees: ada },
    { id: 3, projectId: 4, title: 'Release only', estimatedMinutes: 60, releaseDate: '2026-11-17T11:00:00', assignees: ada },
    { id: 4, projectId: 4, title: 'Past earliest start', estimatedMinutes: 60, earliestStart: '2026-11-02T09:00:00', assignees: ada },
  ]);
  t.strictSame(placed(w.plan(ADA)), {
    1: ['2026-11-25T13:00:00', '2026-11-25T14:00:00'],
    2: ['2026-11-20T16:30:00', '2026-11-23T09:30:00'],
    3: ['2026-11-17T11:00:00', '2026-11-17T12:00:00'],
    4: ['2026-11-16T10:00:00', '2026-11-16T11:00:00'],
  });
});

t.test('PLANNER: Independent assignees plan their own (or the task\'s) minutes; Collaboration assignees a share', async (t) => {
  const w = world([
    { id: 1, projectId: 4, title: 'Independent', estimatedMinutes: 120, assignees: [{ staffMemberId: ADA }, { staffMemberId: BOB, estimatedMinutes: 90 }] },
    { id: 2, projectId: 3, title: 'Collaboration', resourceMode: 'Collaboration', estimatedMinutes: 45,
      assignees: [{ staffMemberId: ADA }, { staffMemberId: BOB, estimatedMinutes: 300 }] },
    { id: 3, projectId: 2, title: 'Collaboration, started', resourceMode: 'Collaboration', status: 'InProgress', estimatedMinutes: 240,
      startedAt: '2026-11-16T09:00:00', assignees: [{ staffMemberId: ADA }, { staffMemberId: BOB }, { staffMemberId: GRACE }] },
  ]);
  const adaPlan = w.plan(ADA);
  const bobPlan = w.plan(BOB);
  t.equal(plannedMinutes(adaPlan, 1), 120, "Ada carries the task's estimate");
  t.equal(plannedMinutes(bobPlan, 1), 90, 'Bob carries his own estimate');
  t.equal(plannedMinutes(adaPlan, 2), 23, '45 minutes shared by two: 23 each (rounded up)');
  t.equal(plannedMinutes(bobPlan, 2), 23, "an own estimate does not apply to Collaboration");
  t.equal(plannedMinutes(adaPlan, 3), 60, '240 less an hour elapsed, shared by three');
  t.equal(plannedMinutes(w.plan(GRACE), 3), 60);
});

t.test('PLANNER: accepted Incoming items reserve capacity first: planned from plannedStart, in progress for what is left', async (t) => {
  const w = world([{ id: 1, projectId: 4, title: 'Four hours', estimatedMinutes: 240, assignees: ada }]);
  addIncoming(w, { id: 1, recipient: ADA, minutes: 60, lifecycle: 'planned', plannedStart: '2026-11-16T13:00:00' });
  t.strictSame(placed(w.plan(ADA)), { 1: ['2026-11-16T10:00:00', '2026-11-16T15:00:00'] }, 'the task runs 10:00-13:00 and 14:00-15:00');

  addIncoming(w, { id: 2, recipient: ADA, minutes: 180, lifecycle: 'inprogress', actualStartUtc: '2026-11-16T09:00:00.000Z' });
  bump(w);
  t.strictSame(placed(w.plan(ADA)), { 1: ['2026-11-16T12:00:00', '2026-11-16T17:00:00'] },
    'an item started at 09:00 has 120 of its 180 minutes left: 10:00-12:00, then the task 12:00-13:00 and 14:00-17:00');

  addIncoming(w, { id: 3, recipient: ADA, minutes: 1_000_000, lifecycle: 'floating' });
  addIncoming(w, { id: 4, recipient: ADA, minutes: 1_000_000, lifecycle: 'completed' });
  addIncoming(w, { id: 5, recipient: BOB, minutes: 1_000_000, lifecycle: 'planned', plannedStart: '2026-11-16T09:00:00' });
  bump(w);
  t.strictSame(placed(w.plan(ADA)), { 1: ['2026-11-16T12:00:00', '2026-11-16T17:00:00'] },
    "floating and completed items reserve nothing, and Bob's reservations are his own");

  w.db.prepare("UPDATE incoming_items SET lifecycle = 'planned', planned_start_local = '2026-11-16T09:00:00' WHERE id = 3").run();
  bump(w);
  t.strictSame(placed(w.plan(ADA)), {}, 'once accepted, a reservation filling the horizon leaves the task no working time');
});

t.test('PLANNER: an Incoming item planned in the past reserves all of its estimate from now', async (t) => {
  const w = world([{ id: 1, projectId: 4, title: 'Two hours', estimatedMinutes: 120, assignees: ada }]);
  addIncoming(w, { id: 1, recipient: ADA, minutes: 60, lifecycle: 'planned', plannedStart: '2026-11-13T09:00:00' });
  t.strictSame(placed(w.plan(ADA)), { 1: ['2026-11-16T11:00:00', '2026-11-16T13:00:00'] },
    'planned last Friday: the item holds 10:00-11:00 today, and the task follows it');
});

t.test('PLANNER: an Incoming item in progress that was never started (reopened by an evaluation) reserves its estimate from now', async (t) => {
  const w = world([{ id: 1, projectId: 4, title: 'Two hours', estimatedMinutes: 120, assignees: ada }]);
  // Planned for Wednesday, completed, then reopened by keepwaiting: in progress, actualStartUtc null.
  addIncoming(w, { id: 1, recipient: ADA, minutes: 60, lifecycle: 'inprogress', plannedStart: '2026-11-18T09:00:00' });
  t.strictSame(placed(w.plan(ADA)), { 1: ['2026-11-16T11:00:00', '2026-11-16T13:00:00'] },
    'the item holds 10:00-11:00 today, not Wednesday; the task follows it');
});

t.test('PLANNER: a plan is reused while the workspace version is unchanged and it is under 60 seconds old', async (t) => {
  const w = world([{ id: 1, projectId: 4, title: 'Task', estimatedMinutes: 60, assignees: ada }]);
  const first = w.plan(ADA);
  t.equal(w.plan(ADA, NOW + PLAN_MAX_AGE_MS - 1), first, 'same version, 59.999 s later: the same plan');
  t.not(w.plan(BOB), first, 'plans are per resource');
  t.equal(w.plan(ADA), first, "another resource's plan does not evict this one");

  w.db.prepare('UPDATE tasks SET estimated_minutes = 120 WHERE id = 1').run();
  t.equal(w.plan(ADA), first, 'a change the version does not show is not seen');
  bump(w);
  const second = w.plan(ADA);
  t.not(second, first, 'a new workspace version recomputes');
  t.strictSame(placed(second), { 1: ['2026-11-16T10:00:00', '2026-11-16T12:00:00'] });
  t.equal(w.plan(ADA), second);

  const later = w.plan(ADA, NOW + PLAN_MAX_AGE_MS);
  t.not(later, second, '60 s later: recomputed');
  t.equal(later.computedAt, NOW + PLAN_MAX_AGE_MS);
  t.strictSame(placed(later), { 1: ['2026-11-16T10:01:00', '2026-11-16T12:01:00'] }, 'from the new now');
  t.not(w.plan(ADA, NOW), later, 'a clock moved back does not use a plan from its future');
});

t.test('PLANNER: a plan is recomputed, even under a minute old, once a started task may have run out of remaining minutes', async (t) => {
  // Started 09:00 with 60 minutes: at 09:59:30 one minute remains, until 10:00:00.
  const w = world([
    { id: 1, projectId: 4, title: 'Nearly done', status: 'InProgress', startedAt: '2026-11-16T09:00:00', estimatedMinutes: 60, assignees: ada },
    { id: 2, projectId: 1, title: 'Not started', estimatedMinutes: 30, assignees: ada },
  ]);
  const first = w.plan(ADA, NOW - 30_000);
  t.ok(first.placements.has(1), 'planned while a minute remains');
  t.equal(first.validUntil, NOW, 'current until the instant its last minute may be used up');
  t.equal(w.plan(ADA, NOW - 1), first, 'reused before then');
  const later = w.plan(ADA, NOW + 10_000);
  t.not(later, first, 'recomputed 40 s after the first, inside the minute a plan is otherwise kept');
  t.notOk(later.placements.has(1), 'nothing remains: no longer planned');
  t.ok(later.placements.has(2));
  t.equal(later.validUntil, NOW + 10_000 + PLAN_MAX_AGE_MS, 'no started task left: kept the full minute');
});

t.test('PLANNER: cached plans hold at most so many entries (placements and timeline segments) together; the oldest go first, and a plan larger than that is not kept', async (t) => {
  const tasks = [1, 2, 3].flatMap((n) => [
    { id: n, projectId: 2, title: `Ada ${n}`, sequence: n, estimatedMinutes: 30, assignees: [{ staffMemberId: ADA }] },
    { id: 10 + n, projectId: 2, title: `Bob ${n}`, sequence: n, estimatedMinutes: 30, assignees: [{ staffMemberId: BOB }] },
  ]);
  // The sizes, from a world that keeps everything.
  const sizes = world(tasks);
  const adaSize = sizes.plan(ADA).size;
  const bobSize = sizes.plan(BOB).size;
  t.equal(sizes.plan(ADA).placements.size, 3);
  // Monday to Friday over 365 days: about 261 working days, each a segment of the timeline.
  t.ok(adaSize > 3 + 250, `a plan counts its timeline too (${adaSize} entries for 3 placements)`);

  const w = world(tasks, adaSize + bobSize - 1);
  const ada = w.plan(ADA);
  t.equal(w.plan(ADA), ada, 'kept while it fits');
  const bob = w.plan(BOB);
  t.equal(w.plan(BOB), bob, "Bob's plan is kept");
  t.not(w.plan(ADA), ada, "Ada's, the oldest, made room for it (the two do not fit together): planned again");

  const roomy = world(tasks, adaSize + bobSize);
  const kept = roomy.plan(ADA);
  roomy.plan(BOB);
  t.equal(roomy.plan(ADA), kept, 'both kept when they fit together');

  const tight = world(tasks, adaSize - 1);
  const first = tight.plan(ADA);
  t.not(tight.plan(ADA), first, 'a plan larger than the bound is never kept');
  t.strictSame([...tight.plan(ADA).placements.keys()], [...first.placements.keys()], 'and is the same plan each time');
});

t.test('PLANNER: a suggestion in the second pass of the October repeated hour is a wall time, and planned as it reads it reserves from the first pass (README, Ambiguous autumn wall times)', async (t) => {
  const w = world([{ id: 1, projectId: 2, title: 'Grace works', sequence: 1, estimatedMinutes: 90, assignees: [{ staffMemberId: GRACE, estimatedMinutes: null }] }]);
  // Grace works Sundays 00:30-03:00: on 25 October 2026, 23:30Z to 03:00Z, the hour from 01:00 twice.
  w.db.prepare('DELETE FROM calendar_intervals WHERE staff_id = ?').run(GRACE);
  w.db.prepare('INSERT INTO calendar_intervals (staff_id, weekday, start_minute, end_minute) VALUES (?, 7, 30, 180)').run(GRACE);
  const saturday = Date.parse('2026-10-24T12:00:00Z');
  const before = w.plan(GRACE, saturday);
  t.strictSame([before.placements.get(1)?.start, before.placements.get(1)?.finish], [Date.parse('2026-10-24T23:30:00Z'), Date.parse('2026-10-25T01:00:00Z')]);
  const suggested = before.suggest(60);
  t.equal(suggested, Date.parse('2026-10-25T01:00:00Z'), 'free from 01:00 GMT, the second pass');
  t.equal(epochMsToLocal(suggested ?? 0), '2026-10-25T01:00:00', 'shown as its wall time');
  addIncoming(w, { id: 1, recipient: GRACE, minutes: 60, lifecycle: 'planned', plannedStart: '2026-10-25T01:00:00' });
  bump(w);
  const after = w.plan(GRACE, saturday);
  t.strictSame([after.placements.get(1)?.start, after.placements.get(1)?.finish], [Date.parse('2026-10-24T23:30:00Z'), Date.parse('2026-10-25T02:00:00Z')],
    'planned as it reads, the item took 00:00Z-01:00Z, the first pass, ahead of the task, which now runs round it');
});
