import t from 'tap';
import Database from 'better-sqlite3';
import { mkdtempSync, renameSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createService } from '../../lib/service.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { manualClock } from '../../lib/time/clock.js';
import { API, workspaceVersion } from '../helpers/api.js';
import { harness } from '../helpers/service.js';
import { expectProblem } from '../helpers/expect-problem.js';
import { baseFixture, TEST_NOW, TOKENS } from '../helpers/fixture.js';

/**
 * A database held by another connection (a long `load`, an embedder's transaction) past the busy
 * timeout, a full disk, or storage that stopped taking writes is a retry-later condition, not an
 * internal error: 503 temporarily_unavailable.
 */
t.test('DATABASE BUSY: a write while another connection holds the write lock gives 503 temporarily_unavailable, and nothing changes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'wta-busy-'));
  const path = join(dir, 'service.db');
  const clock = manualClock(TEST_NOW);
  const seed = new Database(path);
  loadFixture(seed, baseFixture(), { now: clock.now() });
  seed.close();
  const db = new Database(path);
  const errors: Record<string, unknown>[] = [];
  const service = createService({ db, clock, rateLimit: 100_000, logger: { error: (entry) => errors.push(entry) } });
  // The service's own timeout is 5 s; the test need not wait for it to run out.
  db.pragma('busy_timeout = 0');
  const other = new Database(path);
  t.teardown(() => {
    other.close();
    service.close();
    db.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const call = async (method: string, url: string, headers: Record<string, string> = {}, body?: unknown) => {
    const response = await service.handle({
      method, url: `${API}${url}`,
      headers: { authorization: `Bearer ${TOKENS.ada}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, headers: response.headers, text: response.body };
  };
  const notes = () => (db.prepare('SELECT count(*) AS n FROM notes WHERE task_id = 1').get() as { n: number }).n;

  other.exec('BEGIN IMMEDIATE');
  const read = await call('GET', '/tasks/1');
  t.equal(read.status, 200, 'reads go on while another connection writes (WAL)');
  const etag = read.headers['etag'] as string;
  const write = () => call('POST', '/tasks/1/notes', { 'if-match': etag, 'idempotency-key': 'busy-1' }, { text: 'Hello' });

  const refused = await write();
  expectProblem(t, refused, 'temporarily_unavailable');
  t.equal(refused.status, 503);
  t.equal(refused.headers['retry-after'], '1', 'Retry-After tells the client when to try again');
  t.equal(notes(), 0, 'nothing written');
  t.match(errors, [{ message: 'database busy' }], 'the operator sees why in the log');

  other.exec('ROLLBACK');
  const retried = await write();
  t.equal(retried.status, 204, 'the same request succeeds once the lock is gone');
  t.equal(retried.headers['idempotent-replayed'], undefined, 'the refused attempt stored no receipt');
  t.equal(notes(), 1);
});

t.test('DATABASE FULL: a write that finds no room gives 503 temporarily_unavailable, is logged as database full, and nothing changes', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  t.teardown(() => h.service.close());
  const etag = (await h.call('GET', `${API}/tasks/1`)).headers['etag'];
  const version = workspaceVersion(h);
  // No page beyond those in use: the next write that needs a page fails as a full disk would.
  h.db.pragma(`max_page_count = ${h.db.pragma('page_count', { simple: true }) as number}`);
  const refused = await h.call('POST', `${API}/tasks/1/notes`, {
    headers: { 'if-match': etag, 'idempotency-key': 'full-1' }, body: { text: 'x'.repeat(20000) },
  });
  expectProblem(t, refused, 'temporarily_unavailable');
  t.equal(refused.headers['retry-after'], '1');
  t.ok(h.errors.some((entry) => entry['message'] === 'database full'), 'the operator is told');
  h.db.pragma('max_page_count = 1073741823');
  t.equal(workspaceVersion(h), version, 'nothing was applied');
  const retried = await h.call('POST', `${API}/tasks/1/notes`, {
    headers: { 'if-match': etag, 'idempotency-key': 'full-1' }, body: { text: 'x'.repeat(20000) },
  });
  t.equal(retried.status, 204, 'the same request succeeds once there is room (no receipt was kept)');
  t.notOk(retried.headers['idempotent-replayed']);
});

t.test('DATABASE READ-ONLY: a write refused by storage that stopped taking writes gives 503 temporarily_unavailable, is logged as database read-only, and nothing changes', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  t.teardown(() => h.service.close());
  const etag = (await h.call('GET', `${API}/tasks/1`)).headers['etag'];
  const version = workspaceVersion(h);
  // What a file system remounted read-only does to the open connection: every write refused.
  h.db.pragma('query_only = ON');
  const refused = await h.call('POST', `${API}/tasks/1/notes`, {
    headers: { 'if-match': etag, 'idempotency-key': 'ro-1' }, body: { text: 'kept?' },
  });
  expectProblem(t, refused, 'temporarily_unavailable');
  t.equal(refused.headers['retry-after'], '1');
  t.ok(h.errors.some((entry) => entry['message'] === 'database read-only'), 'the operator is told');
  t.notOk(h.errors.some((entry) => entry['message'] === 'unexpected error'), 'no 500');
  const read = await h.call('GET', `${API}/tasks/1`);
  t.equal(read.status, 200, 'reads still work');
  h.db.pragma('query_only = OFF');
  t.equal(workspaceVersion(h), version, 'nothing was applied');
  t.notOk(h.db.inTransaction, 'no batch is left open');
  const retried = await h.call('POST', `${API}/tasks/1/notes`, {
    headers: { 'if-match': etag, 'idempotency-key': 'ro-1' }, body: { text: 'kept?' },
  });
  t.equal(retried.status, 204, 'the same request succeeds once writes are taken again (no receipt was kept)');
});

t.test('DATABASE FILE GONE: a database file removed or replaced while the service runs refuses writes 503 (they would be lost at the next start), logged; reads go on', async (t) => {
  for (const how of ['removed', 'replaced', 'linked elsewhere', 'unreachable'] as const) {
    const dir = mkdtempSync(join(tmpdir(), 'wta-gone-'));
    t.teardown(() => rmSync(dir, { recursive: true, force: true }));
    const real = join(dir, 'real.sqlite');
    // Served through a link, as a deployment that switches versions might.
    const path = how === 'linked elsewhere' ? join(dir, 'db.sqlite') : real;
    if (path !== real) symlinkSync(real, path);
    const seed = new Database(path);
    loadFixture(seed, baseFixture(), { now: Date.parse(TEST_NOW) });
    seed.close();
    const errors: Record<string, unknown>[] = [];
    const service = createService({ db: path, clock: manualClock(TEST_NOW), logger: { error: (entry) => errors.push(entry) } });
    t.teardown(() => service.close());
    const call = async (method: string, url: string, headers: Record<string, string> = {}, body?: unknown) =>
      service.handle({ method, url, headers: { authorization: `Bearer ${TOKENS.ada}`, 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
    const etag = (await call('GET', `${API}/tasks/1`)).headers['etag'] ?? '';
    t.equal((await call('POST', `${API}/tasks/1/notes`, { 'if-match': etag }, { text: 'kept' })).status, 204, `${how}: a write before`);
    const etagAfter = (await call('GET', `${API}/tasks/1`)).headers['etag'] ?? '';
    if (how === 'removed' || how === 'replaced') for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
    if (how === 'replaced') {
      const other = new Database(path);
      other.exec('CREATE TABLE other (x)');
      other.close();
    }
    if (how === 'linked elsewhere') {
      new Database(join(dir, 'other.sqlite')).close();
      rmSync(path);
      symlinkSync(join(dir, 'other.sqlite'), path);
    }
    if (how === 'unreachable') {
      // A loop where the file was: the path can no longer be looked at (ELOOP), not merely missing.
      renameSync(real, join(dir, 'moved.sqlite'));
      symlinkSync(real, real);
    }
    const refused = await call('POST', `${API}/tasks/1/notes`, { 'if-match': etagAfter }, { text: 'lost?' });
    t.equal(refused.status, 503, `${how}: the write is refused`);
    t.match(JSON.parse(refused.body ?? '{}'), { code: 'temporarily_unavailable' });
    t.ok(errors.some((entry) => entry['message'] === 'database file removed or replaced'), `${how}: the operator is told`);
    t.equal((await call('GET', `${API}/tasks/1`)).status, 200, `${how}: reads are still answered`);
  }
});

t.test('DATABASE FULL: a write that makes SQLite roll back the whole batch takes the batch\'s other writes with it, all answered 503; later writes start a new batch', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  t.teardown(() => h.service.close());
  const gus = { token: TOKENS.otherOrg };
  const globex = (await h.call('GET', `${API}/tasks/90`, gus)).headers['etag'];
  const acme = (await h.call('GET', `${API}/tasks/3`)).headers['etag'];
  h.db.pragma(`max_page_count = ${h.db.pragma('page_count', { simple: true }) as number}`);
  const note = (text: string) => ({ text });
  // One turn of the event loop: Globex's small note opens the batch, Ada's big one overflows it.
  const first = h.call('POST', `${API}/tasks/90/notes`, { ...gus, headers: { 'if-match': globex }, body: note('first') });
  const big = h.call('POST', `${API}/tasks/3/notes`, { headers: { 'if-match': acme }, body: note('x'.repeat(20000)) });
  const third = h.call('POST', `${API}/tasks/90/notes`, { ...gus, headers: { 'if-match': globex }, body: note('third') });
  const [firstAnswer, bigAnswer, thirdAnswer] = await Promise.all([first, big, third]);
  expectProblem(t, firstAnswer, 'temporarily_unavailable', 'the write that shared the rolled-back batch');
  expectProblem(t, bigAnswer, 'temporarily_unavailable', 'the write that found no room');
  const texts = () => h.db.prepare('SELECT text FROM notes WHERE task_id = 90').pluck().all();
  t.notOk(texts().includes('first'), 'the first note is not kept');
  // The third ran after the rollback, in a batch of its own: answered as it was kept.
  t.equal(thirdAnswer.status === 204, texts().includes('third'), `the third answered ${thirdAnswer.status} and is ${texts().includes('third') ? '' : 'not '}kept`);
  t.notOk(h.errors.some((entry) => entry['message'] === 'unexpected error'), 'no 500');
  h.db.pragma('max_page_count = 1073741823');
  t.notOk(h.db.inTransaction, 'no batch is left open');
});
