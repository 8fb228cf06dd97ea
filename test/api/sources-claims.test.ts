import t from 'tap';
import { API, etagOf, patchTask, readTask, workspaceVersion, type TapTest } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';
import type { Harness } from '../helpers/service.js';
import { sourceWorld, untilAsked } from '../helpers/stub-tracker.js';
import type { ProviderItem, SourceProvider } from '../../lib/sources/provider.js';
import { adminClients } from '../../lib/admin/clients.js';

/**
 * Claims of tasks with linked sources (contract 2 and 9): after every other check the claim
 * refreshes the task's sources, always; a failure is 503 and a change 409, neither with a lease.
 * And provider time-outs: no provider can hold a request longer than `sourceTimeoutMs`.
 */

let keys = 0;

function claim(h: Harness, id: number, etag: string, key = `claim-${(keys += 1)}`) {
  return h.call('POST', `${API}/tasks/${id}/claim`, { headers: { 'if-match': etag, 'idempotency-key': key } });
}

const leases = (h: Harness, taskId: number): number =>
  (h.db.prepare('SELECT count(*) AS n FROM claims WHERE task_id = ?').get(taskId) as { n: number }).n;
const receipts = (h: Harness): number => (h.db.prepare('SELECT count(*) AS n FROM idempotency_receipts').get() as { n: number }).n;

t.test('SOURCES: a claim always refreshes its sources, even fresh ones, and unchanged facts give a 200 lease', async (t) => {
  const { h, stub } = await sourceWorld(t);
  await h.call('GET', `${API}/tasks/available`);
  t.equal(stub.gets('T-1').length, 1);
  const etag = await etagOf(h, 1);
  const response = await claim(h, 1, etag, 'claim-first');
  t.equal(response.status, 200, 'a lease');
  t.match(response.json, { token: String, expiresUtc: '2026-11-16T10:15:00.000Z' });
  t.equal(stub.gets('T-1').length, 2, 'the claim fetched T-1 although its last refresh was 0 s old');
  t.equal(stub.gets('T-2').length, 1, 'only the claimed task\'s sources');
  t.equal(leases(h, 1), 1);
  t.equal((await readTask(h, 1)).externalChanges.length, 0);

  // A replay returns the original lease without asking the source again (it is down by now).
  stub.failRefresh('T-1', { kind: 'status', status: 500 });
  const replay = await claim(h, 1, etag, 'claim-first');
  t.equal(replay.status, 200, 'replayed');
  t.equal(replay.headers['idempotent-replayed'], 'true');
  t.strictSame(replay.json, response.json, 'the original lease');
  t.equal(stub.gets('T-1').length, 2, 'the replay did not ask the source');
});

t.test('SOURCES: a claim whose source refresh fails gives 503 source_unavailable and creates no lease', async (t) => {
  const { h, stub } = await sourceWorld(t, { links: { 1: ['T-1', 'T-2'] } });
  await h.call('GET', `${API}/tasks/available`);
  const etag = await etagOf(h, 1);
  const version = workspaceVersion(h);
  for (const [label, failure] of [
    ['500', { kind: 'status', status: 500 }], ['invalid JSON', { kind: 'invalid-json' }], ['404', { kind: 'status', status: 404 }],
  ] as const) {
    stub.failRefresh('T-2', failure);
    const response = await claim(h, 1, etag, 'same-key');
    expectProblem(t, response, 'source_unavailable', label);
    t.equal(response.headers['retry-after'], '15', `${label}: Retry-After is the 15 s the failure counts when offering`);
    t.equal(leases(h, 1), 0, `${label}: no lease`);
  }
  t.equal(receipts(h), 0, 'no receipt was stored for the 503');
  t.equal(workspaceVersion(h), version, 'a failed refresh records nothing');
  t.equal((await readTask(h, 1)).externalContext[1].isAvailable, false, 'the failure is visible in the context');

  stub.failRefresh('T-2', null);
  const retried = await claim(h, 1, etag, 'same-key');
  t.equal(retried.status, 200, 'the same key works once the source is back');
  t.equal(leases(h, 1), 1);
});

t.test('SOURCES: a claim that finds changed facts records the change and gives 409 source_context_changed without a lease', async (t) => {
  const { h, stub } = await sourceWorld(t);
  await h.call('GET', `${API}/tasks/available`);
  const etag = await etagOf(h, 1);
  const version = workspaceVersion(h);
  stub.setItem('T-1', { title: 'Tracker one', businessStatus: 'cancelled' });
  expectProblem(t, await claim(h, 1, etag), 'source_context_changed');
  t.equal(leases(h, 1), 0, 'no lease');
  t.equal(workspaceVersion(h), version + 1, 'the recorded change bumped the version');
  const task = await readTask(h, 1);
  t.equal(task.externalChanges.length, 1);
  t.match(task.externalChanges[0], { kind: 'source', before: { businessStatus: null }, after: { businessStatus: 'cancelled' } });
  t.equal(task.sourceActivations.length, 1);
  t.equal(task.requiresAttention, true);
  expectProblem(t, await claim(h, 1, etag), 'stale_update', 'the old ETag is stale now');
  const again = await claim(h, 1, task.etag);
  t.equal(again.status, 200, 'the re-read agent may claim on the new facts');
});

t.test('SOURCES: a claim whose changed facts an offer list running beside it recorded first still gives 409 source_context_changed', async (t) => {
  const { h, stub } = await sourceWorld(t);
  await h.call('GET', `${API}/tasks/available`);
  const etag = await etagOf(h, 1);
  stub.setItem('T-1', { title: 'Tracker one, renamed' });
  h.clock.advance(15_001);
  // The list asks T-1 first, and the claim while that call is held: they share the answer, and
  // the list, first, records the change.
  let open = (): void => undefined;
  stub.failRefresh('T-1', { kind: 'gate', open: new Promise<void>((resolve) => { open = resolve; }) });
  const list = h.call('GET', `${API}/tasks/available`);
  await untilAsked(stub, 'T-1', 1);
  t.equal(stub.gets('T-1').length, 2, 'the list is asking T-1');
  const claiming = claim(h, 1, etag);
  for (let turn = 0; turn < 20; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  open();
  const claimed = await claiming;
  t.equal((await list).status, 200);
  t.equal(stub.gets('T-1').length, 2, 'the claim shared the list\'s call');
  expectProblem(t, claimed, 'source_context_changed', 'the change is the claim\'s news too, not a stale If-Match');
  t.equal(leases(h, 1), 0, 'no lease');
  t.equal((await readTask(h, 1)).externalChanges.length, 1, 'recorded once');
});

t.test('SOURCES: claim checks Done, blocked, not runnable and live lease come before the source refresh', async (t) => {
  const fixture = baseFixture();
  const { h, stub } = await sourceWorld(t, {
    fixture,
    // 6 Done, 2 blocked (prerequisite 1 not Done), 9 not runnable (earliestStart 2027), 11 leased, 5 waiting.
    links: { 6: ['T-6'], 2: ['T-2b'], 9: ['T-9'], 11: ['T-11'], 5: ['T-5'] },
    items: { 'T-6': { title: 'x' }, 'T-2b': { title: 'x' }, 'T-9': { title: 'x' }, 'T-11': { title: 'x' }, 'T-5': { title: 'x' } },
  });
  const cases: [number, 'task_completed' | 'task_blocked' | 'task_not_runnable' | 'task_claimed', string][] = [
    [6, 'task_completed', 'Done'], [2, 'task_blocked', 'unmet prerequisite'], [5, 'task_blocked', 'waiting'],
    [9, 'task_not_runnable', 'not runnable'], [11, 'task_claimed', 'live lease'],
  ];
  for (const [id, code, label] of cases) expectProblem(t, await claim(h, id, await etagOf(h, id)), code, label);
  t.strictSame(stub.requests, [], 'the stub saw no request at all');
  t.equal(leases(h, 11), 1, 'only the fixture\'s lease');
});

/**
 * Lets pending I/O and promise callbacks run (a request reaching the stub, say) without moving
 * the clock: until `until` holds, for at most `most` turns of the event loop.
 */
async function turns(until: () => boolean, most = 1000): Promise<void> {
  for (let turn = 0; turn < most && !until(); turn += 1) await new Promise((resolve) => setImmediate(resolve));
}

/** Whether a promise settles within 50 turns of the event loop, the clock standing still. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(() => { done = true; }, () => { done = true; });
  await turns(() => done, 50);
  return done;
}

t.test('SOURCES: a hung source cannot hold a claim or the offer list longer than sourceTimeoutMs (on the service clock)', async (t) => {
  // Only task 1 is linked: a second item answering around the deadline would make the test a race.
  const { h, stub, logs } = await sourceWorld(t, { links: { 1: ['T-1'] }, service: { sourceTimeoutMs: 200 } });
  stub.failRefresh('T-1', { kind: 'hang' });
  const claimed = claim(h, 1, await etagOf(h, 1));
  await turns(() => stub.gets('T-1').length === 1);
  h.clock.advance(199);
  t.notOk(await settled(claimed), 'the claim still waits 1 ms before the deadline');
  h.clock.advance(1);
  expectProblem(t, await claimed, 'source_unavailable', 'a hung source, at the deadline');
  t.equal(leases(h, 1), 0);

  h.clock.advance(15_001);
  const listed = h.call('GET', `${API}/tasks/available`);
  await turns(() => stub.gets('T-1').length === 2);
  h.clock.advance(200);
  const list = await listed;
  t.equal(list.status, 200);
  t.strictSame(list.json.map((task: { id: number }) => task.id), [4, 8, 3], 'task 1 is omitted, the rest offered');
  t.ok(logs.some((log) => log.level === 'error' && log.entry['message'] === 'source refresh failed' && log.entry['itemId'] === 'T-1'),
    'the failure is logged with the item');
});

t.test('SOURCES: an embedder provider that never settles and ignores the signal is cut off; one that throws is a failure, not a 500', async (t) => {
  let aborted = 0;
  let calls = 0;
  const hanging: SourceProvider = {
    refresh: (_itemId, signal) => {
      calls += 1;
      signal.addEventListener('abort', () => (aborted += 1));
      return new Promise(() => {}); // ignores the signal, never settles
    },
    publish: () => new Promise(() => {}),
  };
  const throwing: SourceProvider = {
    refresh: () => {
      throw new Error('provider bug');
    },
    publish: () => {
      throw new Error('provider bug');
    },
  };
  // Not what the type asks for: the service checks a provider's answer at run time too.
  const nonsense = {
    refresh: async () => ({ title: 42, description: 'not facts' }),
    publish: async () => ({}),
  } as unknown as SourceProvider;
  const { h, logs } = await sourceWorld(t, {
    links: {
      4: [{ providerKey: 'hanging', itemId: 'H-1' }],
      1: [{ providerKey: 'throwing', itemId: 'X-1' }],
      8: [{ providerKey: 'nonsense', itemId: 'N-1' }],
      3: [{ providerKey: 'unconfigured', itemId: 'U-1' }],
    },
    service: { sourceTimeoutMs: 150, sources: { hanging, throwing, nonsense } },
  });
  const listed = h.call('GET', `${API}/tasks/available`);
  await turns(() => aborted === 0 && calls > 0);
  h.clock.advance(150);
  const list = await listed;
  t.equal(list.status, 200);
  t.strictSame(list.json, [], 'every task is omitted: hanging, throwing, nonsense and unconfigured providers are failures');
  t.equal(aborted, 1, 'the hanging provider\'s signal was aborted at the deadline');

  for (const [id, label] of [[4, 'hanging'], [1, 'throwing'], [8, 'nonsense'], [3, 'no provider for the key']] as const) {
    const before = calls;
    const pending = claim(h, id, await etagOf(h, id));
    // The hanging provider times out only once it has been called and the clock passes its deadline.
    if (label === 'hanging') await turns(() => calls > before);
    h.clock.advance(150);
    expectProblem(t, await pending, 'source_unavailable', label);
    t.equal(leases(h, id), 0, `${label}: no lease`);
  }
  const failed = logs.filter((log) => log.entry['message'] === 'source refresh failed').map((log) => log.entry['itemId']);
  for (const itemId of ['H-1', 'X-1', 'U-1']) t.ok(failed.includes(itemId), `the failure of ${itemId} is logged`);
  t.ok(logs.some((log) => log.entry['itemId'] === 'U-1' && /no provider is configured/.test(String(log.entry['error']))),
    'an item whose providerKey has no provider says so');
  t.notOk(logs.some((log) => /unexpected|internal/i.test(String(log.entry['message']))), 'nothing was logged as an internal error');
});

t.test('SOURCES: a provider answer whose reading throws, or a rejection that cannot be described, fails that item only', async (t) => {
  let calls = 0;
  const lazy: SourceProvider = {
    refresh: async () => {
      calls += 1;
      return { title: 'ok', get replies(): never { throw new Error('lazy relation not loaded'); } };
    },
    publish: async () => ({ ref: 'r' }),
  };
  const odd: SourceProvider = {
    refresh: () => Promise.reject(Object.create(null)),
    publish: async () => ({ ref: 'r' }),
  };
  const { h, logs } = await sourceWorld(t, {
    links: { 1: [{ providerKey: 'lazy', itemId: 'L-1' }], 3: [{ providerKey: 'odd', itemId: 'O-1' }] },
    service: { sources: { lazy, odd } },
  });
  const list = await h.call('GET', `${API}/tasks/available`);
  t.equal(list.status, 200, 'the offer list still answers');
  t.strictSame(list.json.map((task: { id: number }) => task.id), [4, 8], 'only the two linked tasks are left out');
  await h.call('GET', `${API}/tasks/available`);
  t.equal(calls, 1, 'the failure is remembered like any other');
  expectProblem(t, await claim(h, 1, await etagOf(h, 1)), 'source_unavailable', 'a claim of the lazy one');
  expectProblem(t, await claim(h, 3, await etagOf(h, 3)), 'source_unavailable', 'a claim of the odd one');
  t.ok(logs.some((log) => log.entry['itemId'] === 'L-1' && log.entry['error'] === 'lazy relation not loaded'), 'the getter\'s error is logged');
  t.ok(logs.some((log) => log.entry['itemId'] === 'O-1' && log.entry['error'] === 'a failure that cannot be described'));
  t.notOk(logs.some((log) => /unexpected/.test(String(log.entry['message']))), 'no internal error');
});

t.test('SOURCES: a claim made while a write batch is open calls its provider only after that batch has committed', async (t) => {
  let inTransaction: boolean | undefined;
  let db: Harness['db'] | undefined;
  const watching: SourceProvider = {
    refresh: async () => {
      inTransaction = db?.inTransaction;
      return { title: 'Watched' };
    },
    publish: async () => ({ ref: 'r' }),
  };
  const { h } = await sourceWorld(t, { links: { 1: [{ providerKey: 'watching', itemId: 'W-1' }] }, service: { sources: { watching } } });
  db = h.db;
  const version = workspaceVersion(h);
  // Same turn of the event loop: the PATCH opens a batch, then the claim (naming the version the
  // PATCH makes) passes its checks inside that batch and goes to refresh its source.
  const patch = h.call('PATCH', `${API}/tasks/3`, { headers: { 'if-match': `"task-3-plan-${version}"` }, body: { sequence: 6 } });
  const claimed = claim(h, 1, `"task-1-plan-${version + 1}"`, 'claim-in-batch');
  t.equal((await patch).status, 204);
  t.equal((await claimed).status, 200, 'the claim is granted');
  t.equal(inTransaction, false, 'its provider ran outside any transaction');
});

t.test('SOURCES: the offer and waiting lists call a provider after their read transaction, never inside it', async (t) => {
  const seen: boolean[] = [];
  let db: Harness['db'] | undefined;
  // Synchronous, so the whole call would run inside whatever transaction its caller had open.
  const watching: SourceProvider = {
    refresh: () => {
      seen.push(db?.inTransaction ?? true);
      return { title: 'Watched' };
    },
    publish: () => ({ ref: 'r' }),
  };
  const { h } = await sourceWorld(t, { links: { 1: [{ providerKey: 'watching', itemId: 'W-1' }] }, service: { sources: { watching } } });
  db = h.db;
  t.equal((await h.call('GET', `${API}/tasks/available`)).status, 200);
  h.clock.advance(15_001);
  t.equal((await h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': await etagOf(h, 1) }, body: { isWaiting: true } })).status, 204);
  t.equal((await h.call('GET', `${API}/tasks/waiting`)).status, 200);
  t.strictSame(seen, [false, false], 'both lists refreshed the item outside any transaction');
});

/**
 * Task 1 linked to a provider that answers only when the test says. `claimWaiting` starts a claim
 * of task 1 and resolves once the claim waits on the provider, with `answer` to let it go on.
 */
async function gatedSourceWorld(t: TapTest, service: { sourceTimeoutMs?: number } = {}) {
  let release: (() => void) | undefined;
  const gated: SourceProvider = {
    refresh: () => new Promise((resolve) => { release = () => resolve({ title: 'Slow' }); }),
    publish: async () => ({ ref: 'r' }),
  };
  const { h } = await sourceWorld(t, { links: { 1: [{ providerKey: 'gated', itemId: 'S-1' }] }, service: { ...service, sources: { gated } } });
  /** Resolves once the provider has been called, with what lets it answer. */
  const providerCalled = async (): Promise<() => void> => {
    while (release === undefined) await new Promise((resolve) => setImmediate(resolve));
    return release;
  };
  const claimWaiting = async () => {
    const claimed = claim(h, 1, await etagOf(h, 1));
    return { claimed, answer: await providerCalled() };
  };
  return { h, claimWaiting, providerCalled };
}

t.test('SOURCES: what a refresh brings back while a write batch is open is recorded after that batch, never inside it', async (t) => {
  const { h, claimWaiting } = await gatedSourceWorld(t);
  const lastSuccess = () => h.db.prepare("SELECT last_success_utc FROM source_items WHERE item_id = 'S-1'").pluck().get();
  const { claimed, answer } = await claimWaiting();
  const before = lastSuccess();
  // One turn: a PATCH in another organisation (the claim's ETag stays current) opens a batch,
  // then the provider answers while it is open.
  const gus = { token: TOKENS.otherOrg };
  const etag90 = await etagOf(h, 90, TOKENS.otherOrg);
  const patch = h.call('PATCH', `${API}/tasks/90`, { ...gus, headers: { 'if-match': etag90 }, body: { sequence: 6 } });
  t.ok(h.db.inTransaction, 'a batch is open');
  answer();
  for (let turn = 0; turn < 50; turn += 1) await Promise.resolve();
  t.ok(h.db.inTransaction, 'the batch is still open');
  t.equal(lastSuccess(), before, 'the refresh has not been recorded inside it');
  t.equal((await patch).status, 204);
  t.equal((await claimed).status, 200, 'the claim is granted once the refresh is recorded');
  t.not(lastSuccess(), before, 'and the refresh is recorded');
});

t.test('SOURCES: a client revoked while its claim waits for the source refresh gets 401 and no lease', async (t) => {
  const { h, claimWaiting } = await gatedSourceWorld(t);
  const { claimed, answer } = await claimWaiting();
  adminClients(h.db, { clock: h.clock }).revoke(100);
  answer();
  const refused = await claimed;
  expectProblem(t, refused, 'authentication_failed', 'the claim is refused once the source has answered');
  t.equal(leases(h, 1), 0, 'no lease for a client nobody can act as');
  t.notOk('ratelimit' in refused.headers || 'ratelimit-policy' in refused.headers, 'and, like any 401, no quota');
});

t.test('SOURCES: a client revoked while its offer or waiting list waits for the source refresh gets 401, not the list', async (t) => {
  for (const list of ['available', 'waiting'] as const) {
    const { h, providerCalled } = await gatedSourceWorld(t);
    // Task 1 (linked to the gated item) waits on something external, so the waiting list holds it.
    if (list === 'waiting') t.equal((await patchTask(h, 1, { isWaiting: true })).status, 204);
    const listed = h.call('GET', `${API}/tasks/${list}`);
    const answer = await providerCalled();
    adminClients(h.db, { clock: h.clock }).revoke(100);
    answer();
    const refused = await listed;
    expectProblem(t, refused, 'authentication_failed', `${list}: refused once the source has answered`);
    t.notOk('ratelimit' in refused.headers || 'ratelimit-policy' in refused.headers, `${list}: no quota on the 401`);
  }
});

/**
 * Task 1 linked to T-1 and task 3 to T-2 of `tracker`, both offered to Ada, baselines set, Ada
 * having asked Grace a non-blocking question published to T-1 (ref "r"); then, 16 s later, an
 * offer list that has T-1's answer, `firstAnswer`, and waits for T-2's until `releaseList()`.
 * Later calls of T-1 answer `current` (the test changes it).
 */
async function listHoldingAnswer(t: TapTest, firstAnswer: () => Promise<ProviderItem>) {
  const current = { 'T-1': { title: 'One', businessStatus: 'open' } as ProviderItem, 'T-2': { title: 'Two' } as ProviderItem };
  let listing = false;
  let releaseT2: (() => void) | undefined;
  const tracker: SourceProvider = {
    refresh: (itemId) => {
      if (!listing) return { ...current[itemId as 'T-1' | 'T-2'] };
      if (itemId === 'T-1') return firstAnswer();
      return new Promise((resolve) => { releaseT2 = () => resolve({ ...current['T-2'] }); });
    },
    publish: async () => ({ ref: 'r' }),
  };
  const { h } = await sourceWorld(t, { service: { sources: { tracker } } });
  t.equal((await h.call('GET', `${API}/tasks/available`)).status, 200, 'the baselines');
  const asked = await h.call('POST', `${API}/tasks/1/human-requests`, {
    headers: { 'if-match': await etagOf(h, 1) },
    body: { humanAssigneeId: 11, title: 'Which tone?', estimatedMinutes: 15, isBlocking: false, publishExternally: true },
  });
  t.equal(asked.status, 201, 'the question');
  await h.service.idle();
  h.clock.advance(16_000);
  listing = true;
  const listed = h.call('GET', `${API}/tasks/available`);
  while (releaseT2 === undefined) await new Promise((resolve) => setImmediate(resolve));
  for (let turn = 0; turn < 10; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  listing = false;
  const releaseList = async () => {
    releaseT2?.();
    t.equal((await listed).status, 200, 'the list is answered');
  };
  return { h, current, releaseList };
}

t.test('SOURCES: an answer a list still holds is not applied over a later one a claim applied first: the facts do not change back', async (t) => {
  const { h, current, releaseList } = await listHoldingAnswer(t, async () => ({ title: 'One', businessStatus: 'open' }));
  current['T-1'] = { title: 'One', businessStatus: 'done' };
  expectProblem(t, await claim(h, 1, await etagOf(h, 1)), 'source_context_changed', 'the claim records open to done');
  const version = workspaceVersion(h);
  await releaseList();
  const task = await readTask(h, 1);
  t.equal(task.externalContext[0].facts.businessStatus, 'done', 'the later answer stands');
  t.strictSame(task.externalChanges.map((change: { after: { businessStatus: string } }) => change.after.businessStatus), ['done'], 'no change back to open');
  t.equal(workspaceVersion(h), version, 'nor a version step for it');
});

t.test('SOURCES: a failure a list still holds is not recorded over a later success a claim applied first', async (t) => {
  const { h, releaseList } = await listHoldingAnswer(t, () => Promise.reject(new Error('tracker down')));
  t.equal((await claim(h, 1, await etagOf(h, 1))).status, 200, 'the claim\'s own refresh succeeds');
  await releaseList();
  t.equal((await readTask(h, 1)).externalContext[0].isAvailable, true, 'the item stays available');
});

t.test('SOURCES: a claim holding a success of an item that a later refresh found failing is refused 503, as the item now stands', async (t) => {
  let failing = false;
  let releaseT2: (() => void) | undefined;
  let holdT2 = false;
  const tracker: SourceProvider = {
    refresh: (itemId) => {
      if (itemId === 'T-1' && failing) return Promise.reject(new Error('tracker down'));
      if (itemId !== 'T-2' || !holdT2) return { title: itemId };
      return new Promise((resolve) => { releaseT2 = () => resolve({ title: itemId }); });
    },
    publish: async () => ({ ref: 'r' }),
  };
  // Task 1 is linked to T-1 and T-2; task 3, waiting on something external, to T-1 alone.
  const { h } = await sourceWorld(t, { links: { 1: ['T-1', 'T-2'], 3: ['T-1'] }, service: { sources: { tracker } } });
  t.equal((await patchTask(h, 3, { isWaiting: true })).status, 204);
  t.equal((await h.call('GET', `${API}/tasks/available`)).status, 200, 'the baselines');
  h.clock.advance(16_000);
  holdT2 = true;
  const claimed = claim(h, 1, await etagOf(h, 1));
  while (releaseT2 === undefined) await new Promise((resolve) => setImmediate(resolve));
  // The claim has T-1's success and waits for T-2; the waiting list asks T-1 again, and it fails.
  failing = true;
  t.equal((await h.call('GET', `${API}/tasks/waiting`)).status, 200);
  t.equal((await readTask(h, 1)).externalContext[0].isAvailable, false, 'T-1 is recorded as failing');
  releaseT2();
  expectProblem(t, await claimed, 'source_unavailable', 'the claim answers as T-1 now stands');
  t.equal(leases(h, 1), 0, 'no lease');
});

t.test('SOURCES: a reply in an answer a list still holds is recorded, once, though a later answer was applied first', async (t) => {
  const reply = { id: 'x1', inReplyTo: 'r', author: 'Grace', text: 'Warm.', createdUtc: null };
  // The provider hands the reply out once: later answers no longer carry it.
  const { h, releaseList } = await listHoldingAnswer(t, async () => ({ title: 'One', businessStatus: 'open', replies: [reply] }));
  t.equal((await claim(h, 1, await etagOf(h, 1))).status, 200, 'the claim applies its later answer first');
  await releaseList();
  const task = await readTask(h, 1);
  t.strictSame(task.externalChanges.map((change: { kind: string; response: string | null }) => [change.kind, change.response]), [['reply', 'Warm.']]);
  t.equal(task.humanRequests[0].responseState, 'responded');
});

t.test('SOURCES: a task released while an offer list waits on other sources is left to the next list, its own unrefreshed', async (t) => {
  const asked: string[] = [];
  let releaseT2: (() => void) | undefined;
  let holdT2 = false;
  const tracker: SourceProvider = {
    refresh: (itemId) => {
      asked.push(itemId);
      if (itemId !== 'T-2' || !holdT2) return { title: itemId };
      return new Promise((resolve) => { releaseT2 = () => resolve({ title: itemId }); });
    },
    publish: async () => ({ ref: 'r' }),
  };
  // Task 1 is linked to T-1, task 3 to T-2.
  const { h } = await sourceWorld(t, { service: { sources: { tracker } } });
  const leased = await claim(h, 1, await etagOf(h, 1));
  t.equal(leased.status, 200);
  h.clock.advance(60_000);
  holdT2 = true;
  asked.length = 0;
  const listed = h.call('GET', `${API}/tasks/available`);
  while (releaseT2 === undefined) await new Promise((resolve) => setImmediate(resolve));
  t.strictSame(asked, ['T-2'], 'the leased task\'s item is not asked');
  const released = await h.call('POST', `${API}/tasks/1/claim/release`, {
    headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': 'release-1' }, body: { token: leased.json.token },
  });
  t.equal(released.status, 200, 'released while the list waits');
  releaseT2();
  const offer = (await listed).json.map((task: { id: number }) => task.id);
  t.notOk(offer.includes(1), 'task 1 is not offered on facts a minute old');
  t.ok(offer.includes(3), 'the refreshed task is');
  holdT2 = false;
  const next = (await h.call('GET', `${API}/tasks/available`)).json.map((task: { id: number }) => task.id);
  t.ok(next.includes(1), 'the next list refreshes T-1 and offers task 1');
  t.equal(asked.filter((itemId) => itemId === 'T-1').length, 1);
});

t.test('SOURCES: a claim that waited for its source gets a lease of 15 minutes from when it is granted', async (t) => {
  const { h, claimWaiting } = await gatedSourceWorld(t, { sourceTimeoutMs: 3_600_000 });
  const { claimed, answer } = await claimWaiting();
  h.clock.advance(20 * 60_000);
  answer();
  const response = await claimed;
  t.equal(response.status, 200);
  t.equal(response.json.expiresUtc, new Date(h.clock.now() + 15 * 60_000).toISOString(), 'now + 15 min at the grant');
  t.equal(h.db.prepare('SELECT acquired_utc FROM claims WHERE task_id = 1').pluck().get(), h.clock.now(), 'acquired when granted');
});

t.test('SOURCES: a claim is answered by the batch that takes its lease, not by the failed batch its first checks ran in', async (t) => {
  const { h, providerCalled } = await gatedSourceWorld(t);
  const etag = await etagOf(h, 1);
  const gus = { token: TOKENS.otherOrg };
  const etag90 = await etagOf(h, 90, TOKENS.otherOrg);
  // One turn: another organisation's PATCH opens batch A; the claim's first checks run inside it.
  const patch = h.call('PATCH', `${API}/tasks/90`, { ...gus, headers: { 'if-match': etag90 }, body: { sequence: 6 } });
  const claimed = claim(h, 1, etag, 'claim-after-failed-batch');
  // Batch A fails at COMMIT: a foreign key checked only then, broken inside it.
  h.db.pragma('defer_foreign_keys = ON');
  h.db.prepare('INSERT INTO notes (task_id, client_id, staff_id, text, created_utc) VALUES (999999, 1, 1, ?, 0)').run('orphan');
  t.equal((await patch).status, 500, 'batch A is rolled back');
  (await providerCalled())();
  const response = await claimed;
  t.equal(response.status, 200, 'the claim, granted in a batch of its own, is answered as it was kept');
  t.equal(leases(h, 1), 1, 'and its lease is on disk');
});
