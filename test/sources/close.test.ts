import t from 'tap';
import { harness } from '../helpers/service.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';
import { API, etagOf, workspaceVersion } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';
import type { SourceProvider } from '../../lib/sources/provider.js';

/**
 * close() ends what waits on a linked source at once: the provider's signal is aborted and the
 * answer is 503, instead of both waiting for the source's deadline (an hour at most, and never on
 * a manual clock that is not moved).
 */

/** A provider whose refreshes never settle; it keeps the signals it was given. */
function hangingWorld() {
  const signals: AbortSignal[] = [];
  const provider: SourceProvider = {
    refresh: (_itemId, signal) => {
      if (signal !== undefined) signals.push(signal);
      return new Promise(() => undefined);
    },
    publish: async () => ({ ref: 'r' }),
  };
  const fixture = baseFixture();
  fixture.tasks[0]!['sources'] = [{ providerKey: 'tracker', itemId: 'T-1' }];
  const h = harness({ fixture, defaultToken: TOKENS.ada, serviceOptions: { sources: { tracker: provider }, sourceTimeoutMs: 3_600_000 } });
  return { h, signals };
}

const turns = async (count: number) => {
  for (let turn = 0; turn < count; turn += 1) await new Promise((resolve) => setImmediate(resolve));
};

t.test('SOURCES: close() while a claim waits on its linked source answers that claim 503 at once, aborts the provider\'s signal and lets idle() resolve', async (t) => {
  const { h, signals } = hangingWorld();
  const version = workspaceVersion(h);
  let answered = false;
  const claim = h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': 'c-1' } });
  void claim.then(() => { answered = true; });
  await turns(5);
  t.equal(signals.length, 1, 'the provider was asked');
  t.notOk(answered, 'the claim waits for it');

  h.service.close();
  t.ok(signals[0]?.aborted, 'the provider is told to stop');
  await turns(5);
  t.ok(answered, 'the claim is answered without the clock moving');
  const answer = await claim;
  expectProblem(t, answer, 'temporarily_unavailable');
  t.equal(answer.headers['retry-after'], '1', 'with Retry-After, as every 503 temporarily_unavailable');
  let idle = false;
  void h.service.idle().then(() => { idle = true; });
  await turns(5);
  t.ok(idle, 'idle() resolves');
  t.equal(h.db.prepare('SELECT count(*) FROM claims WHERE task_id = 1').pluck().get(), 0, 'no lease');
  t.equal(workspaceVersion(h), version, 'nothing written');
  t.strictSame(h.errors, [], 'a refresh cut short by close() is no source failure in the log');
});

t.test('SOURCES: close() while an offer list waits on its linked source answers it 503 at once', async (t) => {
  const { h, signals } = hangingWorld();
  let answered = false;
  const list = h.call('GET', `${API}/tasks/available`);
  void list.then(() => { answered = true; });
  await turns(5);
  t.equal(signals.length, 1);
  h.service.close();
  await turns(5);
  t.ok(answered, 'answered without the clock moving');
  expectProblem(t, await list, 'temporarily_unavailable');
  t.strictSame(h.errors, []);
});

t.test('SOURCES: many provider calls at once (an offer list of 12 linked tasks) raise no listener-leak warning', async (t) => {
  const warnings: Error[] = [];
  const onWarning = (warning: Error) => warnings.push(warning);
  process.on('warning', onWarning);
  t.teardown(() => void process.off('warning', onWarning));
  const fixture = baseFixture();
  for (const [index, task] of fixture.tasks.entries()) task['sources'] = [{ providerKey: 'tracker', itemId: `T-${index}` }];
  const extra = Array.from({ length: 12 }, (_, index) => ({
    id: 500 + index, projectId: fixture.tasks[0]!['projectId'], title: `Linked ${index}`, assignees: fixture.tasks[0]!['assignees'],
    sources: [{ providerKey: 'tracker', itemId: `X-${index}` }],
  }));
  fixture.tasks.push(...extra);
  let calls = 0;
  const provider: SourceProvider = { refresh: async () => { calls += 1; return { title: 'Ticket' }; }, publish: async () => ({ ref: 'r' }) };
  const h = harness({ fixture, defaultToken: TOKENS.ada, serviceOptions: { sources: { tracker: provider } } });
  t.equal((await h.call('GET', `${API}/tasks/available`)).status, 200);
  t.ok(calls > 10, `${calls} refreshes ran together`);
  await turns(3);
  t.strictSame(warnings.map((warning) => warning.name), [], 'no MaxListenersExceededWarning');
  h.service.close();
});

