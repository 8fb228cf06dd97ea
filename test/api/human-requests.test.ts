import t from 'tap';
import type { Harness } from '../helpers/service.js';
import { baseFixture, LEASE_11, TOKENS, TWIN, withTwin } from '../helpers/fixture.js';
import { adaWorld, API, etagOf, expectCode, readTask, workspaceVersion } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';

/**
 * POST /tasks/{id}/human-requests (spec endpoint rules, contract 1 steps 7-11 and 8): scope,
 * task-write headers, body validation, defaults, the assignee rule, the 201 answer and what a
 * request does to its task.
 */

const GRACE = 11;
const VALID = { humanAssigneeId: GRACE, title: 'Check the headline', estimatedMinutes: 30 };

/** The shared world, a twin of Ada without human-requests:create, and a task linked to a source. */
function world(): Harness {
  const fixture = withTwin(baseFixture(), ['tasks:read', 'tasks:update', 'human-requests:read']);
  fixture.tasks.push({
    id: 30, projectId: 1, title: 'Linked to a ticket', sequence: 70, estimatedMinutes: 30, assignees: [{ staffMemberId: 10 }],
    sources: [{ providerKey: 'http', itemId: 'T-30', facts: { title: 'Ticket 30' } }],
  });
  return adaWorld({ fixture });
}

interface AskOptions {
  token?: string;
  key?: string;
  ifMatch?: string | null;
  claim?: string;
}

async function ask(h: Harness, taskId: number, body: unknown, options: AskOptions = {}) {
  const headers: Record<string, string> = {};
  const ifMatch = options.ifMatch === undefined ? await etagOf(h, taskId) : options.ifMatch;
  if (ifMatch !== null) headers['if-match'] = ifMatch;
  if (options.key !== undefined) headers['idempotency-key'] = options.key;
  if (options.claim !== undefined) headers['x-task-claim'] = options.claim;
  return h.call('POST', `${API}/tasks/${taskId}/human-requests`, {
    headers, body, ...(options.token === undefined ? {} : { token: options.token }),
  });
}

const count = (h: Harness, table: 'assistance_stages' | 'incoming_items'): number =>
  (h.db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;

t.test('human-requests:create is required (403 permission_denied without it)', async (t) => {
  const h = world();
  for (const [token, who] of [[TOKENS.readOnly, 'ada-reader'], [TWIN, 'ada-twin without the create scope']] as const) {
    const response = await ask(h, 1, VALID, { token, ifMatch: await etagOf(h, 1, token) });
    expectProblem(t, response, 'permission_denied', who);
  }
  t.equal(count(h, 'assistance_stages'), 0, 'nothing created');
  const created = await ask(h, 1, VALID);
  t.equal(created.status, 201, 'with the scope it is created');
});

t.test('If-Match is the task ETag: missing 428, malformed or stale 412 with the current ETag', async (t) => {
  const h = world();
  const before = await etagOf(h, 1);
  expectProblem(t, await ask(h, 1, VALID, { ifMatch: null }), 'precondition_required', 'missing');
  for (const bad of ['*', before.slice(1, -1), '"task-1-plan-x"', `W/${before}`]) {
    expectProblem(t, await ask(h, 1, VALID, { ifMatch: bad }), 'stale_update', `malformed ${bad}`);
  }
  expectProblem(t, await ask(h, 1, VALID, { ifMatch: '"task-2-plan-1"' }), 'stale_update', "another task's ETag");
  t.equal((await ask(h, 1, VALID, { ifMatch: before })).status, 201);
  const stale = await ask(h, 1, VALID, { ifMatch: before });
  expectProblem(t, stale, 'stale_update', 'stale');
  t.equal(stale.headers['etag'], await etagOf(h, 1), 'the 412 carries the current ETag');
  t.equal(count(h, 'assistance_stages'), 1, 'only the current If-Match created anything');
});

t.test('Idempotency-Key is optional; a replay returns the same 201 body and Location and creates nothing twice', async (t) => {
  const h = world();
  const without = await ask(h, 1, VALID);
  t.equal(without.status, 201, 'no key is fine');

  const versionBefore = workspaceVersion(h);
  const first = await ask(h, 1, VALID, { key: 'ask-1' });
  t.equal(first.status, 201);
  t.equal(workspaceVersion(h), versionBefore + 1);
  const replay = await ask(h, 1, VALID, { key: 'ask-1' });
  t.equal(replay.status, 201, 'replayed status');
  t.equal(replay.text, first.text, 'same body');
  t.equal(replay.headers['location'], first.headers['location'], 'same Location');
  t.equal(replay.headers['etag'], first.headers['etag'], 'same ETag');
  t.equal(replay.headers['idempotent-replayed'], 'true');
  t.equal(count(h, 'assistance_stages'), 2, 'two stages, not three');
  t.equal(count(h, 'incoming_items'), 2, 'two Incoming items, not three');
  t.equal(workspaceVersion(h), versionBefore + 1, 'the replay bumps nothing');

  const replayStale = await ask(h, 1, VALID, { key: 'ask-1', ifMatch: '"task-1-plan-1"' });
  t.equal(replayStale.status, 201, 'a stale but well-formed If-Match still replays');
  expectProblem(t, await ask(h, 1, VALID, { key: 'ask-1', ifMatch: null }), 'precondition_required', 'replay without If-Match');
  expectProblem(t, await ask(h, 1, { ...VALID, title: 'Another' }, { key: 'ask-1' }), 'idempotency_conflict', 'same key, other body');
  expectProblem(t, await ask(h, 1, VALID, { key: 'bad key!' }), 'idempotency_key_required', 'malformed key');
  t.equal(count(h, 'assistance_stages'), 2);
});

t.test('X-Task-Claim: under a live lease the lease token is required; with none, a sent token is claim_expired', async (t) => {
  const h = world();
  expectCode(t, await ask(h, 11, VALID), 409, 'task_claimed', 'live lease, no header');
  expectCode(t, await ask(h, 11, VALID, { claim: '2b1f4c3d-5e6f-4a7b-8c9d-0e1f2a3b4c5d' }), 409, 'task_claimed', 'live lease, other token');
  t.equal((await ask(h, 11, VALID, { claim: LEASE_11 })).status, 201, 'the live lease token');
  expectCode(t, await ask(h, 1, VALID, { claim: LEASE_11 }), 409, 'claim_expired', 'no live lease, a token sent');
  expectCode(t, await ask(h, 1, VALID, { claim: 'not-a-uuid' }), 400, 'validation_failed', 'malformed token');
  expectCode(t, await ask(h, 1, VALID, { claim: '00000000-0000-0000-0000-000000000000' }), 400, 'validation_failed', 'all-zero token');
  t.equal((await ask(h, 1, VALID)).status, 201, 'no lease, no header');
});

t.test('AssistanceCreate validation: required members, bounds, enums and unknown members are 400; a whitespace title is 422 invalid_field', async (t) => {
  const h = world();
  const { humanAssigneeId: _h, ...noAssignee } = VALID;
  const { title: _t, ...noTitle } = VALID;
  const { estimatedMinutes: _e, ...noMinutes } = VALID;
  const bad: [string, unknown][] = [
    ['missing humanAssigneeId', noAssignee],
    ['missing title', noTitle],
    ['missing estimatedMinutes', noMinutes],
    ['estimatedMinutes 0', { ...VALID, estimatedMinutes: 0 }],
    ['estimatedMinutes 1000001', { ...VALID, estimatedMinutes: 1000001 }],
    ['estimatedMinutes fractional', { ...VALID, estimatedMinutes: 1.5 }],
    ['title of 201 characters', { ...VALID, title: 'x'.repeat(201) }],
    ['empty title', { ...VALID, title: '' }],
    ['title starting with U+0000', { ...VALID, title: '\u0000 help' }],
    ['details holding U+0000', { ...VALID, details: 'a\u0000b' }],
    ['details over 20000', { ...VALID, details: 'd'.repeat(20001) }],
    ['humanAssigneeId 0', { ...VALID, humanAssigneeId: 0 }],
    ['humanAssigneeId as a string', { ...VALID, humanAssigneeId: '11' }],
    ['unknown member', { ...VALID, urgency: 'high' }],
    ['priority not in the enum', { ...VALID, priority: 'urgent' }],
    ['priority in another case', { ...VALID, priority: 'High' }],
    ['assistanceKind not in the enum', { ...VALID, assistanceKind: 'Help' }],
    ['isBlocking not a boolean', { ...VALID, isBlocking: 'yes' }],
    ['publishExternally null', { ...VALID, publishExternally: null }],
    ['null body', null],
  ];
  for (const [label, body] of bad) expectProblem(t, await ask(h, 1, body), 'validation_failed', label);
  expectProblem(t, await ask(h, 1, { ...VALID, title: ' \t\n ' }), 'invalid_field', 'whitespace-only title');
  t.equal(count(h, 'assistance_stages'), 0, 'nothing was created');

  const edges: [string, unknown][] = [
    ['estimatedMinutes 1', { ...VALID, estimatedMinutes: 1 }],
    ['estimatedMinutes 1000000', { ...VALID, estimatedMinutes: 1000000 }],
    ['title of 200 characters', { ...VALID, title: 'x'.repeat(200) }],
    ['details null', { ...VALID, details: null }],
    ['details of 20000', { ...VALID, details: 'd'.repeat(20000) }],
  ];
  for (const [label, body] of edges) t.equal((await ask(h, 1, body)).status, 201, label);
  for (const priority of ['critical', 'high', 'normal', 'low']) {
    t.equal((await ask(h, 1, { ...VALID, priority })).status, 201, `priority ${priority}`);
  }
  for (const assistanceKind of ['Question', 'Review', 'Approval', 'Action']) {
    const created = await ask(h, 1, { ...VALID, assistanceKind });
    const detail = await h.call('GET', `${API}/human-requests/${created.json.id}`);
    t.equal(detail.json.assistanceKind, assistanceKind, `assistanceKind ${assistanceKind} is stored`);
  }
});

t.test('defaults: priority normal, isBlocking true, assistanceKind Question, publishExternally false', async (t) => {
  const h = world();
  const created = await ask(h, 1, VALID);
  const detail = (await h.call('GET', `${API}/human-requests/${created.json.id}`)).json;
  t.equal(detail.priorityName, 'normal');
  t.equal(detail.isBlocking, true);
  t.equal(detail.isOutstandingBlocker, true);
  t.equal(detail.assistanceKind, 'Question');
  t.equal(detail.details, null, 'details default to null');
  const stored = h.db.prepare('SELECT publish_externally AS p FROM assistance_stages WHERE id = ?').get(created.json.id) as { p: number };
  t.equal(stored.p, 0, 'not published');

  const explicit = await ask(h, 1, { ...VALID, priority: 'critical', isBlocking: false, assistanceKind: 'Approval', publishExternally: false, details: 'Why' });
  const other = (await h.call('GET', `${API}/human-requests/${explicit.json.id}`)).json;
  t.match(other, { priorityName: 'critical', isBlocking: false, isOutstandingBlocker: false, assistanceKind: 'Approval', details: 'Why' });
});

t.test('publishExternally true needs a linked source: 422 invalid_field without one, accepted with one', async (t) => {
  const h = world();
  expectProblem(t, await ask(h, 1, { ...VALID, publishExternally: true }), 'invalid_field', 'task 1 has no source');
  t.equal(count(h, 'assistance_stages'), 0);
  const created = await ask(h, 30, { ...VALID, publishExternally: true });
  t.equal(created.status, 201, 'task 30 has a fixture source');
  const stored = h.db.prepare('SELECT publish_externally AS p FROM assistance_stages WHERE id = ?').get(created.json.id) as { p: number };
  t.equal(stored.p, 1);
});

t.test('humanAssigneeId must be an active human of the organisation (422 human_assignee_invalid)', async (t) => {
  const h = world();
  const cases: [number, string][] = [
    [10, 'an agent (Ada herself)'],
    [12, 'another agent'],
    [13, 'an inactive human'],
    [14, 'an inactive agent'],
    [21, 'a human of another organisation'],
    [30, 'a human of an inactive organisation'],
    [999, 'an unknown staff member'],
    [1, 'a task id'],
  ];
  const version = workspaceVersion(h);
  for (const [id, label] of cases) {
    expectProblem(t, await ask(h, 1, { ...VALID, humanAssigneeId: id }), 'human_assignee_invalid', label);
  }
  t.equal(count(h, 'assistance_stages'), 0);
  t.equal(workspaceVersion(h), version, 'refusals bump nothing');
});

t.test('201 body is exactly {id, originatingTaskId} with Location /api/v1/human-requests/{id} and the new task ETag', async (t) => {
  const h = world();
  const created = await ask(h, 1, VALID);
  t.equal(created.status, 201);
  t.strictSame(Object.keys(created.json).sort(), ['id', 'originatingTaskId']);
  t.equal(created.json.originatingTaskId, 1);
  t.ok(Number.isInteger(created.json.id));
  t.equal(created.headers['location'], `/api/v1/human-requests/${created.json.id}`);
  t.equal(created.headers['content-type'], 'application/json');
  t.equal(created.headers['etag'], await etagOf(h, 1), 'the ETag header is the task\'s new ETag');
  const detail = await h.call('GET', created.headers['location'] as string);
  t.equal(detail.status, 200, 'the Location can be read');
  t.equal(detail.json.stageId, created.json.id);
  t.not(detail.json.incomingId, created.json.id, 'the Incoming id is distinct from the stage id');
});

t.test('the stage id comes from the task id space: above every task id, and not a task', async (t) => {
  const h = world();
  const maxTask = (h.db.prepare('SELECT max(id) AS m FROM tasks').get() as { m: number }).m;
  const first = await ask(h, 1, VALID);
  const second = await ask(h, 2, VALID);
  t.ok(first.json.id > maxTask, `stage ${first.json.id} > task ${maxTask}`);
  t.ok(second.json.id > first.json.id);
  const kinds = h.db.prepare('SELECT kind FROM stages WHERE id IN (?, ?)').all(first.json.id, second.json.id) as { kind: string }[];
  t.strictSame(kinds.map((row) => row.kind), ['assistance', 'assistance']);
  expectProblem(t, await h.call('GET', `${API}/tasks/${first.json.id}`), 'task_not_found', 'GET /tasks/{stageId}');
  expectProblem(t, await ask(h, first.json.id, VALID, { ifMatch: `"task-${first.json.id}-plan-1"` }), 'task_not_found', 'asking from a stage');
});

t.test('a blocking request blocks its task (waiting with "human assistance", claim 409 task_blocked); a non-blocking one does not', async (t) => {
  const h = world();
  const available = (await h.call('GET', `${API}/tasks/available`)).json.map((task: { id: number }) => task.id);
  t.ok(available.includes(1) && available.includes(3), 'tasks 1 and 3 are offered before');

  t.equal((await ask(h, 3, { ...VALID, isBlocking: false })).status, 201);
  t.equal((await ask(h, 1, VALID)).status, 201);

  const task1 = await readTask(h, 1);
  t.equal(task1.blocked, true);
  t.strictSame(task1.blockingReasons, ['human assistance']);
  const task3 = await readTask(h, 3);
  t.equal(task3.blocked, false);
  t.strictSame(task3.blockingReasons, []);

  const waiting = (await h.call('GET', `${API}/tasks/waiting`)).json;
  const waiting1 = waiting.find((task: { id: number }) => task.id === 1);
  t.ok(waiting1, 'task 1 is waiting');
  t.strictSame(waiting1?.blockingReasons, ['human assistance']);
  t.notOk(waiting.some((task: { id: number }) => task.id === 3), 'task 3 is not waiting');
  const after = (await h.call('GET', `${API}/tasks/available`)).json.map((task: { id: number }) => task.id);
  t.notOk(after.includes(1), 'task 1 is no longer offered');
  t.ok(after.includes(3), 'task 3 still is');

  const claim = async (id: number) => h.call('POST', `${API}/tasks/${id}/claim`, {
    headers: { 'if-match': await etagOf(h, id), 'idempotency-key': `claim-${id}` },
  });
  expectProblem(t, await claim(1), 'task_blocked', 'claiming the blocked task');
  t.equal((await claim(3)).status, 200, 'the non-blocking request leaves task 3 claimable');
});

t.test('a request bumps the workspace version once: every task ETag of the organisation goes stale', async (t) => {
  const h = world();
  const version = workspaceVersion(h);
  const otherOrganisation = workspaceVersion(h, 2);
  const etag3 = await etagOf(h, 3);
  const created = await ask(h, 1, VALID);
  t.equal(workspaceVersion(h), version + 1);
  t.equal(created.headers['etag'], `"task-1-plan-${version + 1}"`);
  t.not(await etagOf(h, 3), etag3, 'another task\'s ETag changed too');
  expectProblem(t, await h.call('PATCH', `${API}/tasks/3`, { headers: { 'if-match': etag3 }, body: { sequence: 6 } }), 'stale_update', 'old ETag of task 3');
  t.equal(workspaceVersion(h, 2), otherOrganisation, 'the other organisation is untouched');
});

t.test('the target task is checked first: another organisation 404 task_not_found, assigned to others 403 task_not_owned', async (t) => {
  const h = world();
  expectProblem(t, await ask(h, 90, VALID, { ifMatch: '"task-90-plan-1"' }), 'task_not_found', 'Globex task');
  expectProblem(t, await ask(h, 7, VALID, { ifMatch: '"task-7-plan-1"' }), 'task_not_owned', "Bob's task");
  expectProblem(t, await ask(h, 4242, VALID, { ifMatch: '"task-4242-plan-1"' }), 'task_not_found', 'unknown task');
  t.equal(count(h, 'assistance_stages'), 0);
});
