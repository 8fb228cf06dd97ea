import t, { type Test } from 'tap';
import { harness, type CallResult, type Harness } from '../helpers/service.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';
import type { ProviderItem, SourceProvider } from '../../lib/sources/provider.js';
import { expectProblem } from '../helpers/expect-problem.js';

// Contract 10 and step 4 of contract 1, through the real handle(), with rateLimit 3.

const POLICY = '"default";q=3;w=60';
const rate = (remaining: number, seconds: number) => `"default";r=${remaining};t=${seconds}`;

t.test('RATE: requests 1-3 are served with RateLimit-Policy and a RateLimit counting down', async (t) => {
  const h = harness({ rateLimit: 3, defaultToken: TOKENS.ada });
  for (const remaining of [2, 1, 0]) {
    const response = await h.call('GET', '/api/v1/identity');
    t.equal(response.status, 200);
    t.equal(response.headers['ratelimit-policy'], POLICY);
    t.equal(response.headers['ratelimit'], rate(remaining, 60), `r=${remaining}, t=60 at the window start`);
  }
});

t.test('RATE: t counts the whole seconds left in the window', async (t) => {
  const h = harness({ rateLimit: 3, defaultToken: TOKENS.ada });
  t.equal((await h.call('GET', '/api/v1/identity')).headers['ratelimit'], rate(2, 60));
  h.clock.advance(10_000);
  t.equal((await h.call('GET', '/api/v1/identity')).headers['ratelimit'], rate(1, 50));
  h.clock.advance(500);
  t.equal((await h.call('GET', '/api/v1/identity')).headers['ratelimit'], rate(0, 50), '49.5 s left rounds up to 50');
  h.clock.advance(300);
  t.equal((await h.call('GET', '/api/v1/identity')).headers['ratelimit'], rate(0, 50), '49.2 s left rounds up to 50, not to the nearest 49');
});

t.test('RATE: the 4th request is 429 rate_limited with Retry-After = whole seconds to the window end', async (t) => {
  const h = harness({ rateLimit: 3, defaultToken: TOKENS.ada });
  for (let i = 0; i < 3; i++) t.equal((await h.call('GET', '/api/v1/identity')).status, 200);
  h.clock.advance(15_500);
  const limited = await h.call('GET', '/api/v1/identity');
  expectProblem(t, limited, 'rate_limited');
  t.equal(limited.headers['retry-after'], '45', 'Retry-After: 45 (44.5 s rounded up)');
  t.equal(limited.headers['ratelimit-policy'], POLICY);
  t.equal(limited.headers['ratelimit'], rate(0, 45));
  h.clock.advance(300);
  const early = await h.call('GET', '/api/v1/identity');
  t.equal(early.headers['retry-after'], '45', 'Retry-After: 45 (44.2 s rounded up, not to the nearest 44)');
  h.clock.advance(44_199);
  const last = await h.call('GET', '/api/v1/identity');
  expectProblem(t, last, 'rate_limited', 'one millisecond before the window end');
  t.equal(last.headers['retry-after'], '1', 'Retry-After is at least 1');
});

t.test('RATE: errors count (a 404 task read counts)', async (t) => {
  const h = harness({ rateLimit: 3, defaultToken: TOKENS.ada });
  const missing = await h.call('GET', '/api/v1/tasks/999');
  expectProblem(t, missing, 'task_not_found');
  t.equal(missing.headers['ratelimit'], rate(2, 60), 'the 404 used one request');
  const badQuery = await h.call('GET', '/api/v1/tasks/available?x=1');
  expectProblem(t, badQuery, 'validation_failed');
  t.equal(badQuery.headers['ratelimit'], rate(1, 60), 'the 400 used one request');
  t.equal((await h.call('GET', '/api/v1/identity')).headers['ratelimit'], rate(0, 60));
  expectProblem(t, await h.call('GET', '/api/v1/identity'), 'rate_limited');
});

t.test('RATE: rejected 429s do not count', async (t) => {
  const h = harness({ rateLimit: 3, defaultToken: TOKENS.ada });
  for (let i = 0; i < 3; i++) await h.call('GET', '/api/v1/identity');
  for (let i = 0; i < 5; i++) {
    const limited = await h.call('GET', '/api/v1/identity');
    expectProblem(t, limited, 'rate_limited', `rejection ${i + 1}`);
    t.equal(limited.headers['ratelimit'], rate(0, 60), 'remaining stays 0');
  }
  h.clock.advance(60_000);
  // Had the rejections counted, the new window would not start with its full quota.
  const fresh = await h.call('GET', '/api/v1/identity');
  t.equal(fresh.status, 200);
  t.equal(fresh.headers['ratelimit'], rate(2, 60));
});

t.test('RATE: the window restarts 60 s after its first request', async (t) => {
  const h = harness({ rateLimit: 3, defaultToken: TOKENS.ada });
  await h.call('GET', '/api/v1/identity');
  h.clock.advance(20_000);
  await h.call('GET', '/api/v1/identity');
  await h.call('GET', '/api/v1/identity');
  h.clock.advance(39_999);
  expectProblem(t, await h.call('GET', '/api/v1/identity'), 'rate_limited', '59.999 s after the first request');
  h.clock.advance(1);
  const next = await h.call('GET', '/api/v1/identity');
  t.equal(next.status, 200, '60 s after the first request');
  t.equal(next.headers['ratelimit'], rate(2, 60), 'a new window, started by this request');
  h.clock.advance(30_000);
  t.equal((await h.call('GET', '/api/v1/identity')).headers['ratelimit'], rate(1, 30));
});

t.test('RATE: a different client has its own window', async (t) => {
  const h = harness({ rateLimit: 3, defaultToken: TOKENS.ada });
  for (let i = 0; i < 3; i++) await h.call('GET', '/api/v1/identity');
  expectProblem(t, await h.call('GET', '/api/v1/identity'), 'rate_limited', 'ada is limited');
  h.clock.advance(30_000);
  const other = await h.call('GET', '/api/v1/identity', { token: TOKENS.readOnly });
  t.equal(other.status, 200, 'another client of the same resource is served');
  t.equal(other.headers['ratelimit'], rate(2, 60), 'its window starts with its own first request');
  const limited = await h.call('GET', '/api/v1/identity');
  t.equal(limited.headers['retry-after'], '30', "ada's window is unchanged");
});

t.test('RATE: unauthenticated requests do not count and carry no RateLimit fields', async (t) => {
  const h = harness({ rateLimit: 3, defaultToken: TOKENS.ada });
  const refused = [
    await h.call('GET', '/api/v1/nope'),
    await h.call('DELETE', '/api/v1/tasks/1'),
    await h.call('GET', '/api/v1/identity', { headers: { 'content-length': '200000' } }),
    await h.call('GET', '/api/v1/identity', { token: 'wta_unknown' }),
    await h.call('GET', '/api/v1/identity', { token: TOKENS.revoked }),
    await h.call('GET', '/api/v1/openapi.json'),
  ];
  for (const response of refused) {
    t.equal(response.headers['ratelimit'], undefined, `${response.status}: no RateLimit`);
    t.equal(response.headers['ratelimit-policy'], undefined, `${response.status}: no RateLimit-Policy`);
  }
  t.equal((await h.call('GET', '/api/v1/identity')).headers['ratelimit'], rate(2, 60), 'the quota is untouched');
});

t.test('RATE: the rate limit comes before scope and request shape', async (t) => {
  const h = harness({ rateLimit: 3, defaultToken: TOKENS.identityOnly });
  for (let i = 0; i < 3; i++) await h.call('GET', '/api/v1/identity');
  expectProblem(t, await h.call('GET', '/api/v1/tasks/1'), 'rate_limited', 'instead of 403');
  expectProblem(t, await h.call('GET', '/api/v1/identity?x=1'), 'rate_limited', 'instead of 400');
  // Authentication comes first: a limited client's bad token is still 401.
  expectProblem(t, await h.call('GET', '/api/v1/identity', { token: 'wta_unknown' }), 'authentication_failed');
});

t.test('RATE: the default policy is 120 requests per 60 s', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const response = await h.call('GET', '/api/v1/identity');
  t.equal(response.headers['ratelimit-policy'], '"default";q=120;w=60');
  t.equal(response.headers['ratelimit'], '"default";r=119;t=60');
});

/**
 * A window opened by a first request at 0 s; then an offer counted at `countedAtMs` whose linked
 * source (on task 1) answers only at `answeredAtMs`. Gives the offer's answer and the harness.
 */
async function offerThatWaited(t: Test, countedAtMs: number, answeredAtMs: number): Promise<{ h: Harness; offer: CallResult }> {
  const fixture = baseFixture();
  const task = fixture.tasks.find((candidate) => candidate['id'] === 1);
  if (task === undefined) throw new Error('no task 1 in the fixture');
  task['sources'] = [{ providerKey: 'slow', itemId: 'S-1' }];
  const answers: ((item: ProviderItem) => void)[] = [];
  const slow: SourceProvider = {
    refresh: () => new Promise<ProviderItem>((resolve) => answers.push(resolve)),
    publish: () => ({ ref: 'unused' }),
  };
  const h = harness({ fixture, rateLimit: 3, defaultToken: TOKENS.ada, serviceOptions: { sources: { slow }, sourceTimeoutMs: 3_600_000 } });
  t.equal((await h.call('GET', '/api/v1/identity')).headers['ratelimit'], rate(2, 60), 'the window opens at 0 s');
  h.clock.advance(countedAtMs);
  const pending = h.call('GET', '/api/v1/tasks/available');
  h.clock.advance(answeredAtMs - countedAtMs);
  while (answers.length === 0) await new Promise((resolve) => setImmediate(resolve));
  answers.splice(0).forEach((resolve) => resolve({ title: 'Slow one' }));
  const offer = await pending;
  t.equal(offer.status, 200);
  return { h, offer };
}

t.test('RATE: an answer that waited (on a source) gives t as it leaves, not as the request arrived', async (t) => {
  const { offer } = await offerThatWaited(t, 50_000, 58_000);
  t.equal(offer.headers['ratelimit'], rate(1, 2), 'counted at 50 s, answered at 58 s: 2 s left, not 10');
});

t.test('RATE: an answer that waited past its window\'s end gives the full quota of the window its client starts next', async (t) => {
  const { h, offer } = await offerThatWaited(t, 57_000, 62_000);
  t.equal(offer.headers['ratelimit'], rate(3, 60), 'the window ended while it waited: no window is open');
  t.equal((await h.call('GET', '/api/v1/identity')).headers['ratelimit'], rate(2, 60), 'the next request starts a new window');
});
