import t from 'tap';
import { harness, type CallResult, type Harness } from '../helpers/service.js';
import { baseFixture, TOKENS, type FixtureShape } from '../helpers/fixture.js';

/**
 * The plan as the API shows it (contract 5): the current scheduler allocation decides what
 * /tasks/available offers and what a claim accepts; Assignment minutes come from the same rules.
 * The base world, at Monday 16 November 2026 10:00 (GMT), offers Ada tasks 4, 1, 8 and 3 and Bob
 * tasks 4 and 7; everyone works the default Monday-Friday 09:00-17:00, except where a test says.
 */

const API = '/api/v1';
const IDLE = 'wta_test_idle_agent';
const SOLO = 'wta_test_solo_agent';

function world(fixture: FixtureShape = baseFixture(), now?: string): Harness {
  return harness({ fixture, defaultToken: TOKENS.ada, rateLimit: 100_000, ...(now === undefined ? {} : { now }) });
}

/** The base world plus `tasks`. */
function withTasks(...tasks: Record<string, unknown>[]): FixtureShape {
  const fixture = baseFixture();
  fixture.tasks.push(...tasks);
  return fixture;
}

async function ok(response: Promise<CallResult>, what: string): Promise<CallResult> {
  const result = await response;
  if (result.status !== 200) throw new Error(`${what} answered ${result.status}: ${result.text}`);
  return result;
}

const ids = (list: { id: number }[]): number[] => list.map((task) => task.id);
const available = async (h: Harness, token: string = TOKENS.ada) => ids((await ok(h.call('GET', `${API}/tasks/available`, { token }), 'available')).json);
const waiting = async (h: Harness, token: string = TOKENS.ada) => ids((await ok(h.call('GET', `${API}/tasks/waiting`, { token }), 'waiting')).json);
const read = async (h: Harness, id: number, token: string = TOKENS.ada) => (await ok(h.call('GET', `${API}/tasks/${id}`, { token }), `task ${id}`)).json;

let keys = 0;

async function claim(h: Harness, id: number, token: string = TOKENS.ada): Promise<CallResult> {
  const { etag } = await read(h, id, token);
  keys += 1;
  return h.call('POST', `${API}/tasks/${id}/claim`, { token, headers: { 'if-match': etag, 'idempotency-key': `planning-${keys}` } });
}

async function patch(h: Harness, id: number, body: unknown, token: string = TOKENS.ada, claimToken?: string): Promise<CallResult> {
  const { etag } = await read(h, id, token);
  const headers: Record<string, string> = { 'if-match': etag };
  if (claimToken !== undefined) headers['x-task-claim'] = claimToken;
  return h.call('PATCH', `${API}/tasks/${id}`, { token, headers, body });
}

/** Direct SQL skips the version bump every API mutation makes; plans are cached per version. */
const bumpVersion = (h: Harness) => h.db.prepare('UPDATE organisations SET workspace_version = workspace_version + 1 WHERE id = 1').run();

/** An Incoming item for Ada's resource, as the Incoming endpoints would leave it. */
function addIncoming(h: Harness, item: { id: number; minutes: number; lifecycle: string; plannedStart?: string; actualStartUtc?: string }) {
  h.db.prepare(`INSERT INTO incoming_items (id, organisation_id, recipient_id, title, estimated_minutes, requester,
      requested_at_utc, lifecycle, planned_start_local, actual_start_utc, revision) VALUES (?, 1, 10, 'Please help', ?, 'Grace', ?, ?, ?, ?, ?)`)
    .run(item.id, item.minutes, h.clock.now(), item.lifecycle, item.plannedStart ?? null,
      item.actualStartUtc === undefined ? null : Date.parse(item.actualStartUtc), `00000000-0000-4000-8000-${String(item.id).padStart(12, '0')}`);
}

/** A Critical task of Ada's that needs more working time than 365 days of her calendar hold. */
const HUGE = { id: 60, projectId: 3, title: 'Boil the ocean', estimatedMinutes: 1_000_000, assignees: [{ staffMemberId: 10 }] };

t.test('PLAN: a dependency chain across resources advances one link at a time, as each prerequisite is Done', async (t) => {
  const h = world(withTasks(
    { id: 50, projectId: 1, title: "A: Bob's prerequisite", sequence: 1, estimatedMinutes: 60, assignees: [{ staffMemberId: 12 }] },
    { id: 51, projectId: 3, title: "B: Ada's, after A", sequence: 0, estimatedMinutes: 60, dependencyIds: [50], assignees: [{ staffMemberId: 10 }] },
    { id: 52, projectId: 1, title: "C: Bob's, after B", sequence: 2, estimatedMinutes: 30, dependencyIds: [51], assignees: [{ staffMemberId: 12 }] },
  ));
  t.strictSame(await available(h), [4, 1, 8, 3], 'B is not offered to Ada');
  t.strictSame(await waiting(h), [51, 2, 5], "B is in Ada's waiting list");
  t.strictSame((await read(h, 51)).blockingReasons, ['unmet prerequisites']);
  const blocked = await claim(h, 51);
  t.equal(blocked.status, 409);
  t.equal(blocked.json.code, 'task_blocked', 'claiming B is refused');
  t.strictSame(await available(h, TOKENS.bob), [4, 7, 50], 'A is offered to Bob; C is not');
  t.strictSame(await waiting(h, TOKENS.bob), [52]);

  t.equal((await patch(h, 50, { status: 'Done' }, TOKENS.bob)).status, 204, "Bob's client completes A");
  t.strictSame(await available(h), [51, 4, 1, 8, 3], 'B is offered to Ada, first as it is Critical');
  t.strictSame(await waiting(h), [2, 5]);
  t.strictSame(await waiting(h, TOKENS.bob), [52], 'C still waits for B');
  const claimed = await claim(h, 51);
  t.equal(claimed.status, 200, 'B can be claimed');

  t.equal((await patch(h, 51, { status: 'Done' }, TOKENS.ada, claimed.json.token)).status, 204, 'Ada completes B under her lease');
  t.strictSame(await available(h, TOKENS.bob), [4, 7, 52], 'C is offered to Bob');
  t.strictSame(await waiting(h, TOKENS.bob), []);
});

t.test('PLAN: a task that gets no working time within 365 days is not offered or claimable; the one that fills the horizon is', async (t) => {
  const h = world(withTasks(HUGE));
  t.strictSame(await available(h), [60, 8], 'only the huge task and the zero-estimate one');
  const refused = await claim(h, 1);
  t.equal(refused.status, 409);
  t.equal(refused.json.code, 'task_not_runnable', 'a task without an allocation cannot be claimed');
  t.equal((await claim(h, 60)).status, 200, 'the huge task can');
  t.strictSame(await available(h, TOKENS.bob), [4, 7], "Bob's plan is his own: the shared task 4 still fits his time");
});

t.test('PLAN: higher-priority work takes capacity first', async (t) => {
  const low = world(withTasks({ ...HUGE, projectId: 2, sequence: 100 }));
  t.strictSame(await available(low), [4, 1, 8, 3, 60], 'a huge Low task goes last: everything before it has working time, and so has it');
  const high = world(withTasks({ ...HUGE, projectId: 1, sequence: 15 }));
  t.strictSame(await available(high), [4, 1, 60, 8], 'a huge High task after task 1: the Low task 3 behind it gets none');
});

t.test('PLAN: among projects of one priority the lower project id takes capacity first, whatever the sequences', async (t) => {
  const fixture = baseFixture();
  fixture.projects.push(
    { id: 20, organisationId: 1, name: 'Normal A', priorityName: 'normal', isActive: true },
    { id: 21, organisationId: 1, name: 'Normal B', priorityName: 'normal', isActive: true },
  );
  const solo = [{ staffMemberId: 16 }];
  fixture.tasks.push(
    { id: 70, projectId: 21, title: 'Fills the horizon', sequence: 1, estimatedMinutes: 1_000_000, assignees: solo },
    { id: 71, projectId: 20, title: 'An hour', sequence: 99, estimatedMinutes: 60, assignees: solo },
  );
  fixture.staff.push({ id: 16, organisationId: 1, name: 'Solo', kind: 'agent', isActive: true });
  fixture.clients.push({ id: 110, organisationId: 1, name: 'solo-bot', token: SOLO, sponsorId: 11, resourceId: 16, isActive: true, scopes: ['tasks:read'] });
  t.strictSame(await available(world(fixture), SOLO), [71, 70],
    'project 20 is planned before project 21 although its task comes later in sequence: the hour gets time, and the huge task the rest');
});

t.test('PLAN: an agent with no working time is offered only zero-estimate tasks', async (t) => {
  const fixture = withTasks(
    { id: 40, projectId: 1, title: 'Needs time', estimatedMinutes: 30, assignees: [{ staffMemberId: 15 }] },
    { id: 41, projectId: 1, title: 'Needs none', estimatedMinutes: 0, assignees: [{ staffMemberId: 15 }] },
  );
  fixture.staff.push({ id: 15, organisationId: 1, name: 'Idle', kind: 'agent', isActive: true, calendar: {} });
  fixture.clients.push({ id: 109, organisationId: 1, name: 'idle-bot', token: IDLE, sponsorId: 11, resourceId: 15, isActive: true, scopes: ['tasks:read', 'tasks:update'] });
  const h = world(fixture);
  t.strictSame(await available(h, IDLE), [41]);
  t.equal((await claim(h, 40, IDLE)).json.code, 'task_not_runnable');
  t.equal((await claim(h, 41, IDLE)).status, 200);
});

t.test('PLAN: zero-estimate tasks are offered for reconciliation without an allocation, when otherwise runnable', async (t) => {
  const ada = [{ staffMemberId: 10 }];
  const h = world(withTasks(
    HUGE,
    { id: 61, projectId: 1, title: 'Reconcile, waiting', sequence: 41, estimatedMinutes: 0, isWaiting: true, assignees: ada },
    { id: 62, projectId: 1, title: 'Reconcile later', sequence: 42, estimatedMinutes: 0, earliestStart: '2026-11-23T09:00:00', assignees: ada },
    { id: 63, projectId: 4, title: 'Reconcile, shelved', estimatedMinutes: 0, assignees: ada },
    { id: 64, projectId: 1, title: 'Reconcile, started', sequence: 43, status: 'InProgress', startedAt: '2026-11-16T09:00:00', estimatedMinutes: 0, assignees: ada },
  ));
  t.strictSame(await available(h), [60, 8, 64], 'behind a task that fills the horizon, zero-estimate tasks 8 and 64 are still offered');
  t.equal((await read(h, 8)).remainingMinutes, 0);
  t.equal((await claim(h, 8)).status, 200, 'and can be claimed');
  t.equal((await claim(h, 62)).json.code, 'task_not_runnable', 'but not before its earliestStart');
  t.equal((await claim(h, 61)).json.code, 'task_blocked', 'nor while blocked');
});

t.test('PLAN: earliestStart and releaseDate hold a task back until they arrive; then the plan allocates it', async (t) => {
  const ada = [{ staffMemberId: 10 }];
  const fixture = withTasks(
    { id: 65, projectId: 1, title: 'From next Monday', sequence: 1, estimatedMinutes: 60, earliestStart: '2026-11-23T09:00:00', assignees: ada },
    { id: 66, projectId: 1, title: 'Released Wednesday', sequence: 2, estimatedMinutes: 60, releaseDate: '2026-11-18T13:00:00', assignees: ada },
  );
  fixture.claims = []; // task 11's lease would lapse as the clock moves on
  const h = world(fixture);
  t.strictSame(await available(h), [4, 1, 8, 11, 3]);
  t.equal((await claim(h, 65)).json.code, 'task_not_runnable');
  h.clock.set('2026-11-18T13:00:00Z');
  t.strictSame(await available(h), [4, 66, 1, 8, 11, 3], 'Wednesday 13:00: task 66 is released');
  h.clock.set('2026-11-23T09:00:00Z');
  t.strictSame(await available(h), [4, 65, 66, 1, 8, 11, 3], 'next Monday 09:00: task 65 may start');
  t.equal((await claim(h, 65)).status, 200);
});

t.test('PLAN: a started task whose remaining minutes run out is no longer offered or claimable, even under a plan less than a minute old', async (t) => {
  const fixture = withTasks({
    id: 70, projectId: 1, title: 'Nearly done', sequence: 3, status: 'InProgress', startedAt: '2026-11-16T09:00:00',
    estimatedMinutes: 60, assignees: [{ staffMemberId: 10 }],
  });
  const h = world(fixture, '2026-11-16T09:59:30Z');
  t.ok((await available(h)).includes(70), 'one minute remains at 09:59:30');
  h.clock.set('2026-11-16T10:00:10Z');
  t.notOk((await available(h)).includes(70), 'at 10:00:10 nothing remains, and the estimate is not 0');
  t.equal((await claim(h, 70)).json.code, 'task_not_runnable');
});

t.test('PLAN: Assignment minutes: Independent assignees carry their own estimate or the task\'s; Collaboration assignees share it', async (t) => {
  const both = (bob: Record<string, unknown> = {}) => [{ staffMemberId: 10 }, { staffMemberId: 12, ...bob }];
  const h = world(withTasks(
    { id: 70, projectId: 1, title: 'Independent, started', sequence: 70, status: 'InProgress', startedAt: '2026-11-16T09:00:00', estimatedMinutes: 120, assignees: both({ estimatedMinutes: 90 }) },
    { id: 71, projectId: 1, title: 'Collaboration', sequence: 71, resourceMode: 'Collaboration', estimatedMinutes: 120, assignees: both() },
    { id: 72, projectId: 1, title: 'Collaboration, odd', sequence: 72, resourceMode: 'Collaboration', estimatedMinutes: 45, assignees: both() },
    { id: 73, projectId: 1, title: 'Collaboration, started', sequence: 73, resourceMode: 'Collaboration', status: 'InProgress', startedAt: '2026-11-16T09:00:00', estimatedMinutes: 120, assignees: both() },
  ));
  const minutes = async (id: number) => {
    const task = await read(h, id);
    return { remainingMinutes: task.remainingMinutes, assignees: task.assignees.map((a: Record<string, unknown>) => [a.staffMemberId, a.remainingMinutes, a.estimatedMinutes]) };
  };
  t.strictSame(await minutes(70), { remainingMinutes: 60, assignees: [[10, 60, null], [12, 30, 90]] },
    "Independent: Ada carries the task's 120, Bob his own 90, each less the hour elapsed");
  t.strictSame(await minutes(71), { remainingMinutes: 120, assignees: [[10, 60, null], [12, 60, null]] }, 'Collaboration: 120 shared by two');
  t.strictSame(await minutes(72), { remainingMinutes: 45, assignees: [[10, 23, null], [12, 23, null]] }, '45 shared by two, rounded up');
  t.strictSame(await minutes(73), { remainingMinutes: 60, assignees: [[10, 30, null], [12, 30, null]] }, 'what is left, shared');
});

t.test("PLAN: each resource's plan consumes its assignment's minutes: Independent the whole estimate, Collaboration a share", async (t) => {
  // 365 days of Monday-Friday 09:00-17:00 hold about 125000 minutes: 200000 do not fit, 100000 do.
  const both = (bob: Record<string, unknown> = {}) => [{ staffMemberId: 10 }, { staffMemberId: 12, ...bob }];
  const independent = world(withTasks({ id: 74, projectId: 3, title: 'Independent', estimatedMinutes: 200_000, assignees: both({ estimatedMinutes: 60 }) }));
  t.strictSame(await available(independent), [74, 8], "Ada's 200000 minutes fill her horizon: her other tasks get no working time");
  t.strictSame(await available(independent, TOKENS.bob), [74, 4, 7], "Bob's own 60 minutes leave room for his");
  const collaboration = world(withTasks({ id: 74, projectId: 3, title: 'Collaboration', resourceMode: 'Collaboration', estimatedMinutes: 200_000, assignees: both() }));
  t.strictSame(await available(collaboration), [74, 4, 1, 8, 3], 'a 100000-minute share leaves Ada room');
  t.strictSame(await available(collaboration, TOKENS.bob), [74, 4, 7], 'and Bob');
});

t.test('PLAN: accepted Incoming work takes capacity before tasks; floating and completed work takes none', async (t) => {
  const h = world();
  addIncoming(h, { id: 500, minutes: 1_000_000, lifecycle: 'floating' });
  bumpVersion(h);
  t.strictSame(await available(h), [4, 1, 8, 3], 'a floating item changes nothing');

  h.db.prepare("UPDATE incoming_items SET lifecycle = 'planned', planned_start_local = '2026-11-16T10:00:00' WHERE id = 500").run();
  bumpVersion(h);
  t.strictSame(await available(h), [8], 'accepted and planned from now, it fills the horizon: only the zero-estimate task is offered');
  t.equal((await claim(h, 1)).json.code, 'task_not_runnable');
  t.strictSame(await available(h, TOKENS.bob), [4, 7], "the reservation is Ada's alone");

  h.db.prepare("UPDATE incoming_items SET lifecycle = 'planned', planned_start_local = '2027-11-16T09:00:00' WHERE id = 500").run();
  bumpVersion(h);
  t.strictSame(await available(h), [4, 1, 8, 3], 'planned to start beyond the horizon, it reserves nothing within it');

  h.db.prepare("UPDATE incoming_items SET lifecycle = 'inprogress', planned_start_local = NULL, actual_start_utc = ? WHERE id = 500")
    .run(Date.parse('2026-11-16T09:00:00Z'));
  bumpVersion(h);
  t.strictSame(await available(h), [8], 'in progress since 09:00, what is left still fills the horizon');

  h.db.prepare("UPDATE incoming_items SET lifecycle = 'completed' WHERE id = 500").run();
  bumpVersion(h);
  t.strictSame(await available(h), [4, 1, 8, 3], 'completed: nothing reserved');
});

t.test('PLAN: plans are cached per workspace version; an API mutation, or 60 seconds passing, recomputes them', async (t) => {
  const h = world();
  t.strictSame(await available(h), [4, 1, 8, 3]);
  addIncoming(h, { id: 501, minutes: 1_000_000, lifecycle: 'inprogress', actualStartUtc: '2026-11-16T10:00:00.000Z' });
  t.strictSame(await available(h), [4, 1, 8, 3], 'a row changed behind the API is not seen at the same version');

  const note = await h.call('POST', `${API}/tasks/8/notes`, { headers: { 'if-match': (await read(h, 8)).etag }, body: { text: 'Planning note' } });
  t.equal(note.status, 204, 'a note is a mutation: it bumps the workspace version');
  t.strictSame(await available(h), [8], 'the next plan sees the reservation');

  h.db.prepare('DELETE FROM incoming_items WHERE id = 501').run();
  h.clock.advance(59_000);
  t.strictSame(await available(h), [8], '59 s later, same version: the cached plan');
  h.clock.advance(1_000);
  t.strictSame(await available(h), [4, 1, 8, 3], '60 s after it was computed, the plan is recomputed');
});
