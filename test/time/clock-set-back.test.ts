import t from 'tap';
import { adaWorld, API, etagOf } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';
import { baseFixture, TOKENS, TWIN, withTwin } from '../helpers/fixture.js';
import { harness, type Harness } from '../helpers/service.js';
import { sourceWorld } from '../helpers/stub-tracker.js';
import { manualClock } from '../../lib/time/clock.js';

/**
 * A system clock can be stepped back (an NTP correction, a VM restored): the service's invariants
 * must not depend on time only moving forward: one live lease per task, sources refreshed (the
 * rate limit's count is test/auth/rate-limit.test.ts). And a clock with fractions of a
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

t.test('CLOCK SET BACK: a lease another claim has followed stays ended: renew and release give 409 claim_expired, and so does X-Task-Claim once no lease is live', async (t) => {
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

t.test('CLOCK: a clock answering fractions of a millisecond is read in whole milliseconds, so a lease ends at the expiresUtc it was shown', async (t) => {
  const base = manualClock('2026-11-16T10:00:00.000Z');
  let fraction = 0.25;
  const h = harness({ rateLimit: 100_000, serviceOptions: { clock: { now: () => base.now() + fraction } } });
  // The harness's own clock is not the service's here: `base` and `fraction` are what move.
  const as = { token: TOKENS.ada };
  const taskEtag = async () => (await h.call('GET', `${API}/tasks/1`, as)).headers['etag'] as string;
  const claimed = await h.call('POST', `${API}/tasks/1/claim`, { ...as, headers: { 'if-match': await taskEtag(), 'idempotency-key': nextKey() } });
  t.equal(claimed.status, 200);
  t.equal(claimed.json.expiresUtc, '2026-11-16T10:15:00.000Z');
  t.equal(h.db.prepare('SELECT expires_utc FROM claims WHERE token = ?').pluck().get(claimed.json.token), Date.parse('2026-11-16T10:15:00.000Z'),
    'stored in whole milliseconds');
  base.set('2026-11-16T10:15:00.000Z');
  fraction = 0.1;
  const renewed = await h.call('POST', `${API}/tasks/1/claim/renew`, {
    ...as, headers: { 'if-match': await taskEtag(), 'idempotency-key': nextKey() }, body: { token: claimed.json.token },
  });
  expectProblem(t, renewed, 'claim_expired', 'at the expiresUtc it was shown (plus 0.1 ms), the lease has expired');
});
