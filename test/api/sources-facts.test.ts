import t from 'tap';
import { loadFixture } from '../../lib/fixtures/load.js';
import { API, etagOf, readTask, workspaceVersion } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';
import { baseFixture } from '../helpers/fixture.js';
import type { Harness } from '../helpers/service.js';
import { sourceWorld, type StubFailure } from '../helpers/stub-tracker.js';

/**
 * Linked-source facts (contract 9 and 4): the baseline, recorded changes and activations, and
 * acknowledging them; and GET /tasks/available with linked sources (contract 5 and 9): stale
 * sources are refreshed first (concurrently), results and failures count for 15 s (the
 * `sourceMaxAgeMs` option), and a task whose source fails is omitted. The shared world offers Ada
 * tasks 4, 1, 8 and 3; 1 is linked to T-1 and 3 to T-2 of a stub tracker.
 */

const NOW = '2026-11-16T10:00:00.000Z';
/** The age at which a refresh still counts (contract 9: at most 15 s old), and just past it. */
const MAX_AGE_MS = 15_000;
const PAST_MAX_AGE_MS = MAX_AGE_MS + 1;

async function available(h: Harness): Promise<{ id: number; [member: string]: unknown }[]> {
  const response = await h.call('GET', `${API}/tasks/available`);
  if (response.status !== 200) throw new Error(`available answered ${response.status}`);
  return response.json;
}

t.test('SOURCES: before the first successful refresh facts are the fixture\'s or {title: itemId}, with isAvailable false', async (t) => {
  const fixture = baseFixture();
  const { h, stub } = await sourceWorld(t, {
    fixture,
    links: { 1: ['T-1', { itemId: 'T-9', facts: { title: 'From the fixture', description: 'Seeded', businessStatus: 'open' } }] },
  });
  const task = await readTask(h, 1);
  t.strictSame(task.externalContext, [
    { providerKey: 'tracker', itemId: 'T-1', facts: { title: 'T-1', description: null, businessStatus: null }, lastSuccessUtc: null, isAvailable: false },
    { providerKey: 'tracker', itemId: 'T-9', facts: { title: 'From the fixture', description: 'Seeded', businessStatus: 'open' }, lastSuccessUtc: null, isAvailable: false },
  ]);
  t.strictSame(task.externalChanges, []);
  t.strictSame(task.sourceActivations, []);
  t.equal(task.requiresAttention, false);
  t.equal(stub.requests.length, 0, 'reading a task does not call the source');
});

t.test('SOURCES: the first successful refresh sets the baseline and records no change', async (t) => {
  const { h, stub } = await sourceWorld(t, {
    links: { 1: [{ itemId: 'T-1', facts: { title: 'Old fixture title', description: 'old', businessStatus: null } }] },
    items: { 'T-1': { title: 'Tracker title', description: 'From the tracker', businessStatus: 'In review' } },
  });
  const version = workspaceVersion(h);
  const offered = await available(h);
  t.ok(offered.some((task) => task.id === 1), 'the linked task is offered');
  t.equal(stub.gets('T-1').length, 1, 'the stub saw one GET');
  const task = await readTask(h, 1);
  t.strictSame(task.externalContext, [{
    providerKey: 'tracker', itemId: 'T-1',
    facts: { title: 'Tracker title', description: 'From the tracker', businessStatus: 'In review' },
    lastSuccessUtc: NOW, isAvailable: true,
  }], 'the tracker\'s facts, available, lastSuccessUtc = now');
  t.strictSame(task.externalChanges, [], 'the baseline is not a change (even though it differs from the fixture)');
  t.strictSame(task.sourceActivations, []);
  t.equal(task.requiresAttention, false);
  t.equal(workspaceVersion(h), version, 'no change recorded, no version bump');

  h.clock.advance(PAST_MAX_AGE_MS);
  await available(h);
  t.equal(stub.gets('T-1').length, 2, 'refreshed again');
  const again = await readTask(h, 1);
  t.strictSame(again.externalChanges, [], 'the same facts again record nothing');
  t.equal(again.externalContext[0].lastSuccessUtc, '2026-11-16T10:00:15.001Z', 'lastSuccessUtc moves on');
});

t.test('SOURCES: a fixture loaded again does not put its facts back over a baseline, so a restart with --fixture records no change', async (t) => {
  const fixture = baseFixture();
  const { h, stub } = await sourceWorld(t, {
    fixture,
    links: { 1: [{ itemId: 'T-1', facts: { title: 'Old fixture title', description: 'old', businessStatus: null } }] },
    items: { 'T-1': { title: 'Tracker title', description: 'From the tracker', businessStatus: 'In review' } },
  });
  await available(h);
  const tracker = { title: 'Tracker title', description: 'From the tracker', businessStatus: 'In review' };
  t.strictSame((await readTask(h, 1)).externalContext[0].facts, tracker, 'the baseline');

  loadFixture(h.db, fixture, { now: h.clock.now() });
  const reloaded = await readTask(h, 1);
  t.strictSame(reloaded.externalContext[0].facts, tracker, "the refreshed facts stay: they are newer than the file's");
  t.equal(reloaded.externalContext[0].isAvailable, true);

  h.clock.advance(PAST_MAX_AGE_MS);
  t.ok((await available(h)).some((task) => task.id === 1), 'still offered after the next refresh');
  t.equal(stub.gets('T-1').length, 2, 'refreshed again');
  const task = await readTask(h, 1);
  t.strictSame(task.externalChanges, [], 'the tracker did not change, so nothing is recorded');
  t.equal(task.requiresAttention, false);
  const claim = await h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': task.etag, 'idempotency-key': 'reloaded-claim' } });
  t.equal(claim.status, 200, 'the claim is not refused with source_context_changed');
});

t.test('SOURCES: facts with lone surrogates read as U+FFFD and, sent again unchanged, record no change', async (t) => {
  const { h, stub } = await sourceWorld(t, {
    items: { 'T-1': { title: 'ok \ud800 x', description: 'tail \udc00', businessStatus: null } },
  });
  const version = workspaceVersion(h);
  await available(h);
  for (let round = 0; round < 2; round += 1) {
    h.clock.advance(PAST_MAX_AGE_MS);
    await available(h);
  }
  t.equal(stub.gets('T-1').length, 3, 'refreshed three times');
  const task = await readTask(h, 1);
  t.strictSame(task.externalContext[0].facts, { title: 'ok \ufffd x', description: 'tail \ufffd', businessStatus: null },
    'stored and shown as well-formed text');
  t.strictSame(task.externalChanges, [], 'the same facts again are no change');
  t.equal(task.requiresAttention, false);
  t.equal(workspaceVersion(h), version, 'no version bump');
});

t.test('SOURCES: unknown members in the provider\'s JSON are ignored and never appear in responses', async (t) => {
  const { h, stub } = await sourceWorld(t, {
    items: {
      'T-1': {
        title: 'Tracker one', description: 'D', businessStatus: 'open', internalUrl: 'http://tracker.internal/raw-T1',
        assigneeEmail: 'raw-member@example.com', facts: { title: 'raw-nested-title' }, secret: 'raw-secret-value',
      },
      'T-2': { title: 'Tracker two' },
    },
  });
  const list = await h.call('GET', `${API}/tasks/available`);
  t.equal(list.status, 200);
  h.clock.advance(PAST_MAX_AGE_MS);
  stub.setItem('T-1', { title: 'Tracker one v2', description: 'D', businessStatus: 'open', secret: 'raw-secret-value', more: 'raw-more' });
  const after = await h.call('GET', `${API}/tasks/available`);
  const task = await h.call('GET', `${API}/tasks/1`);
  t.strictSame(task.json.externalContext[0].facts, { title: 'Tracker one v2', description: 'D', businessStatus: 'open' });
  t.strictSame(Object.keys(task.json.externalChanges[0].before).sort(), ['businessStatus', 'description', 'title']);
  t.strictSame(Object.keys(task.json.externalChanges[0].after).sort(), ['businessStatus', 'description', 'title']);
  for (const response of [list, after, task]) {
    for (const raw of ['raw-T1', 'raw-member', 'raw-nested-title', 'raw-secret-value', 'raw-more', 'internalUrl', 'assigneeEmail']) {
      t.notOk(response.text?.includes(raw), `${raw} is not in the response`);
    }
  }
});

t.test('SOURCES: changed facts record one source change per changed item and one activation, bump the version and need attention', async (t) => {
  const { h, stub } = await sourceWorld(t, {
    links: { 1: ['T-1', 'T-2', 'T-3'] },
    items: {
      'T-1': { title: 'One', description: 'first', businessStatus: 'open' },
      'T-2': { title: 'Two', businessStatus: 'open' },
      'T-3': { title: 'Three' },
    },
  });
  await available(h);
  const oldEtag = await etagOf(h, 1);
  const version = workspaceVersion(h);

  h.clock.advance(PAST_MAX_AGE_MS);
  stub.setItem('T-1', { title: 'One, renamed', description: 'first', businessStatus: 'open' });
  stub.setItem('T-2', { title: 'Two', businessStatus: 'closed' });
  const offered = await available(h);
  t.ok(offered.some((task) => task.id === 1), 'a changed task is still offered');
  t.equal(workspaceVersion(h), version + 1, 'the recorded change bumped the workspace version once');

  const task = await readTask(h, 1);
  t.equal(task.externalChanges.length, 2, 'one change per changed item (T-3 did not change)');
  t.match(task.externalChanges[0], {
    incomingId: null, kind: 'source',
    before: { title: 'One', description: 'first', businessStatus: 'open' },
    after: { title: 'One, renamed', description: 'first', businessStatus: 'open' },
    response: null, author: null, occurredUtc: '2026-11-16T10:00:15.001Z', receivedUtc: '2026-11-16T10:00:15.001Z', acknowledgedUtc: null,
  });
  t.strictSame(task.externalChanges[1].before, { title: 'Two', description: null, businessStatus: 'open' });
  t.strictSame(task.externalChanges[1].after, { title: 'Two', description: null, businessStatus: 'closed' });
  t.strictSame(task.sourceActivations, [{
    activatedUtc: '2026-11-16T10:00:15.001Z',
    sources: [
      { title: 'One, renamed', description: 'first', businessStatus: 'open' },
      { title: 'Two', description: null, businessStatus: 'closed' },
      { title: 'Three', description: null, businessStatus: null },
    ],
  }], 'one activation with the current facts of every available source of the task');
  t.equal(task.requiresAttention, true);

  const stale = await h.call('POST', `${API}/tasks/1/notes`, { headers: { 'if-match': oldEtag }, body: { text: 'on old facts' } });
  expectProblem(t, stale, 'stale_update', 'the ETag from before the change');
  t.equal(stale.headers['etag'], task.etag, 'the 412 carries the current ETag');

  // A change on one item while another fails: the activation lists the available sources only.
  h.clock.advance(PAST_MAX_AGE_MS);
  stub.setItem('T-1', { title: 'One, again', description: 'first', businessStatus: 'open' });
  stub.failRefresh('T-3', { kind: 'status', status: 500 });
  const without = await available(h);
  t.notOk(without.some((one) => one.id === 1), 'a failing source omits the task');
  const later = await readTask(h, 1);
  t.equal(later.externalChanges.length, 3);
  t.strictSame(later.sourceActivations[1].sources, [
    { title: 'One, again', description: 'first', businessStatus: 'open' },
    { title: 'Two', description: null, businessStatus: 'closed' },
  ], 'the failed item is not in the activation');
});

t.test('SOURCES: changed facts of an item a Done task shares are recorded on the open task only; the Done task shows the new facts', async (t) => {
  const { h, stub } = await sourceWorld(t, { links: { 1: ['T-1'], 4: ['T-1'] }, items: { 'T-1': { title: 'Shared' } } });
  await available(h);
  const done = await h.call('PATCH', `${API}/tasks/4`, { headers: { 'if-match': await etagOf(h, 4) }, body: { status: 'Done' } });
  t.equal(done.status, 204, done.text ?? '');
  const version = workspaceVersion(h);

  h.clock.advance(PAST_MAX_AGE_MS);
  stub.setItem('T-1', { title: 'Shared, renamed' });
  await available(h);
  t.equal(workspaceVersion(h), version + 1, 'the new facts are a change of the workspace');
  const open = await readTask(h, 1);
  t.equal(open.externalChanges.length, 1, 'the open task records the change');
  t.equal(open.sourceActivations.length, 1);
  const finished = await readTask(h, 4);
  t.strictSame(finished.externalChanges, [], 'the Done task records none');
  t.strictSame(finished.sourceActivations, [], 'nor an activation');
  t.equal(finished.requiresAttention, false);
  t.equal(finished.externalContext[0].facts.title, 'Shared, renamed', 'its context shows the item as it is now');
});

t.test('SOURCES: acknowledging a source change through external evaluation clears requiresAttention', async (t) => {
  const { h, stub } = await sourceWorld(t);
  await available(h);
  h.clock.advance(PAST_MAX_AGE_MS);
  stub.setItem('T-1', { title: 'Tracker one, changed' });
  await available(h);
  const task = await readTask(h, 1);
  t.equal(task.requiresAttention, true);
  const eventId = task.externalChanges[0].id;
  const version = workspaceVersion(h);
  const ack = await h.call('POST', `${API}/tasks/1/external-evaluation`, {
    headers: { 'if-match': task.etag, 'idempotency-key': 'ack-1' }, body: { decision: 'acknowledge', eventId },
  });
  t.equal(ack.status, 204, ack.text ?? '');
  t.equal(workspaceVersion(h), version + 1, 'acknowledging is a mutation');
  const after = await readTask(h, 1);
  t.equal(after.requiresAttention, false);
  t.equal(after.externalChanges[0].acknowledgedUtc, '2026-11-16T10:00:15.001Z');
  const again = await h.call('POST', `${API}/tasks/1/external-evaluation`, {
    headers: { 'if-match': after.etag, 'idempotency-key': 'ack-2' }, body: { decision: 'acknowledge', eventId },
  });
  expectProblem(t, again, 'source_context_changed', 'acknowledged twice');
  t.equal((await readTask(h, 3)).requiresAttention, false, 'the other linked task had no change');
});

async function offered(h: Harness): Promise<number[]> {
  const response = await h.call('GET', `${API}/tasks/available`);
  if (response.status !== 200) throw new Error(`available answered ${response.status}: ${response.text}`);
  return response.json.map((task: { id: number }) => task.id);
}

t.test('SOURCES: /tasks/available refreshes stale linked sources before offering', async (t) => {
  const { h, stub } = await sourceWorld(t);
  t.strictSame(await offered(h), [4, 1, 8, 3], 'both linked tasks are offered once refreshed');
  t.equal(stub.gets('T-1').length, 1, 'T-1 was fetched');
  t.equal(stub.gets('T-2').length, 1, 'T-2 was fetched');
  t.equal(stub.requests.length, 2, 'nothing else was called');
  t.equal((await readTask(h, 1)).externalContext[0].facts.title, 'Tracker one', 'the offered task shows the fresh facts');
});

t.test('SOURCES: /tasks/available reuses refresh results at most 15 s old and refreshes again after', async (t) => {
  const { h, stub } = await sourceWorld(t);
  await offered(h);
  h.clock.advance(MAX_AGE_MS);
  t.strictSame(await offered(h), [4, 1, 8, 3]);
  t.equal(stub.gets('T-1').length, 1, 'no second GET at 15 s');
  h.clock.advance(1);
  t.strictSame(await offered(h), [4, 1, 8, 3]);
  t.equal(stub.gets('T-1').length, 2, 'a GET again once older than 15 s');
  t.equal(stub.gets('T-2').length, 2);
});

/** Moves the clock on by `ms`, lists the offer and says how often T-1 has been fetched so far. */
async function fetchesAfter(h: Harness, stub: { gets(itemId: string): unknown[] }, ms: number): Promise<number> {
  h.clock.advance(ms);
  await offered(h);
  return stub.gets('T-1').length;
}

t.test('SOURCES: an offer list made just before 15 s is not reused a millisecond after', async (t) => {
  const { h, stub } = await sourceWorld(t);
  await offered(h);
  t.equal(await fetchesAfter(h, stub, MAX_AGE_MS - 1), 1, 'no second GET at 14.999 s');
  t.equal(await fetchesAfter(h, stub, 1), 1, 'nor at 15 s (the list is read afresh, the item still fresh)');
  t.equal(await fetchesAfter(h, stub, 0.25), 1, 'nor at 15.00025 s: the clock is read in whole milliseconds');
  t.equal(await fetchesAfter(h, stub, 0.75), 2, 'a GET 15.001 s after the last');
});

t.test('SOURCES: /tasks/available refreshes different items concurrently', async (t) => {
  const { h, stub } = await sourceWorld(t);
  // Neither GET is answered until both have arrived: sequential refreshes would never get there.
  let open: () => void = () => undefined;
  const gate = { kind: 'gate', open: new Promise<void>((resolve) => { open = resolve; }) } as const;
  stub.failRefresh('T-1', gate);
  stub.failRefresh('T-2', gate);
  const listed = offered(h);
  const arrived = () => stub.gets('T-1').length + stub.gets('T-2').length;
  for (let turn = 0; turn < 5000 && arrived() < 2; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  t.equal(arrived(), 2, 'both GETs arrived before either was answered');
  open();
  t.strictSame(await listed, [4, 1, 8, 3]);
  t.equal(stub.maxConcurrent, 2, 'the stub was answering both GETs at the same time');
  const [one, two] = [stub.gets('T-1')[0], stub.gets('T-2')[0]];
  t.ok(one !== undefined && two !== undefined && one.finishedMs !== null && two.finishedMs !== null);
  if (one?.finishedMs != null && two?.finishedMs != null) {
    t.ok(two.startedMs < one.finishedMs && one.startedMs < two.finishedMs, 'the two requests overlapped');
  }
});

t.test('SOURCES: offer lists made at the same time share one refresh of a stale item: the source is asked once', async (t) => {
  const { h, stub } = await sourceWorld(t);
  const [first, second] = await Promise.all([available(h), available(h)]);
  t.strictSame(second.map((task) => task.id), first.map((task) => task.id), 'the same offer');
  t.ok(first.some((task) => task.id === 1), 'the refreshed task is offered');
  t.equal(stub.gets('T-1').length, 1, 'T-1 asked once for both');
  t.equal(stub.gets('T-2').length, 1, 'T-2 too');
});

t.test('SOURCES: /tasks/available omits a task whose source fails, remembers the failure for 15 s and offers the others', async (t) => {
  const failures: [string, StubFailure][] = [
    ['500', { kind: 'status', status: 500 }],
    ['invalid JSON', { kind: 'invalid-json' }],
    ['204 (a 2xx that is not 200)', { kind: 'status', status: 204 }],
    ['404', { kind: 'status', status: 404 }],
  ];
  for (const [label, failure] of failures) {
    await t.test(label, async (t) => {
      const { h, stub } = await sourceWorld(t);
      t.strictSame(await offered(h), [4, 1, 8, 3], 'first, all good');
      const before = await readTask(h, 1);

      h.clock.advance(PAST_MAX_AGE_MS);
      stub.failRefresh('T-1', failure);
      t.strictSame(await offered(h), [4, 8, 3], 'task 1 is omitted, the others are offered');
      t.equal(stub.gets('T-1').length, 2);
      const failed = await readTask(h, 1);
      t.strictSame(failed.externalContext, [{
        ...before.externalContext[0], isAvailable: false,
      }], 'the last facts and lastSuccessUtc are kept, isAvailable is false');
      t.strictSame(failed.externalChanges, [], 'a failure records no change');

      stub.failRefresh('T-1', null);
      h.clock.advance(MAX_AGE_MS);
      t.strictSame(await offered(h), [4, 8, 3], 'still omitted inside the window, although the source is back');
      t.equal(stub.gets('T-1').length, 2, 'no new GET inside the window');
      h.clock.advance(1);
      t.strictSame(await offered(h), [4, 1, 8, 3], 'offered again once a refresh after the window succeeds');
      t.equal(stub.gets('T-1').length, 3);
    });
  }
  await t.test('a source that never worked', async (t) => {
    const { h, stub } = await sourceWorld(t);
    stub.failRefresh('T-2', { kind: 'status', status: 503 });
    t.strictSame(await offered(h), [4, 1, 8], 'task 3 is omitted from the first list');
    t.match((await readTask(h, 3)).externalContext[0], { facts: { title: 'T-2' }, lastSuccessUtc: null, isAvailable: false });
  });
});

t.test('SOURCES: the sourceMaxAgeMs option changes how long a refresh counts when offering', async (t) => {
  await t.test('60 s', async (t) => {
    const { h, stub } = await sourceWorld(t, { service: { sourceMaxAgeMs: 60_000 } });
    await offered(h);
    t.equal(await fetchesAfter(h, stub, 30_000), 1, 'no GET at 30 s');
    t.equal(await fetchesAfter(h, stub, 30_000), 1, 'no GET at 60 s');
    t.equal(await fetchesAfter(h, stub, 1), 2, 'a GET once older than 60 s');
  });
  await t.test('0: every list refreshes', async (t) => {
    const { h, stub } = await sourceWorld(t, { service: { sourceMaxAgeMs: 0 } });
    await offered(h);
    await offered(h);
    await offered(h);
    t.equal(stub.gets('T-1').length, 3);
  });
  await t.test('a failure counts for the same window', async (t) => {
    const { h, stub } = await sourceWorld(t, { service: { sourceMaxAgeMs: 5_000 } });
    stub.failRefresh('T-1', { kind: 'status', status: 500 });
    t.strictSame(await offered(h), [4, 8, 3]);
    stub.failRefresh('T-1', null);
    h.clock.advance(5_000);
    t.strictSame(await offered(h), [4, 8, 3], 'remembered for 5 s');
    h.clock.advance(1);
    t.strictSame(await offered(h), [4, 1, 8, 3], 'tried again after 5 s');
  });
});

t.test('SOURCES: facts are kept within the API\'s bounds: title and business status 200 characters, description 20000', async (t) => {
  const { h, stub } = await sourceWorld(t, {
    items: { 'T-1': { title: `${'t'.repeat(199)}\u{1F600}tail`, description: 'd'.repeat(30_000), businessStatus: 's'.repeat(500) } },
  });
  await available(h);
  const facts = (await readTask(h, 1)).externalContext[0].facts;
  t.equal(facts.title, `${'t'.repeat(199)}\u{1F600}`, '200 code points, a surrogate pair kept whole');
  t.equal(facts.description, 'd'.repeat(20_000));
  t.equal(facts.businessStatus, 's'.repeat(200));
  const version = workspaceVersion(h);
  h.clock.advance(PAST_MAX_AGE_MS);
  await available(h);
  t.equal(stub.gets('T-1').length, 2);
  t.strictSame((await readTask(h, 1)).externalChanges, [], 'the same long facts again are no change');
  t.equal(workspaceVersion(h), version);
});

t.test('SOURCES: a task keeps every unacknowledged change but only the newest 100 acknowledged changes and 100 activations', async (t) => {
  const { h, stub } = await sourceWorld(t);
  await available(h);
  const itemId = h.db.prepare("SELECT id FROM source_items WHERE item_id = 'T-1'").pluck().get() as number;
  const facts = JSON.stringify({ title: 'Earlier', description: null, businessStatus: null });
  const change = h.db.prepare(`INSERT INTO source_changes (task_id, source_item_id, kind, before_facts, after_facts, occurred_utc, received_utc, acknowledged_utc)
    VALUES (1, ?, 'source', ?, ?, 0, 0, ?)`);
  const activation = h.db.prepare("INSERT INTO source_activations (task_id, activated_utc, sources) VALUES (1, 0, '[]')");
  h.db.transaction(() => {
    for (let index = 0; index < 150; index += 1) {
      change.run(itemId, facts, facts, index < 2 ? null : 1);
      activation.run();
    }
  })();
  const acknowledged = () => h.db.prepare('SELECT id FROM source_changes WHERE task_id = 1 AND acknowledged_utc IS NOT NULL ORDER BY id').pluck().all() as number[];
  const before = acknowledged();

  h.clock.advance(PAST_MAX_AGE_MS);
  stub.setItem('T-1', { title: 'Tracker one, changed' });
  await available(h);
  t.strictSame(acknowledged(), before.slice(-100), 'the newest 100 acknowledged changes');
  const open = h.db.prepare('SELECT count(*) FROM source_changes WHERE task_id = 1 AND acknowledged_utc IS NULL').pluck().get();
  t.equal(open, 3, 'the two old unacknowledged ones and the new one: an agent must still see them');
  t.equal(h.db.prepare('SELECT count(*) FROM source_activations WHERE task_id = 1').pluck().get(), 100, 'the newest 100 activations');
  const task = await readTask(h, 1);
  t.equal(task.externalChanges.length, 103);
  t.equal(task.sourceActivations.at(-1)?.sources[0]?.title, 'Tracker one, changed', 'the new activation among them');
  t.equal((await readTask(h, 3)).externalChanges.length, 0, 'another task\'s history is its own');
});
