import t from 'tap';
import { adaWorld, API, etagOf, patchTask, readTask } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';
import { baseFixture, DESK_TOKENS, TOKENS, TWIN, withDesks, withTwin } from '../helpers/fixture.js';
import { harness, type Harness } from '../helpers/service.js';
import { sourceWorld } from '../helpers/stub-tracker.js';
import { manualClock } from '../../lib/time/clock.js';

/**
 * A system clock can be stepped back (an NTP correction, a VM restored): the service's invariants
 * must not depend on time only moving forward. One live lease per task, sources refreshed, the
 * rate limit's count, a completion never before its start; and a clock with fractions of a
 * millisecond is read in whole ones.
 */

const MINUTE = 60_000;
let keys = 0;
const nextKey = () => `set-back-${(keys += 1)}`;

async function claim(h: Harness, id: number, token?: string) {
  return h.call('POST', `${API}/tasks/${id}/claim`, {
    headers: { 'if-match': await etagOf(h, id, token), 'idempotency-key': nextKey() },
    ...(token === undefined ? {} : { token }),
  });
}

async function lease(h: Harness, action: 'renew' | 'release', id: number, leaseToken: string, token?: string) {
  return h.call('POST', `${API}/tasks/${id}/claim/${action}`, {
    headers: { 'if-match': await etagOf(h, id, token), 'idempotency-key': nextKey() },
    body: { token: leaseToken },
    ...(token === undefined ? {} : { token }),
  });
}

async function noteUnder(h: Harness, id: number, leaseToken: string) {
  return h.call('POST', `${API}/tasks/${id}/notes`, {
    headers: { 'if-match': await etagOf(h, id), 'x-task-claim': leaseToken }, body: { text: 'under lease' },
  });
}

const liveLeases = (h: Harness, taskId: number): number =>
  (h.db.prepare('SELECT count(*) AS n FROM claims WHERE task_id = ? AND released_utc IS NULL AND expires_utc > ?')
    .get(taskId, h.clock.now()) as { n: number }).n;

t.test('CLOCK SET BACK: a lease another claim has followed stays ended: renew, release and X-Task-Claim give 409 claim_expired', async (t) => {
  const h = adaWorld({ fixture: withTwin(baseFixture(), ['tasks:read', 'tasks:update', 'tasks:notes']) });
  const first = await claim(h, 1);
  t.equal(first.status, 200);
  h.clock.set('2026-11-16T10:15:01.000Z');
  const second = await claim(h, 1, TWIN);
  t.equal(second.status, 200, 'ada-twin claims the expired lease\'s task');
  t.equal(h.db.prepare('SELECT released_utc AS r FROM claims WHERE token = ?').pluck().get(first.json.token),
    Date.parse('2026-11-16T10:15:00.000Z'), 'the first lease is recorded as ended at its expiry');

  // A step back of 3 s puts the first lease's expiry in the future again.
  h.clock.set('2026-11-16T10:14:58.000Z');
  t.equal(liveLeases(h, 1), 1, 'one live lease on the task');
  expectProblem(t, await lease(h, 'renew', 1, first.json.token), 'claim_expired', 'the followed lease cannot be renewed');
  expectProblem(t, await lease(h, 'release', 1, first.json.token), 'claim_expired', 'nor released');
  expectProblem(t, await noteUnder(h, 1, first.json.token), 'task_claimed', 'ada-twin\'s lease is the live one');

  t.equal((await lease(h, 'release', 1, second.json.token, TWIN)).status, 200, 'ada-twin releases');
  expectProblem(t, await noteUnder(h, 1, first.json.token), 'claim_expired', 'the first lease did not come back');
  t.equal(liveLeases(h, 1), 0);
  t.equal((await claim(h, 1)).status, 200, 'the task can be claimed again');
});

t.test('CLOCK SET BACK: a source item last tried after now is refreshed, not trusted or its failure remembered', async (t) => {
  const { h, stub } = await sourceWorld(t);
  const offered = async () => ((await h.call('GET', `${API}/tasks/available`)).json as { id: number }[]).map((task) => task.id);
  t.strictSame(await offered(), [4, 1, 8, 3]);
  h.clock.advance(15_001);
  stub.failRefresh('T-1', { kind: 'status', status: 500 });
  t.strictSame(await offered(), [4, 8, 3], 'task 1 is left out while its source fails');
  t.equal(stub.gets('T-1').length, 2);

  stub.failRefresh('T-1', null);
  h.clock.advance(-60 * MINUTE);
  t.strictSame(await offered(), [4, 1, 8, 3], 'an hour back, the failure is not remembered for the hour');
  t.equal(stub.gets('T-1').length, 3, 'the item was asked again');
  t.strictSame(await offered(), [4, 1, 8, 3]);
  t.equal(stub.gets('T-1').length, 3, 'and its refresh counts from the new now');
  h.clock.advance(15_001);
  await offered();
  t.equal(stub.gets('T-1').length, 4, 'stale again 15 s later');
});

t.test('CLOCK SET BACK: a task completed after a step back is not completed before it started', async (t) => {
  const h = adaWorld();
  t.equal((await patchTask(h, 1, { status: 'InProgress' })).status, 204);
  h.clock.advance(-60 * MINUTE);
  t.equal((await patchTask(h, 1, { status: 'Done' })).status, 204);
  const task = await readTask(h, 1);
  t.equal(task.startedAt, '2026-11-16T10:00:00');
  t.equal(task.completedAt, '2026-11-16T10:00:00', 'completedAt is its start, not the hour before it');
});

t.test('CLOCK SET BACK: an Incoming item completed after a step back is not completed before it started', async (t) => {
  const h = adaWorld({ fixture: withDesks(baseFixture()) });
  const asked = await h.call('POST', `${API}/tasks/1/human-requests`, {
    headers: { 'if-match': await etagOf(h, 1) }, body: { humanAssigneeId: 11, title: 'Help', estimatedMinutes: 30 },
  });
  t.equal(asked.status, 201);
  const incomingId = (await h.call('GET', `${API}/human-requests/${asked.json.id}`)).json.incomingId as number;
  const act = (action: string, body?: unknown) => {
    const revision = h.db.prepare('SELECT revision FROM incoming_items WHERE id = ?').pluck().get(incomingId) as string;
    return h.call('POST', `${API}/incoming/${incomingId}/${action}`, {
      token: DESK_TOKENS.grace, headers: { 'if-match': `"${revision}"`, 'idempotency-key': nextKey() }, ...(body === undefined ? {} : { body }),
    });
  };
  t.equal((await act('start')).status, 204);
  h.clock.advance(-2 * 60 * MINUTE);
  t.equal((await act('complete', { response: 'Done' })).status, 204);
  const row = h.db.prepare('SELECT actual_start_utc AS started, completed_utc AS completed, responded_at_utc AS responded FROM incoming_items WHERE id = ?')
    .get(incomingId) as { started: number; completed: number; responded: number };
  t.equal(row.started, Date.parse('2026-11-16T10:00:00.000Z'));
  t.equal(row.completed, row.started, 'completed when it started, not two hours before');
  t.equal(row.responded, row.started, 'and answered then');
  const stage = (await h.call('GET', `${API}/human-requests/${asked.json.id}`)).json;
  t.equal(stage.respondedAtUtc, '2026-11-16T10:00:00.000Z');
});

t.test('CLOCK: a clock answering fractions of a millisecond is read in whole milliseconds', async (t) => {
  const base = manualClock('2026-11-16T10:00:00.000Z');
  const fraction = { now: () => base.now() + 0.75 };
  const h = harness({ rateLimit: 100_000, serviceOptions: { clock: fraction } });
  // The harness's own clock is not the service's here: `base` is what moves.
  const as = { token: TOKENS.ada };
  const taskEtag = async () => (await h.call('GET', `${API}/tasks/1`, as)).headers['etag'] as string;
  const claimed = await h.call('POST', `${API}/tasks/1/claim`, { ...as, headers: { 'if-match': await taskEtag(), 'idempotency-key': nextKey() } });
  t.equal(claimed.status, 200);
  t.equal(claimed.json.expiresUtc, '2026-11-16T10:15:00.000Z');
  t.equal(h.db.prepare('SELECT expires_utc FROM claims WHERE token = ?').pluck().get(claimed.json.token), Date.parse('2026-11-16T10:15:00.000Z'),
    'stored in whole milliseconds');
  base.set('2026-11-16T10:15:00.000Z');
  const renewed = await h.call('POST', `${API}/tasks/1/claim/renew`, {
    ...as, headers: { 'if-match': await taskEtag(), 'idempotency-key': nextKey() }, body: { token: claimed.json.token },
  });
  expectProblem(t, renewed, 'claim_expired', 'at the expiresUtc it was given (plus 0.75 ms), the lease has expired');
});
