import t from 'tap';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { etagOf, type TapTest } from '../helpers/api.js';
import { askedToPublish } from '../helpers/publishing.js';
import type { PublishRequest, SourceProvider } from '../../lib/sources/provider.js';
import { sourcePublisher } from '../../lib/sources/publisher.js';
import { sourceStatements, type SourceStatements } from '../../lib/store/sources.js';
import type { Logger } from '../../lib/logger.js';
import { createService } from '../../lib/service.js';
import { baseFixture, TEST_NOW, TOKENS } from '../helpers/fixture.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { manualClock } from '../../lib/time/clock.js';

/**
 * Publishing when more than one publisher reads the same queue (two processes serving one file,
 * each with its own publisher), and when the database refuses to record an outcome for a while
 * (another process holding the write lock): a request is posted once, and the ref the source
 * gave is kept.
 */

const RETRY_MS = 30_000;

/**
 * A request to publish whose first send failed, so it is due again after the 30 s back-off; the
 * service's own publisher is then left alone (no request reaches it), and the test's publishers
 * stand for the processes.
 */
async function failedOnce(t: TapTest) {
  let failing = true;
  const provider: SourceProvider = {
    refresh: async () => ({ title: 'Ticket' }),
    publish: async () => {
      if (failing) throw new Error('tracker down');
      return { ref: 'unused' };
    },
  };
  const h = await askedToPublish(t, provider);
  await h.service.idle();
  failing = false;
  t.equal(h.db.prepare('SELECT state FROM source_publications').pluck().get(), 'failed', 'the first send failed');
  h.clock.advance(RETRY_MS);
  return h;
}

/** A publisher over `db` as another process would run one, posting through `provider`. */
function processPublisher(h: Awaited<ReturnType<typeof failedOnce>>, provider: SourceProvider, sources: SourceStatements, logger: Logger) {
  return sourcePublisher({
    sources,
    providers: new Map([['tracker', provider]]),
    timeoutMs: 5000,
    logger,
    clock: h.clock,
    inTransaction: () => h.db.inTransaction,
    batches: { open: false, settled: async () => true },
    closed: () => false,
    stop: new AbortController().signal,
  });
}

/** The statements over `h.db`, except that recording a success fails as a locked database does until `unlock()`. */
function recordsLocked(h: Awaited<ReturnType<typeof failedOnce>>): { sources: SourceStatements; unlock: () => void } {
  const real = sourceStatements(h.db);
  let locked = true;
  const sources: SourceStatements = {
    ...real,
    markPublished: (...args) => {
      if (locked) throw Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
      real.markPublished(...args);
    },
  };
  return { sources, unlock: () => { locked = false; } };
}

t.test('SOURCES: two publishers reading the same due request (two processes on one file) post it once', async (t) => {
  const h = await failedOnce(t);
  const sent: PublishRequest[] = [];
  const answers: (() => void)[] = [];
  // Held until both publishers have had their turn: each would have read the queue by then.
  const provider: SourceProvider = {
    refresh: async () => ({ title: 'Ticket' }),
    publish: (_itemId, request) => {
      sent.push(request);
      return new Promise((resolve) => answers.push(() => resolve({ ref: `ref-${sent.length}` })));
    },
  };
  const quiet: Logger = { error: () => {}, info: () => {} };
  const first = processPublisher(h, provider, sourceStatements(h.db), quiet);
  const second = processPublisher(h, provider, sourceStatements(h.db), quiet);
  first.kick();
  second.kick();
  for (let turn = 0; turn < 20; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  for (const answer of answers) answer();
  await Promise.all([first.idle(), second.idle()]);
  t.equal(sent.length, 1, 'one post');
  t.strictSame(h.db.prepare('SELECT state, external_ref AS ref FROM source_publications').get(), { state: 'published', ref: 'ref-1' });
});

t.test('SOURCES: an outcome the database could not record yet is recorded later, and the request is not posted again', async (t) => {
  const h = await failedOnce(t);
  const provider = countingProvider();
  const { sources, unlock } = recordsLocked(h);
  const errors: Record<string, unknown>[] = [];
  const publisher = processPublisher(h, provider, sources, { error: (entry) => errors.push(entry), info: () => {} });
  publisher.kick();
  await publisher.idle();
  t.equal(provider.posts, 1, 'posted');
  t.match(errors, [{ message: 'publication run failed' }], 'the failed record is logged');

  unlock();
  h.clock.advance(70_000); // past the time a taken publication is held, were its outcome lost
  publisher.kickIfDue();
  await publisher.idle();
  t.equal(provider.posts, 1, 'not posted again');
  t.strictSame(h.db.prepare('SELECT state, external_ref AS ref FROM source_publications').get(), { state: 'published', ref: 'ref-1' });
  t.strictSame(h.db.prepare('SELECT external_ref FROM source_publication_refs').pluck().all(), ['ref-1'], 'replies to the first ref find the request');
});

t.test('SOURCES: a failure recorded after another process published the same request does not undo the success', async (t) => {
  const h = await failedOnce(t);
  const row = h.db.prepare('SELECT stage_id AS stageId, generation FROM source_publications').get() as { stageId: number; generation: number };
  const sources = sourceStatements(h.db);
  sources.markPublished(row.stageId, 1, 'ref-a', row.generation);
  sources.markPublishFailed(row.stageId, h.clock.now() + RETRY_MS, row.generation);
  t.equal(h.db.prepare('SELECT state FROM source_publications').pluck().get(), 'published');
});

/** A provider that posts at once (ref-1, ref-2, ...), counting its posts. */
function countingProvider() {
  const provider = {
    posts: 0,
    refresh: async () => ({ title: 'Ticket' }),
    publish: async () => ({ ref: `ref-${(provider.posts += 1)}` }),
  };
  return provider;
}

t.test('SOURCES: a send cut short by close() is handed back: the next service on the file posts it at once, not after the hold', async (t) => {
  const hanging: SourceProvider = { refresh: async () => ({ title: 'Ticket' }), publish: () => new Promise(() => {}) };
  const h = await askedToPublish(t, hanging);
  for (let turn = 0; turn < 20; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  t.ok(h.db.prepare('SELECT next_attempt_utc FROM source_publications').pluck().get() as number > h.clock.now(), 'taken while it is sent');
  h.service.close();
  t.equal(h.db.prepare('SELECT next_attempt_utc FROM source_publications').pluck().get(), h.clock.now(), 'handed back, due now');

  const next = countingProvider();
  const service = createService({ db: h.db, clock: h.clock, sources: { tracker: next }, logger: { error: () => {} } });
  t.teardown(() => service.close());
  await service.handle({ method: 'GET', url: '/api/v1/identity', headers: { authorization: `Bearer ${TOKENS.ada}` } });
  await service.idle();
  t.equal(next.posts, 1, 'posted by the next service without waiting');
});

t.test('SOURCES: a taken publication whose outcome never came (its process died) is sent again after the hold', async (t) => {
  const h = await failedOnce(t);
  const sources = sourceStatements(h.db);
  const row = h.db.prepare('SELECT stage_id AS stageId, generation FROM source_publications').get() as { stageId: number; generation: number };
  // Another process took it and stopped without a word.
  t.ok(sources.takePublication(row.stageId, row.generation, h.clock.now(), h.clock.now() + 65_000));
  const provider = countingProvider();
  const publisher = processPublisher(h, provider, sources, { error: () => {}, info: () => {} });
  publisher.kickIfDue();
  await publisher.idle();
  t.equal(provider.posts, 0, 'not while it is held');
  h.clock.advance(65_000);
  publisher.kickIfDue();
  await publisher.idle();
  t.equal(provider.posts, 1, 'sent once the hold is over: at least once, never lost');
});

t.test('SOURCES: an outcome still unrecorded at close() is recorded then, so the next service does not post it again', async (t) => {
  const h = await failedOnce(t);
  const provider = countingProvider();
  const { sources, unlock } = recordsLocked(h);
  const publisher = processPublisher(h, provider, sources, { error: () => {}, info: () => {} });
  publisher.kick();
  await publisher.idle();
  unlock();
  publisher.settleOnClose();
  t.strictSame(h.db.prepare('SELECT state, external_ref AS ref FROM source_publications').get(), { state: 'published', ref: 'ref-1' });
  t.equal(provider.posts, 1);
});

t.test('SOURCES: close() does not wait on another process\'s lock to hand a request back: it leaves it to the hold', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'wta-publish-close-'));
  const path = join(dir, 'service.db');
  const clock = manualClock(TEST_NOW);
  const fixture = baseFixture();
  fixture.tasks[0]!['sources'] = [{ providerKey: 'tracker', itemId: 'T-1' }];
  const seed = new Database(path);
  loadFixture(seed, fixture, { now: clock.now() });
  seed.close();
  const db = new Database(path);
  const hanging: SourceProvider = { refresh: async () => ({ title: 'Ticket' }), publish: () => new Promise(() => {}) };
  const service = createService({ db, clock, sources: { tracker: hanging }, logger: { error: () => {} } });
  const other = new Database(path);
  t.teardown(() => {
    other.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const authorization = `Bearer ${TOKENS.ada}`;
  const read = await service.handle({ method: 'GET', url: '/api/v1/tasks/1', headers: { authorization } });
  const created = await service.handle({
    method: 'POST', url: '/api/v1/tasks/1/human-requests',
    headers: { authorization, 'if-match': read.headers['etag'] as string, 'content-type': 'application/json' },
    body: JSON.stringify({ humanAssigneeId: 11, title: 'Which tone?', estimatedMinutes: 15, publishExternally: true }),
  });
  t.equal(created.status, 201);
  for (let turn = 0; turn < 20; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  const heldUntil = db.prepare('SELECT next_attempt_utc FROM source_publications').pluck().get() as number;
  t.ok(heldUntil > clock.now(), 'taken while it is sent');

  other.exec('BEGIN IMMEDIATE');
  const started = performance.now();
  service.close();
  const took = performance.now() - started;
  other.exec('ROLLBACK');
  // The busy timeout is 5 s: a close() that waited on the lock would take that long.
  t.ok(took < 2500, `close() did not wait for the lock (${Math.round(took)} ms)`);
  t.equal(db.prepare('SELECT next_attempt_utc FROM source_publications').pluck().get(), heldUntil, 'left to the hold');
  t.equal(db.pragma('busy_timeout', { simple: true }), 5000, 'the Database passed in keeps its busy timeout');
});

t.test('SOURCES: an outcome waiting for a write batch to end when close() comes is recorded by close(), not lost', async (t) => {
  let answer = (): void => undefined;
  const provider: SourceProvider = {
    refresh: async () => ({ title: 'Ticket' }),
    publish: () => new Promise((resolve) => { answer = () => resolve({ ref: 'ref-1' }); }),
  };
  const h = await askedToPublish(t, provider);
  for (let turn = 0; turn < 20; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  // One turn: a PATCH opens a batch, then the source answers; its record waits for the batch.
  const patch = h.call('PATCH', '/api/v1/tasks/3', { headers: { 'if-match': await etagOf(h, 3) }, body: { sequence: 6 } });
  t.ok(h.db.inTransaction, 'a batch is open');
  answer();
  for (let turn = 0; turn < 50; turn += 1) await Promise.resolve();
  h.service.close();
  await patch;
  t.strictSame(h.db.prepare('SELECT state, external_ref AS ref FROM source_publications').get(), { state: 'published', ref: 'ref-1' },
    'recorded with the ref replies will name');
});
