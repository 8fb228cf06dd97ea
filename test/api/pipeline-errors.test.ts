import t from 'tap';
import Database from 'better-sqlite3';
import { renameSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { harness } from '../helpers/service.js';
import type { TapTest } from '../helpers/api.js';
import { baseFixture, TEST_NOW, TOKENS } from '../helpers/fixture.js';
import { expectProblem, TRACE_ID } from '../helpers/expect-problem.js';
import type { ErrorCode } from '../../lib/domain/errors.js';
import { createService } from '../../lib/service.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { manualClock } from '../../lib/time/clock.js';
import { resolveOptions } from '../../lib/options.js';

// Contract 1, last paragraph: the error shape, trace ids, and the sanitised 500.

t.test('ERRORS: every error body is application/problem+json with exactly type, title, status, code, traceId', async (t) => {
  const h = harness({ rateLimit: 1000, defaultToken: TOKENS.ada });
  const cases: [ErrorCode, string, string, Parameters<typeof h.call>[2]?][] = [
    ['route_not_found', 'GET', '/api/v1/nope'],
    ['method_not_allowed', 'DELETE', '/api/v1/tasks/1'],
    ['request_too_large', 'GET', '/api/v1/identity', { raw: 'x'.repeat(131073) }],
    ['authentication_failed', 'GET', '/api/v1/identity', { token: null }],
    ['permission_denied', 'GET', '/api/v1/tasks/1', { token: TOKENS.identityOnly }],
    ['validation_failed', 'GET', '/api/v1/tasks/0'],
    ['task_not_found', 'GET', '/api/v1/tasks/90'],
    ['task_not_owned', 'GET', '/api/v1/tasks/7'],
  ];
  for (const [code, method, url, options] of cases) {
    const response = await h.call(method, url, options);
    expectProblem(t, response, code, `${method} ${url}`);
    t.notMatch(response.text, /detail|stack|message/i, `${method} ${url}: no diagnostics`);
  }
  const limited = harness({ rateLimit: 1, defaultToken: TOKENS.ada });
  await limited.call('GET', '/api/v1/identity');
  expectProblem(t, await limited.call('GET', '/api/v1/identity'), 'rate_limited');
});

t.test('ERRORS: every response, success too, has an X-Trace-Id of 32 lowercase hex characters', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const identity = await h.call('GET', '/api/v1/identity');
  t.equal(identity.status, 200);
  t.match(identity.headers['x-trace-id'], TRACE_ID, '200 identity');
  const task = await h.call('GET', '/api/v1/tasks/1');
  t.match(task.headers['x-trace-id'], TRACE_ID, '200 task');
  const notModified = await h.call('GET', '/api/v1/tasks/1', { headers: { 'if-none-match': task.headers['etag']! } });
  t.equal(notModified.status, 304);
  t.match(notModified.headers['x-trace-id'], TRACE_ID, '304');
  t.match((await h.call('GET', '/api/v1/tasks/available')).headers['x-trace-id'], TRACE_ID, '200 list');
  t.match((await h.call('GET', '/api/v1/openapi.json', { token: null })).headers['x-trace-id'], TRACE_ID, 'anonymous 200');
  t.match((await h.call('GET', '/api/v1/nope')).headers['x-trace-id'], TRACE_ID, '404');
});

t.test('ERRORS: two requests get different trace ids', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const seen = new Set<string>();
  for (let i = 0; i < 20; i++) {
    seen.add((await h.call('GET', '/api/v1/identity')).headers['x-trace-id']!);
    seen.add((await h.call('GET', '/api/v1/nope')).headers['x-trace-id']!);
  }
  t.equal(seen.size, 40, 'forty requests, forty trace ids');
});

t.test('ERRORS: an unexpected exception becomes a sanitised 500 internal_error and the logger gets the traceId and stack', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  t.equal((await h.call('GET', '/api/v1/identity')).status, 200);
  h.db.close(); // the service's prepared statements now throw
  const response = await h.call('GET', '/api/v1/identity');
  expectProblem(t, response, 'internal_error');
  t.notMatch(response.text, /database|connection|open|Error|at /, 'nothing of the failure leaks');
  t.equal(h.errors.length, 1, 'one log entry');
  const entry = h.errors[0]!;
  t.equal(entry['traceId'], response.json.traceId, 'the log entry carries the traceId');
  t.type(entry['error'], 'string');
  t.match(entry['error'], /database connection is not open/, 'the log entry carries the error');
  t.match(entry['error'], /\n\s+at /, 'and its stack');
  // Anonymous operations still answer.
  t.equal((await h.call('GET', '/api/v1/openapi.json', { token: null })).status, 200);
});

t.test('ERRORS: a logger that throws still yields the sanitised 500', async (t) => {
  const db = new Database(':memory:');
  const clock = manualClock(TEST_NOW);
  loadFixture(db, baseFixture(), { now: clock.now() });
  const logger = {
    error() {
      throw new Error('log sink is down');
    },
    debug() {
      throw new Error('log sink is down');
    },
  };
  const service = createService({ db, clock, logger });
  const request = { method: 'GET', url: '/api/v1/identity', headers: { authorization: `Bearer ${TOKENS.ada}` } };
  // An ordinary refusal logs at debug level: the throwing debug() must not change the answer.
  expectProblem(t, await service.handle({ ...request, url: '/api/v1/tasks/0' }), 'validation_failed', 'a 400 with a throwing debug()');
  db.close();
  expectProblem(t, await service.handle(request), 'internal_error', 'a 500 with a throwing error()');
});

t.test('ERRORS: an async logger that rejects costs neither the answer nor the process (no unhandled rejection)', async (t) => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  t.teardown(() => void process.off('unhandledRejection', onUnhandled));
  const rejecting = async () => {
    throw new Error('log shipper down');
  };
  // A thenable that is no promise is not awaited: its then() (which may start work) is never called.
  const badThenable = () => ({ get then(): never { throw new Error('then getter'); } });
  for (const [label, sink] of [['async functions', rejecting], ['a thenable whose then throws', badThenable]] as const) {
    const db = new Database(':memory:');
    const clock = manualClock(TEST_NOW);
    loadFixture(db, baseFixture(), { now: clock.now() });
    const service = createService({ db, clock, logger: { error: sink, info: sink, debug: sink } });
    const request = { method: 'GET', url: '/api/v1/identity', headers: { authorization: `Bearer ${TOKENS.ada}` } };
    expectProblem(t, await service.handle({ ...request, url: '/api/v1/tasks/0' }), 'validation_failed', `${label}: a 400 logged at debug level`);
    db.close();
    expectProblem(t, await service.handle(request), 'internal_error', `${label}: a 500 logged at error level`);
  }
  for (let turn = 0; turn < 3; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  t.strictSame(unhandled, [], 'no unhandled rejection');
});

t.test('ERRORS: handle() never throws: not on a database closed under it, nor with a clock that starts throwing (the answer is a 500 or the document)', async (t) => {
  const request = { method: 'GET', url: '/api/v1/identity', headers: { authorization: `Bearer ${TOKENS.ada}` } };
  const errors: Record<string, unknown>[] = [];
  const db = new Database(':memory:');
  const closed = createService({ db, logger: { error: (entry) => errors.push(entry) } });
  db.close();
  let answer: unknown;
  t.doesNotThrow(() => { answer = closed.handle(request); }, 'a service whose database was closed answers');
  expectProblem(t, await (answer as ReturnType<typeof closed.handle>), 'internal_error');
  t.doesNotThrow(() => { answer = closed.handle({ method: 'GET', url: '/api/v1/openapi.json', headers: {} }); });
  t.equal((await (answer as ReturnType<typeof closed.handle>)).status, 200, 'the anonymous document needs no database');
  t.ok(errors.some((entry) => entry['message'] === 'publication check failed'), 'the failed background check is logged');

  // A clock that answers when the service is created (it is checked then) and breaks later.
  let calls = 0;
  const clock = { now: () => { calls += 1; if (calls > 1) throw new Error('clock broke'); return Date.now(); } };
  const broken = createService({ db: ':memory:', clock, logger: { error: () => undefined } });
  t.doesNotThrow(() => { answer = broken.handle({ method: 'GET', url: '/api/v1/openapi.json', headers: {} }); }, 'a throwing clock');
  t.equal((await (answer as ReturnType<typeof broken.handle>)).status, 200);
  t.doesNotThrow(() => { answer = broken.handle(request); });
  t.equal((await (answer as ReturnType<typeof broken.handle>)).status, 401, 'an unknown token fails before the clock is read');

  const hostile = new Proxy({}, { get: () => { throw new Error('getter'); } });
  t.doesNotThrow(() => { answer = broken.handle(hostile as typeof request); }, 'a request whose every property throws');
  expectProblem(t, await (answer as ReturnType<typeof broken.handle>), 'internal_error');
});

t.test('ERRORS: after close() every request is 503 temporarily_unavailable with Retry-After, and nothing is logged', async (t) => {
  const errors: Record<string, unknown>[] = [];
  for (const db of [':memory:', new Database(':memory:')]) {
    const service = createService({ db, logger: { error: (entry) => errors.push(entry) } });
    service.close();
    for (const request of [
      { method: 'GET', url: '/api/v1/identity', headers: { authorization: `Bearer ${TOKENS.ada}` } },
      { method: 'GET', url: '/api/v1/openapi.json', headers: {} },
    ]) {
      const response = await service.handle(request);
      expectProblem(t, response, 'temporarily_unavailable', `${request.url} on ${typeof db === 'string' ? 'a path' : 'a Database passed in'}`);
      t.equal(response.headers['retry-after'], '1');
    }
    if (typeof db !== 'string') {
      t.ok(db.open, 'a Database passed in stays open');
      service.close();
      createService({ db }).close();
      t.pass('close() frees the connection for another service (and may be called twice)');
    }
  }
  t.strictSame(errors, []);
});

t.test('OPTIONS: a Database already used by a live service is refused: one service per connection', async (t) => {
  const db = new Database(':memory:');
  const first = createService({ db });
  t.throws(() => createService({ db }), {
    name: 'TypeError', message: 'createService: this Database is already used by another service; give each service its own connection',
  });
  first.close();
  t.doesNotThrow(() => createService({ db }).close(), 'free again once the first is closed');
});

t.test('OPTIONS: a database file a live service of this process writes is refused to a second service, by path, link or handle: one service per file', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'tasks.sqlite');
  const first = createService({ db: path });
  const refused = (db: string | Database.Database) => t.throws(() => createService({ db }), {
    name: 'TypeError', message: /^createService: .*tasks\.sqlite is already served by another service in this process; close\(\) that one first$/,
  }, typeof db === 'string' ? db : 'a Database of its own');
  refused(path);
  symlinkSync(path, join(dir, 'link.sqlite'));
  refused(join(dir, 'link.sqlite'));
  const own = new Database(path);
  refused(own);
  t.ok(own.open, 'a Database passed in stays open when refused');
  const response = await first.handle({ method: 'GET', url: '/api/v1/openapi.json', headers: {} });
  t.equal(response.status, 200, 'the first service is untouched');
  first.close();
  const next = createService({ db: own });
  t.pass('free again once the first is closed');
  next.close();
  own.close();
  createService({ db: ':memory:' }).close();
  createService({ db: ':memory:' }).close();
  const a = createService({ db: ':memory:' });
  const b = createService({ db: ':memory:' });
  t.pass('in-memory databases are each their own');
  a.close();
  b.close();

  const earlier = createService({ db: path });
  earlier.close();
  const later = createService({ db: path });
  earlier.close();
  refused(path);
  t.pass('a second close() of an earlier service frees nothing of a later one');
  later.close();
  const shared = new Database(path);
  const once = createService({ db: shared });
  once.close();
  const again = createService({ db: shared });
  once.close();
  t.throws(() => createService({ db: shared }), { message: /this Database is already used by another service/ }, 'nor its connection');
  again.close();
  shared.close();
  const handle = new Database(path);
  const orphaned = createService({ db: handle });
  handle.close();
  createService({ db: path }).close();
  t.pass('a connection closed without its service\'s close() holds the file no longer');
  orphaned.close();
});

t.test('ERRORS: a logger that throws changes no outcome: a publication stays published, a failing source is still 503', async (t) => {
  const fixture = baseFixture();
  const task = fixture.tasks.find((candidate) => candidate['id'] === 1);
  if (task === undefined) throw new Error('no task 1');
  task['sources'] = [{ providerKey: 'tracker', itemId: 'T-1' }];
  let published = 0;
  let failing = false;
  const tracker = {
    refresh: async () => {
      if (failing) throw new Error('tracker down');
      return { title: 'T-1' };
    },
    publish: async () => ({ ref: `ref-${(published += 1)}` }),
  };
  const sink = () => {
    throw new Error('log sink is down');
  };
  const h = harness({ fixture, defaultToken: TOKENS.ada, serviceOptions: { sources: { tracker }, logger: { error: sink, info: sink, debug: sink } } });
  t.teardown(() => h.service.close());
  const etag = async () => (await h.call('GET', '/api/v1/tasks/1')).headers['etag'];
  const asked = await h.call('POST', '/api/v1/tasks/1/human-requests', {
    headers: { 'if-match': await etag(), 'idempotency-key': 'ask-1' },
    body: { humanAssigneeId: 11, title: 'Which headline?', estimatedMinutes: 20, isBlocking: false, publishExternally: true },
  });
  t.equal(asked.status, 201);
  await h.service.idle();
  t.equal(published, 1, 'published once');
  // Hours later, with more writes to drive the publisher: a throwing info() did not turn the success into a retry.
  h.clock.advance(3 * 3_600_000);
  await h.call('POST', '/api/v1/tasks/1/notes', { headers: { 'if-match': await etag() }, body: { text: 'later' } });
  await h.service.idle();
  t.equal(published, 1, 'never published again');

  failing = true;
  const claim = await h.call('POST', '/api/v1/tasks/1/claim', { headers: { 'if-match': await etag(), 'idempotency-key': 'claim-1' } });
  expectProblem(t, claim, 'source_unavailable', 'a throwing error() while logging the failed refresh');
});

t.test('ERRORS: idle() waits for the open write batch, so close() right after it loses no write in flight', async (t) => {
  const path = join(t.testdir(), 'idle.sqlite');
  const seed = new Database(path);
  loadFixture(seed, baseFixture(), { now: Date.parse(TEST_NOW) });
  seed.close();
  const service = createService({ db: path, clock: manualClock(TEST_NOW) });
  const headers = { authorization: `Bearer ${TOKENS.ada}` };
  const read = await service.handle({ method: 'GET', url: '/api/v1/tasks/1', headers });
  const pending = service.handle({
    method: 'POST', url: '/api/v1/tasks/1/notes',
    headers: { ...headers, 'if-match': read.headers['etag'] ?? '', 'content-type': 'application/json' }, body: '{"text":"in flight"}',
  });
  await service.idle();
  service.close();
  t.equal((await pending).status, 204, 'the write was answered');
  const after = new Database(path, { readonly: true });
  t.equal(after.prepare("SELECT count(*) FROM notes WHERE text = 'in flight'").pluck().get(), 1, 'and committed before close()');
  after.close();
});

/**
 * A service on a file, and two writes sent together into one batch: a PATCH of task 1, then a
 * human request on it, whose answer (it may be published) comes a step after the batch commits.
 */
async function patchAndRequestInOneBatch(t: TapTest, logger?: { error: (entry: Record<string, unknown>) => void }) {
  const dir = t.testdir();
  const path = join(dir, 'batch.sqlite');
  const seed = new Database(path);
  loadFixture(seed, baseFixture(), { now: Date.parse(TEST_NOW) });
  seed.close();
  const service = createService({ db: path, clock: manualClock(TEST_NOW), ...(logger === undefined ? {} : { logger }) });
  const ada = { authorization: `Bearer ${TOKENS.ada}`, 'content-type': 'application/json' };
  const read = await service.handle({ method: 'GET', url: '/api/v1/tasks/1', headers: ada });
  const version = Number(/plan-(\d+)/.exec(read.headers['etag'] ?? '')?.[1]);
  const patch = (sequence: number, at: number) =>
    service.handle({ method: 'PATCH', url: '/api/v1/tasks/1', headers: { ...ada, 'if-match': `"task-1-plan-${at}"` }, body: JSON.stringify({ sequence }) });
  const patched = patch(7, version);
  const asked = service.handle({
    method: 'POST', url: '/api/v1/tasks/1/human-requests', headers: { ...ada, 'if-match': `"task-1-plan-${version + 1}"` },
    body: JSON.stringify({ humanAssigneeId: 11, title: 'Committed', estimatedMinutes: 5 }), // Grace
  });
  // Awaited by the test itself: what it does next must come in the same turn as the commit.
  return { service, dir, path, patched, asked, patchAgain: () => patch(8, version + 2) };
}

t.test('ERRORS: a write whose batch committed keeps its answer when close() comes before the answer is delivered', async (t) => {
  const { service, path, patched, asked } = await patchAndRequestInOneBatch(t);
  t.equal((await patched).status, 204);
  service.close();
  const answer = await asked;
  t.equal(answer.status, 201, 'the committed request is answered as made, not 503 (a retry would ask twice)');
  const after = new Database(path, { readonly: true });
  t.teardown(() => after.close());
  const { id } = JSON.parse(answer.body ?? '{}') as { id?: number };
  t.equal(after.prepare('SELECT count(*) FROM assistance_stages WHERE id = ?').pluck().get(id), 1, 'it is on disk');
});

t.test('ERRORS: a write whose batch committed does not wait for a later batch: that one failing leaves its answer as made', async (t) => {
  const errors: Record<string, unknown>[] = [];
  const { service, dir, path, patched, asked, patchAgain } = await patchAndRequestInOneBatch(t, { error: (entry) => errors.push(entry) });
  t.teardown(() => service.close());
  t.equal((await patched).status, 204);
  // A later write opens the next batch before the request's answer is delivered; moving the file
  // away makes that batch fail at its commit (it would be lost with the file's old name).
  const later = patchAgain();
  renameSync(path, join(dir, 'moved.sqlite'));
  t.equal((await asked).status, 201, 'the committed request keeps its 201');
  expectProblem(t, await later, 'temporarily_unavailable', 'the later batch\'s write');
  t.match(errors, [{ message: 'database file removed or replaced', method: 'PATCH' }], 'which the operator is told about');
});

/**
 * A service on a file whose task 1 is linked to a source that answers only when told, and a claim
 * of task 1 sent and left waiting for that source.
 */
async function claimWaitingOnSource(t: TapTest, file: string, handOver = false) {
  const path = join(t.testdir(), file);
  const fixture = baseFixture();
  const task = fixture.tasks.find((candidate) => candidate['id'] === 1);
  if (task === undefined) throw new Error('no task 1');
  task['sources'] = [{ providerKey: 'tracker', itemId: 'T-1' }];
  const seed = new Database(path);
  loadFixture(seed, fixture, { now: Date.parse(TEST_NOW) });
  seed.close();
  let answerSource: (facts: { title: string }) => void = () => undefined;
  const tracker = { refresh: () => new Promise<{ title: string }>((resolve) => (answerSource = resolve)), publish: async () => ({ ref: 'r' }) };
  const errors: Record<string, unknown>[] = [];
  // `handOver`: the service gets an open Database (which close() leaves open) instead of the path.
  const db = handOver ? new Database(path) : path;
  if (typeof db !== 'string') t.teardown(() => db.close());
  const service = createService({ db, clock: manualClock(TEST_NOW), sources: { tracker }, logger: { error: (entry) => errors.push(entry) } });
  const headers = { authorization: `Bearer ${TOKENS.ada}` };
  const etag = (await service.handle({ method: 'GET', url: '/api/v1/tasks/1', headers })).headers['etag'] ?? '';
  const claim = service.handle({ method: 'POST', url: '/api/v1/tasks/1/claim', headers: { ...headers, 'if-match': etag, 'idempotency-key': 'c1' } });
  await new Promise((resolve) => setImmediate(resolve));
  return { service, claim, errors, answerSource: () => answerSource({ title: 'T-1' }), db };
}

t.test('ERRORS: idle() also waits for answers still being made (a claim waiting on its source), so close() after it breaks none', async (t) => {
  const { service, claim, errors, answerSource } = await claimWaitingOnSource(t, 'idle-claim.sqlite');
  let idle = false;
  const idled = service.idle().then(() => (idle = true));
  await new Promise((resolve) => setImmediate(resolve));
  t.notOk(idle, 'not idle while the claim waits for its source');
  answerSource();
  await idled;
  service.close();
  t.equal((await claim).status, 200, 'the claim was answered');
  t.strictSame(errors, [], 'nothing failed on a closed database');
});

t.test('ERRORS: an answer that outlives close() (a claim whose source answers late) is 503 temporarily_unavailable, and nothing is logged', async (t) => {
  const { service, claim, errors, answerSource } = await claimWaitingOnSource(t, 'late.sqlite');
  service.close();
  answerSource();
  const answer = await claim;
  expectProblem(t, answer, 'temporarily_unavailable');
  t.equal(answer.headers['retry-after'], '1');
  t.strictSame(errors, [], 'no unexpected error is logged');
});

t.test('ERRORS: after close() work still under way writes nothing, also on a Database passed in that a new service now uses', async (t) => {
  const { service, claim, errors, answerSource, db } = await claimWaitingOnSource(t, 'handed-over.sqlite', true);
  if (typeof db === 'string') throw new Error('expected a Database');
  service.close();
  const next = createService({ db, clock: manualClock(TEST_NOW) });
  t.teardown(() => next.close());
  answerSource();
  expectProblem(t, await claim, 'temporarily_unavailable', 'the old service\'s claim');
  t.equal(db.prepare('SELECT count(*) FROM claims WHERE task_id = 1').pluck().get(), 0, 'no lease was taken');
  t.equal(db.prepare("SELECT count(*) FROM source_items WHERE last_attempt_utc IS NOT NULL").pluck().get(), 0, 'nor the refresh recorded');
  t.notOk(db.inTransaction);
  t.strictSame(errors, []);
});

t.test('ERRORS: a body failing its schema is described in one debug entry when the logger has debug(), and not described without one', async (t) => {
  const entries: Record<string, unknown>[] = [];
  const logger = { error: () => undefined, debug: (entry: Record<string, unknown>) => entries.push(entry) };
  const h = harness({ defaultToken: TOKENS.ada, serviceOptions: { logger } });
  const etag = (await h.call('GET', '/api/v1/tasks/1')).headers['etag'] as string;
  expectProblem(t, await h.call('PATCH', '/api/v1/tasks/1', { headers: { 'if-match': etag }, body: { sequence: 'x' } }), 'validation_failed');
  const described = entries.filter((entry) => entry['code'] === 'validation_failed');
  t.equal(described.length, 1, 'one entry');
  t.match(described[0]?.['detail'], /sequence/, 'naming the member');
  // Without debug() there is nobody to tell: listing a large body's failures would only cost time.
  t.equal(resolveOptions({ db: ':memory:', logger: { error: () => undefined } }).logger.debug, undefined);
});

t.test('ERRORS: close() with a write batch open on a Database passed in rolls the batch back: its writes and answers made in it are 503, and the next service writes at once', async (t) => {
  const db = new Database(join(t.testdir(), 'batch-open.sqlite'));
  t.teardown(() => db.close());
  const clock = manualClock(TEST_NOW);
  loadFixture(db, baseFixture(), { now: clock.now() });
  const first = createService({ db, clock });
  const ada = { authorization: `Bearer ${TOKENS.ada}` };
  const read = await first.handle({ method: 'GET', url: '/api/v1/tasks/2', headers: ada });
  const etag = read.headers['etag'] as string;
  const patch = first.handle({
    method: 'PATCH', url: '/api/v1/tasks/2', headers: { ...ada, 'if-match': etag, 'content-type': 'application/json' }, body: '{"sequence":7}',
  });
  t.ok(db.inTransaction, 'the PATCH opened a batch');
  // A 412 made inside the batch names the batch's version, which close() is about to roll back.
  const stale = first.handle({
    method: 'PATCH', url: '/api/v1/tasks/2', headers: { ...ada, 'if-match': '"task-2-plan-1"', 'content-type': 'application/json' }, body: '{"sequence":8}',
  });
  first.close();
  t.notOk(db.inTransaction, 'close() rolled it back');
  const next = createService({ db, clock });
  t.teardown(() => next.close());
  const note = await next.handle({
    method: 'POST', url: '/api/v1/tasks/2/notes', headers: { ...ada, 'if-match': etag, 'content-type': 'application/json' }, body: '{"text":"from the next service"}',
  });
  t.equal(note.status, 204, 'the next service writes');
  expectProblem(t, await patch, 'temporarily_unavailable', 'the closed service\'s write');
  expectProblem(t, await stale, 'temporarily_unavailable', 'and its 412, whose ETag named the rolled-back version');
  t.equal(db.prepare('SELECT sequence FROM tasks WHERE id = 2').pluck().get(), 20, 'and nothing of it is on disk');
});
