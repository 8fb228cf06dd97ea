import t from 'tap';
import type { Harness } from '../helpers/service.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';
import { adaWorld, API, etagOf, readTask } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';

/**
 * GET /human-requests/{id} (spec HumanRequest and endpoint rules, contract 1 step 7 and 8): every
 * field, the lifecycle-to-status mapping as the human acts, scope, not-found and ownership.
 */

const GRACE_TOKEN = 'wta_test_grace_desk';
const GAIL_TOKEN = 'wta_test_gail_desk';
const NOW = '2026-11-16T10:00:00.000Z';
const MINUTE = 60_000;

/** The shared world plus Grace's desk client (staff 11) and Gail's (staff 21, Globex). */
function world(): Harness {
  const fixture = baseFixture();
  fixture.clients.push(
    { id: 110, organisationId: 1, name: 'grace-desk', token: GRACE_TOKEN, sponsorId: 11, resourceId: 11, isActive: true, scopes: ['tasks:read', 'tasks:update'] },
    { id: 111, organisationId: 2, name: 'gail-desk', token: GAIL_TOKEN, sponsorId: 21, resourceId: 21, isActive: true, scopes: ['tasks:read', 'tasks:update'] },
  );
  return adaWorld({ fixture });
}

async function ask(h: Harness, taskId: number, body: Record<string, unknown>, token?: string) {
  const response = await h.call('POST', `${API}/tasks/${taskId}/human-requests`, {
    headers: { 'if-match': await etagOf(h, taskId, token) }, body, ...(token === undefined ? {} : { token }),
  });
  if (response.status !== 201) throw new Error(`ask gave ${response.status} ${response.text}`);
  return response.json as { id: number; originatingTaskId: number };
}

const detail = (h: Harness, stageId: number, token?: string) =>
  h.call('GET', `${API}/human-requests/${stageId}`, token === undefined ? {} : { token });

/** An Incoming action as Grace, with the item's current etag from her list. */
async function act(h: Harness, incomingId: number, action: string, body?: unknown, token = GRACE_TOKEN) {
  const list = await h.call('GET', `${API}/incoming?includeAccepted=true`, { token });
  const item = list.json.find((entry: { id: number }) => entry.id === incomingId);
  if (item === undefined) throw new Error(`incoming ${incomingId} not listed`);
  const response = await h.call('POST', `${API}/incoming/${incomingId}/${action}`, {
    token, headers: { 'if-match': item.etag, 'idempotency-key': `${action}-${incomingId}-${h.clock.now()}` },
    ...(body === undefined ? {} : { body }),
  });
  if (response.status !== 204) throw new Error(`${action} gave ${response.status} ${response.text}`);
  return response;
}

t.test('every HumanRequest field carries the right value', async (t) => {
  const h = world();
  const created = await ask(h, 1, {
    humanAssigneeId: 11, title: 'Check the headline', details: 'Is the tone right?', estimatedMinutes: 25,
    priority: 'high', assistanceKind: 'Review',
  });
  const response = await detail(h, created.id);
  t.equal(response.status, 200);
  t.equal(response.headers['content-type'], 'application/json');
  const body = response.json;
  const incoming = (await h.call('GET', `${API}/incoming`, { token: GRACE_TOKEN })).json[0];
  t.strictSame(body, {
    stageId: created.id,
    requestedForStageId: 1,
    incomingId: incoming.id,
    requestedByApiClientId: 100,
    requestedByStaffMemberId: 10,
    assignedHumanId: 11,
    assignedHumanName: 'Grace',
    requestedByName: 'Ada',
    originTitle: 'Write copy',
    title: 'Check the headline',
    details: 'Is the tone right?',
    estimatedMinutes: 25,
    remainingMinutes: 25,
    status: 'Ready',
    isBlocking: true,
    isOutstandingBlocker: true,
    response: null,
    createdUtc: NOW,
    completedUtc: null,
    lifecycle: 'floating',
    priorityName: 'high',
    responseState: 'open',
    actualStartUtc: null,
    actualEffortMinutes: null,
    incomingRevision: incoming.etag.slice(1, -1),
    respondedAtUtc: null,
    assistanceKind: 'Review',
  });
  t.not(body.incomingId, body.stageId, 'incomingId is distinct from stageId');
  t.equal(`"${body.incomingRevision}"`, incoming.etag, 'incomingRevision is the bare Incoming etag');
  t.match(body.incomingRevision, /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
});

t.test('status follows the lifecycle: floating and planned Ready, inprogress InProgress, completed Done', async (t) => {
  const h = world();
  const created = await ask(h, 1, { humanAssigneeId: 11, title: 'Approve', estimatedMinutes: 40 });
  const incomingId = (await detail(h, created.id)).json.incomingId as number;
  const seen = async () => (await detail(h, created.id)).json;

  t.match(await seen(), { lifecycle: 'floating', status: 'Ready' });
  await act(h, incomingId, 'plan', { plannedStart: '2026-11-16T14:00:00' });
  const planned = await seen();
  t.match(planned, { lifecycle: 'planned', status: 'Ready', actualStartUtc: null, completedUtc: null });

  h.clock.advance(5 * MINUTE);
  await act(h, incomingId, 'start');
  const started = await seen();
  t.match(started, { lifecycle: 'inprogress', status: 'InProgress', actualStartUtc: '2026-11-16T10:05:00.000Z', actualEffortMinutes: null });
  t.not(started.incomingRevision, planned.incomingRevision, 'a new revision on every change');

  h.clock.advance(10 * MINUTE);
  await act(h, incomingId, 'complete', { response: 'Approved' });
  const done = await seen();
  t.match(done, {
    lifecycle: 'completed', status: 'Done', response: 'Approved', responseState: 'responded',
    completedUtc: '2026-11-16T10:15:00.000Z', respondedAtUtc: '2026-11-16T10:15:00.000Z',
    actualStartUtc: '2026-11-16T10:05:00.000Z', actualEffortMinutes: null, createdUtc: NOW,
    isOutstandingBlocker: true, remainingMinutes: 0,
  });
  t.ok(Number.isInteger(done.remainingMinutes));
});

t.test('remainingMinutes of a request in progress falls by the recipient\'s working time since it started, as her plan reserves', async (t) => {
  const h = world();
  const created = await ask(h, 1, { humanAssigneeId: 11, title: 'Approve', estimatedMinutes: 90 });
  const incomingId = (await detail(h, created.id)).json.incomingId as number;
  const remaining = async () => {
    const fromDetail = (await detail(h, created.id)).json.remainingMinutes as number;
    const fromTask = (await readTask(h, 1)).humanRequests.find((request: { stageId: number }) => request.stageId === created.id).remainingMinutes;
    t.equal(fromTask, fromDetail, 'the task view says the same');
    return fromDetail;
  };
  t.equal(await remaining(), 90, 'floating: the estimate');
  await act(h, incomingId, 'plan', { plannedStart: '2026-11-16T14:00:00' });
  t.equal(await remaining(), 90, 'planned: still the estimate');
  await act(h, incomingId, 'start');
  t.equal(await remaining(), 90, 'just started (10:00)');
  h.clock.advance(25 * MINUTE + 30_000);
  t.equal(await remaining(), 65, 'after 25.5 working minutes: whole minutes elapsed, so 65 (the task read is not served stale from the cache)');
  h.clock.set('2026-11-16T16:50:00.000Z');
  t.equal(await remaining(), 0, 'past the estimate: 0, never negative');
});

t.test('remainingMinutes of a request in progress counts only the recipient\'s working time', async (t) => {
  const h = world();
  const created = await ask(h, 1, { humanAssigneeId: 11, title: 'Approve', estimatedMinutes: 120 });
  const incomingId = (await detail(h, created.id)).json.incomingId as number;
  h.clock.set('2026-11-16T16:30:00.000Z');
  await act(h, incomingId, 'start');
  h.clock.set('2026-11-17T09:15:00.000Z');
  t.equal((await detail(h, created.id)).json.remainingMinutes, 120 - 30 - 15, 'the evening and night are not working time (Monday-Friday 09:00-17:00)');
});

t.test('the detail equals the element of the task\'s humanRequests', async (t) => {
  const h = world();
  const first = await ask(h, 1, { humanAssigneeId: 11, title: 'First', estimatedMinutes: 10, isBlocking: false });
  const second = await ask(h, 1, { humanAssigneeId: 11, title: 'Second', estimatedMinutes: 20, priority: 'low', details: 'More' });
  await act(h, (await detail(h, second.id)).json.incomingId, 'start');
  const task = await readTask(h, 1);
  t.equal(task.humanRequests.length, 2);
  for (const stage of [first, second]) {
    const own = (await detail(h, stage.id)).json;
    const element = task.humanRequests.find((request: { stageId: number }) => request.stageId === stage.id);
    t.strictSame(element, own, `stage ${stage.id}`);
  }
});

t.test('human-requests:read is required (403 permission_denied)', async (t) => {
  const h = world();
  const created = await ask(h, 1, { humanAssigneeId: 11, title: 'Check', estimatedMinutes: 10 });
  expectProblem(t, await detail(h, created.id, TOKENS.readOnly), 'permission_denied', 'ada-reader (tasks:read only)');
  expectProblem(t, await detail(h, created.id, GRACE_TOKEN), 'permission_denied', 'grace-desk (no human-requests:read)');
  expectProblem(t, await detail(h, created.id, TOKENS.identityOnly), 'permission_denied', 'identity-only client');
});

t.test('a missing or other-organisation stage is 404 request_not_found; a task id used as a stage id too', async (t) => {
  const h = world();
  const globex = await ask(h, 90, { humanAssigneeId: 21, title: 'Globex question', estimatedMinutes: 10 }, TOKENS.otherOrg);
  t.equal((await detail(h, globex.id, TOKENS.otherOrg)).status, 200, 'Globex reads its own stage');
  expectProblem(t, await detail(h, globex.id), 'request_not_found', 'a Globex stage read by Acme');
  expectProblem(t, await detail(h, 987654), 'request_not_found', 'a missing stage');
  expectProblem(t, await detail(h, 1), 'request_not_found', 'task 1 as a stage id');
  expectProblem(t, await detail(h, 7), 'request_not_found', "Bob's task 7 as a stage id");
  expectProblem(t, await detail(h, 90), 'request_not_found', 'the Globex task as a stage id');
  expectProblem(t, await detail(h, 0), 'validation_failed', 'id 0');
  expectProblem(t, await detail(h, 2147483648), 'validation_failed', 'id over int32');
});

t.test('a stage whose originating task is (or has been reassigned to) someone else is 403 task_not_owned', async (t) => {
  const h = world();
  const created = await ask(h, 1, { humanAssigneeId: 11, title: 'Check', estimatedMinutes: 10 });
  expectProblem(t, await detail(h, created.id, TOKENS.bob), 'task_not_owned', 'bob-bot reads a stage of Ada\'s task');

  h.db.prepare('UPDATE task_assignments SET staff_id = 12 WHERE task_id = 1 AND staff_id = 10').run();
  expectProblem(t, await detail(h, created.id), 'task_not_owned', 'Ada, after task 1 was reassigned to Bob');
  t.equal((await detail(h, created.id, TOKENS.bob)).status, 200, 'Bob now owns the originating task');

  // A collaboration task is owned by each of its assignees.
  const shared = await ask(h, 4, { humanAssigneeId: 11, title: 'On the outage', estimatedMinutes: 10 });
  t.equal((await detail(h, shared.id, TOKENS.bob)).status, 200, 'co-assignee Bob');
  h.db.prepare('DELETE FROM task_assignments WHERE task_id = 4 AND staff_id = 10').run();
  expectProblem(t, await detail(h, shared.id), 'task_not_owned', 'Ada, removed from task 4');
});
