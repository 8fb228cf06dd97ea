import t from 'tap';
import type { Harness } from '../helpers/service.js';
import { baseFixture } from '../helpers/fixture.js';
import { adaWorld, API, etagOf, expectCode, readTask } from '../helpers/api.js';

/**
 * The whole assistance story through handle() (spec "What the service does", contract 5 and 8):
 * an agent asks a human for help, the human plans, starts and completes the item, the agent
 * evaluates the response (keep waiting, follow up, resolve), and only then can finish its task.
 */

const GRACE_TOKEN = 'wta_test_grace_desk';
const MINUTE = 60_000;

function world(): Harness {
  const fixture = baseFixture();
  fixture.clients.push({
    id: 110, organisationId: 1, name: 'grace-desk', token: GRACE_TOKEN, sponsorId: 11, resourceId: 11, isActive: true,
    scopes: ['tasks:read', 'tasks:update'],
  });
  return adaWorld({ fixture });
}

let keys = 0;
const nextKey = (what: string) => `${what}-${(keys += 1)}`;

t.test('the assistance story: ask, plan, start, complete, keepwaiting, complete, followup, complete, resolve, finish', async (t) => {
  const h = world();
  const TASK = 1;

  // --- The agent asks (blocking by default).
  const asked = await h.call('POST', `${API}/tasks/${TASK}/human-requests`, {
    headers: { 'if-match': await etagOf(h, TASK), 'idempotency-key': nextKey('ask') },
    body: { humanAssigneeId: 11, title: 'Which headline?', details: 'A or B?', estimatedMinutes: 20, assistanceKind: 'Question' },
  });
  t.equal(asked.status, 201, 'asked');
  const stageId = asked.json.id as number;
  const request = async () => (await h.call('GET', `${API}/human-requests/${stageId}`)).json;
  const incomingId = (await request()).incomingId as number;

  let task = await readTask(h, TASK);
  t.equal(task.blocked, true, 'the task is blocked');
  t.strictSame(task.blockingReasons, ['human assistance']);
  t.equal(task.requiresAttention, false, 'nothing to evaluate yet');
  t.ok((await h.call('GET', `${API}/tasks/waiting`)).json.some((entry: { id: number }) => entry.id === TASK), 'waiting');

  // --- The human's client sees the floating item.
  const incoming = async (query = '') => (await h.call('GET', `${API}/incoming${query}`, { token: GRACE_TOKEN })).json;
  const floating = await incoming();
  t.equal(floating.length, 1);
  t.match(floating[0], { id: incomingId, title: 'Which headline?', details: 'A or B?', status: 'floating', requester: 'Ada', suggestedStart: '2026-11-16T10:00:00' });

  const humanAct = async (action: string, body?: unknown) => {
    const item = (await incoming('?includeAccepted=true')).find((entry: { id: number }) => entry.id === incomingId);
    const response = await h.call('POST', `${API}/incoming/${incomingId}/${action}`, {
      token: GRACE_TOKEN, headers: { 'if-match': item.etag, 'idempotency-key': nextKey(action) },
      ...(body === undefined ? {} : { body }),
    });
    t.equal(response.status, 204, `Grace: ${action}`);
    return response;
  };

  // --- Plans it, starts it, completes it with a response.
  await humanAct('plan', { plannedStart: '2026-11-16T11:00:00' });
  t.strictSame(await incoming(), [], 'accepted items leave the default list');
  t.match(await request(), { lifecycle: 'planned', status: 'Ready' });
  h.clock.advance(60 * MINUTE);
  await humanAct('start');
  t.match(await request(), { lifecycle: 'inprogress', status: 'InProgress', actualStartUtc: '2026-11-16T11:00:00.000Z' });
  h.clock.advance(10 * MINUTE);
  await humanAct('complete', { response: 'Headline A' });

  // --- The agent's task shows the response awaiting evaluation.
  task = await readTask(h, TASK);
  let current = await request();
  t.match(current, { lifecycle: 'completed', status: 'Done', responseState: 'responded', response: 'Headline A', respondedAtUtc: '2026-11-16T11:10:00.000Z' });
  t.strictSame(task.responsesAwaitingEvaluation, [{
    id: incomingId, assistanceStageId: stageId, assistanceKind: 'Question', response: 'Headline A',
    respondedAtUtc: '2026-11-16T11:10:00.000Z', revision: current.incomingRevision,
  }]);
  t.equal(task.requiresAttention, true);
  t.equal(task.blocked, true, 'a reply alone does not resolve the blocker');
  const waiting = (await h.call('GET', `${API}/tasks/waiting`)).json.find((entry: { id: number }) => entry.id === TASK);
  t.equal(waiting?.requiresAttention, true, 'the waiting list shows it too');

  const evaluate = async (body: Record<string, unknown>) => h.call('POST', `${API}/tasks/${TASK}/external-evaluation`, {
    headers: { 'if-match': await etagOf(h, TASK), 'idempotency-key': nextKey('evaluate') }, body,
  });
  const finish = async () => h.call('PATCH', `${API}/tasks/${TASK}`, {
    headers: { 'if-match': await etagOf(h, TASK) }, body: { status: 'Done' },
  });

  // Before the resolve the task cannot be finished.
  expectCode(t, await finish(), 409, 'task_blocked', 'Done with a responded but unresolved blocker');

  // --- keepwaiting reopens it.
  t.equal((await evaluate({ decision: 'keepwaiting', incomingId, revision: current.incomingRevision })).status, 204, 'keepwaiting');
  current = await request();
  t.match(current, { responseState: 'open', lifecycle: 'inprogress', status: 'InProgress', completedUtc: null, isOutstandingBlocker: true });
  task = await readTask(h, TASK);
  t.equal(task.blocked, true, 'still blocked');
  t.strictSame(task.blockingReasons, ['human assistance']);
  t.strictSame(task.responsesAwaitingEvaluation, []);
  t.equal(task.requiresAttention, false);
  t.match((await incoming('?includeAccepted=true'))[0], { status: 'inprogress', responseState: 'open' }, 'Grace sees it in progress again');
  expectCode(t, await finish(), 409, 'task_blocked', 'Done after keepwaiting');

  // --- The human completes again.
  h.clock.advance(5 * MINUTE);
  await humanAct('complete', { response: 'Headline A, definitely' });
  current = await request();
  t.match(current, { responseState: 'responded', lifecycle: 'completed', response: 'Headline A, definitely', respondedAtUtc: '2026-11-16T11:15:00.000Z' });

  // --- followup asks again: the message joins the details.
  t.equal((await evaluate({ decision: 'followup', incomingId, revision: current.incomingRevision, message: 'Which font size?' })).status, 204, 'followup');
  current = await request();
  t.equal(current.responseState, 'open');
  t.equal(current.lifecycle, 'inprogress');
  t.match(current.details, /^A or B\?/, 'the original question stays');
  t.match(current.details, /Which font size\?/, 'the follow-up message is appended');
  t.equal((await incoming('?includeAccepted=true'))[0].details, current.details, 'Grace sees the new question');
  task = await readTask(h, TASK);
  t.equal(task.blocked, true);
  t.strictSame(task.responsesAwaitingEvaluation, []);

  // --- A second response, resolved.
  h.clock.advance(5 * MINUTE);
  await humanAct('complete', { response: '14 pt' });
  current = await request();
  t.match(current, { responseState: 'responded', response: '14 pt' });
  task = await readTask(h, TASK);
  t.equal(task.responsesAwaitingEvaluation.length, 1);
  t.equal(task.responsesAwaitingEvaluation[0].response, '14 pt');
  expectCode(t, await finish(), 409, 'task_blocked', 'Done before the resolve');

  t.equal((await evaluate({ decision: 'resolve', incomingId, revision: current.incomingRevision })).status, 204, 'resolve');
  current = await request();
  t.match(current, { responseState: 'resolved', lifecycle: 'completed', status: 'Done', isOutstandingBlocker: false, response: '14 pt' });
  task = await readTask(h, TASK);
  t.equal(task.blocked, false, 'unblocked');
  t.strictSame(task.blockingReasons, []);
  t.strictSame(task.responsesAwaitingEvaluation, []);
  t.equal(task.requiresAttention, false);
  t.notOk((await h.call('GET', `${API}/tasks/waiting`)).json.some((entry: { id: number }) => entry.id === TASK), 'no longer waiting');
  t.ok((await h.call('GET', `${API}/tasks/available`)).json.some((entry: { id: number }) => entry.id === TASK), 'offered again');

  // A resolved request cannot be evaluated again.
  expectCode(t, await evaluate({ decision: 'keepwaiting', incomingId, revision: current.incomingRevision }), 409, 'request_completed', 'keepwaiting after resolve');

  // --- Finishing the task now succeeds.
  const done = await finish();
  t.equal(done.status, 204, 'PATCH status Done');
  task = await readTask(h, TASK);
  t.equal(task.status, 'Done');
  t.equal(task.completedAt, '2026-11-16T11:20:00');
  t.equal(task.humanRequests[0].responseState, 'resolved');
});
