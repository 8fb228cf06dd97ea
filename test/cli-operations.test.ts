import t from 'tap';
import Database from 'better-sqlite3';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { connect, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { withHealthCheck } from '../bin/health.js';
import type { ServiceRequest } from '../lib/http/types.js';
import { loadFixture } from '../lib/fixtures/load.js';
import { openDatabase } from '../lib/store/open.js';
import type { TapTest } from './helpers/api.js';
import { ALL_SCOPES } from './helpers/fixture.js';
import { exited, jsonLines, notJson, run, serve, start, watch } from './helpers/cli.js';
import { raw } from './helpers/sockets.js';
import { OPENSSL_MISSING, selfSignedPair } from './helpers/tls.js';

/**
 * Operations of the standalone server: request logs, /healthz, backups while serving, the WTA_*
 * environment, graceful shutdown with a request in flight, and HTTPS.
 */

const SCOUT = 'wta_test_scout_0123456789abcdef';

/** An organisation of our own: a sponsor, an agent with a client, a plain task and one linked to a tracker. */
const FIXTURE = {
  organisations: [{ id: 1, name: 'Northwind' }],
  staff: [
    { id: 1, organisationId: 1, name: 'Maria Anders', kind: 'human' },
    { id: 2, organisationId: 1, name: 'Scout', kind: 'agent' },
  ],
  clients: [{ id: 1, organisationId: 1, name: 'scout-bot', token: SCOUT, sponsorId: 1, resourceId: 2, scopes: ALL_SCOPES }],
  projects: [{ id: 1, organisationId: 1, name: 'Supplier review', priorityName: 'high' }],
  tasks: [
    { id: 1, projectId: 1, title: 'Summarise the supplier contracts', sequence: 1, estimatedMinutes: 60, assignees: [{ staffMemberId: 2 }] },
    { id: 2, projectId: 1, title: 'Answer the tracker item', sequence: 2, estimatedMinutes: 30, assignees: [{ staffMemberId: 2 }],
      sources: [{ providerKey: 'tracker', itemId: 'T-1' }] },
  ],
};
const AUTH = { authorization: `Bearer ${SCOUT}` };

// `testdir()` empties the directory each time it is called: create it once per test.
const dirs = new WeakMap<TapTest, string>();
function dirOf(tt: TapTest): string {
  let dir = dirs.get(tt);
  if (dir === undefined) {
    dir = tt.testdir();
    dirs.set(tt, dir);
  }
  return dir;
}

function fixtureFile(tt: TapTest): string {
  const path = join(dirOf(tt), 'northwind.json');
  writeFileSync(path, JSON.stringify(FIXTURE));
  return path;
}

/** A file database holding FIXTURE, loaded in-process. */
function fixtureDatabase(tt: TapTest): string {
  const path = join(dirOf(tt), 'ops.sqlite');
  const { db } = openDatabase(path);
  loadFixture(db, FIXTURE);
  db.close();
  return path;
}

/** The log line of the request with this trace id. */
async function logEntry(output: { waitFor(stream: 'stderr', pattern: RegExp): Promise<RegExpExecArray> }, traceId: string) {
  const line = await output.waitFor('stderr', new RegExp(`^.*"traceId":"${traceId}".*$`, 'm'));
  return JSON.parse(line[0]) as Record<string, unknown>;
}

t.jobs = 4;

t.test('request logs carry method, route template, status, duration, client id and traceId, never a token, path or body', async (tt) => {
  const { output, base } = await serve(tt, ['--db', fixtureDatabase(tt)]);

  const read = await fetch(`${base}/api/v1/tasks/1?secret=query`, { headers: AUTH });
  tt.equal(read.status, 400);
  const task = await fetch(`${base}/api/v1/tasks/1`, { headers: AUTH });
  tt.equal(task.status, 200);
  const marker = 'a-note-text-that-must-not-be-logged';
  const note = await fetch(`${base}/api/v1/tasks/1/notes`, {
    method: 'POST',
    headers: { ...AUTH, 'content-type': 'application/json', 'if-match': task.headers.get('etag') ?? '' },
    body: JSON.stringify({ text: marker }),
  });
  tt.equal(note.status, 204);
  const anonymous = await fetch(`${base}/api/v1/identity`, { headers: { authorization: 'Bearer wta_no_such_token_123456' } });
  tt.equal(anonymous.status, 401);
  const unknown = await fetch(`${base}/no/such/path`);
  tt.equal(unknown.status, 404);

  const entries = await Promise.all([read, task, note, anonymous, unknown].map((response) => logEntry(output, response.headers.get('x-trace-id') ?? '')));
  tt.match(entries[0], { level: 'info', method: 'GET', route: '/api/v1/tasks/{id}', status: 400, clientId: 1 });
  tt.match(entries[1], { method: 'GET', route: '/api/v1/tasks/{id}', status: 200, clientId: 1 });
  tt.match(entries[2], { method: 'POST', route: '/api/v1/tasks/{id}/notes', status: 204, clientId: 1 });
  tt.match(entries[3], { method: 'GET', route: '/api/v1/identity', status: 401, clientId: null }, 'no client before authentication');
  tt.match(entries[4], { method: 'GET', route: null, status: 404, clientId: null }, 'no route for an unknown path');
  for (const entry of entries) {
    tt.same(Object.keys(entry).sort(), ['clientId', 'durationMs', 'level', 'method', 'route', 'status', 'time', 'traceId']);
    tt.type(entry['durationMs'], 'number');
  }
  tt.notMatch(output.stderr, SCOUT, 'no token');
  tt.notMatch(output.stderr, 'wta_no_such_token', 'not even a wrong one');
  tt.notMatch(output.stderr, marker, 'no body');
  tt.notMatch(output.stderr, /secret=query|\/no\/such\/path|\/tasks\/1\b/, 'no path or query as sent');
});

t.test('a request that is no HTTP gets a logged 400 with its trace id, and the server keeps serving', async (tt) => {
  const { output, base } = await serve(tt, ['--db', fixtureDatabase(tt)]);
  const answer = await raw(Number(new URL(base).port), ['HELLO\r\n\r\n']);
  const traceId = /\r\nx-trace-id: ([0-9a-f]{32})\r\n/i.exec(answer)?.[1] ?? '';
  tt.match(answer, /^HTTP\/1\.1 400 /, '400');
  const entry = await logEntry(output, traceId);
  tt.same(entry, { time: entry['time'], level: 'info', method: null, route: null, status: 400, durationMs: null, clientId: null, traceId });
  tt.equal((await fetch(`${base}/api/v1/identity`, { headers: AUTH })).status, 200, 'the next request is served');
});

t.test('requests the adapter answers outside node\'s request event are logged too: CONNECT, an unknown Expect, a method node cannot parse', async (tt) => {
  const { output, base } = await serve(tt, ['--db', fixtureDatabase(tt)]);
  const port = Number(new URL(base).port);
  const traceOf = (answer: string) => /\r\nx-trace-id: ([0-9a-f]{32})\r\n/i.exec(answer)?.[1] ?? '';
  const connect = await raw(port, ['CONNECT /api/v1/tasks/1 HTTP/1.1\r\nHost: x\r\n\r\n']);
  tt.match(connect, /^HTTP\/1\.1 405 /);
  const connectEntry = await logEntry(output, traceOf(connect));
  tt.match(connectEntry, { method: 'CONNECT', route: '/api/v1/tasks/{id}', status: 405, clientId: null });
  tt.type(connectEntry['durationMs'], 'number');
  const expect = await raw(port, [`GET /api/v1/identity HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${SCOUT}\r\nExpect: foo\r\n\r\n`]);
  tt.match(expect, /^HTTP\/1\.1 200 /);
  tt.match(await logEntry(output, traceOf(expect)), { method: 'GET', route: '/api/v1/identity', status: 200, clientId: 1 });
  const lower = await raw(port, ['get /api/v1/tasks/available HTTP/1.1\r\nHost: x\r\n\r\n']);
  tt.match(lower, /^HTTP\/1\.1 405 /);
  const lowerEntry = await logEntry(output, traceOf(lower));
  tt.same(lowerEntry, { time: lowerEntry['time'], level: 'info', method: 'get', route: '/api/v1/tasks/available', status: 405, durationMs: null, clientId: null, traceId: traceOf(lower) });
});

t.test('GET /healthz answers 200 {"status":"ok"} outside /api/v1, unauthenticated and not rate-limited', async (tt) => {
  const { output, base } = await serve(tt, ['--db', fixtureDatabase(tt), '--rate-limit', '1']);
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const health = await fetch(`${base}/healthz`);
    tt.equal(health.status, 200, `attempt ${attempt + 1}`);
    tt.same(await health.json(), { status: 'ok' });
    tt.equal(health.headers.get('ratelimit'), null, 'not counted against any client');
  }
  const post = await fetch(`${base}/healthz`, { method: 'POST' });
  tt.equal(post.status, 405);
  tt.equal(post.headers.get('allow'), 'GET, HEAD');
  tt.equal((await fetch(`${base}/api/v1/healthz`)).status, 404, 'not part of the API');
  // The API's own limit still applies: one request per minute.
  tt.equal((await fetch(`${base}/api/v1/identity`, { headers: AUTH })).status, 200);
  tt.equal((await fetch(`${base}/api/v1/identity`, { headers: AUTH })).status, 429);
  await output.waitFor('stderr', /"route":"\/healthz","status":405/);
});

t.test('serve without --db or WTA_DB serves ./data/worker-task-api.sqlite of its working directory; SIGINT stops it (exit 0)', async (tt) => {
  const dir = tt.testdir();
  const child = start(['serve', '--port', '0'], {}, dir);
  tt.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const output = watch(child);
  const port = Number((await output.waitFor('stdout', /^listening on http:\/\/127\.0\.0\.1:(\d+)$/m))[1]);
  tt.equal((await fetch(`http://127.0.0.1:${port}/healthz`)).status, 200);
  tt.ok(existsSync(join(dir, 'data', 'worker-task-api.sqlite')), 'the default database, made where the command runs');
  child.kill('SIGINT');
  tt.strictSame(await exited(child), { code: 0, signal: null }, 'SIGINT (Ctrl-C) stops it cleanly');
  tt.strictSame(notJson(output.stderr), [], 'every line on stderr is JSON');
});

t.test('serve warns about plain HTTP when the address it is bound to is not loopback, judged after the host name is resolved', async (tt) => {
  const database = fixtureDatabase(tt);
  // 2130706433 is 127.0.0.1 written as one number: only resolving it shows it is loopback.
  for (const [host, warns] of [['0.0.0.0', true], ['2130706433', false], ['localhost', false]] as const) {
    const child = start(['serve', '--db', database, '--port', '0', '--host', host]);
    tt.teardown(() => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    });
    const output = watch(child);
    const port = Number((await output.waitFor('stdout', /^listening on http:\/\/\S+:(\d+)$/m))[1]);
    // The warning is written before any request is served: once a request's log line is out, it would be there too.
    tt.equal((await fetch(`http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}/healthz`)).status, 200, host);
    await output.waitFor('stderr', /"route":"\/healthz"/);
    const warned = jsonLines(output.stderr).some((line) => line['level'] === 'warn' && String(line['message']).startsWith('serving plain HTTP on '));
    tt.equal(warned, warns, `${host}: ${warns ? 'warned' : 'no warning'}`);
    child.kill('SIGTERM');
    tt.equal((await exited(child)).code, 0);
    tt.strictSame(notJson(output.stderr), [], `${host}: every line on stderr is JSON`);
  }
});

t.test('the health check answers 503 when the database does not answer, or while stopping; every answer has X-Trace-Id', async (tt) => {
  const { db } = openDatabase(':memory:');
  let stopping = false;
  const passed: ServiceRequest[] = [];
  const handler = withHealthCheck({ handle: (request) => (passed.push(request), { status: 204, headers: {} }) }, { db, stopping: () => stopping });
  const get = (url: string, method = 'GET') => handler.handle({ method, url, headers: {} });

  const traced = { 'x-trace-id': /^[0-9a-f]{32}$/ };
  tt.match(await get('/healthz'), { status: 200, body: '{"status":"ok"}', headers: { 'content-type': 'application/json', ...traced }, meta: { route: '/healthz' } });
  tt.match(await get('/healthz?probe=1', 'HEAD'), { status: 200, headers: traced });
  tt.match(await get('/healthz', 'POST'), { status: 405, headers: traced });
  stopping = true;
  tt.match(await get('/healthz'), { status: 503, body: '{"status":"unavailable"}', headers: traced }, 'shutting down');
  stopping = false;
  db.close();
  tt.match(await get('/healthz'), { status: 503, body: '{"status":"unavailable"}' }, 'database closed');
  await get('/healthzz');
  await get('/api/v1/identity');
  tt.same(passed.map((request) => request.url), ['/healthzz', '/api/v1/identity'], 'everything else goes to the service');
});

t.test('the health check answers 503 once the database file is no longer at its path (its writes would be lost)', async (tt) => {
  const path = fixtureDatabase(tt);
  const { db } = openDatabase(path);
  tt.teardown(() => db.close());
  const handler = withHealthCheck({ handle: () => ({ status: 204, headers: {} }) }, { db });
  const get = () => handler.handle({ method: 'GET', url: '/healthz', headers: {} });
  tt.match(await get(), { status: 200 });
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
  tt.match(await get(), { status: 503, body: '{"status":"unavailable"}' }, 'although the open file still answers the query');
});

t.test('backup stopped by SIGTERM or SIGINT once it has begun leaves a complete checked copy (exit 0) or nothing at all', async (tt) => {
  const dbPath = fixtureDatabase(tt);
  // Some 32 MB, so the signal usually lands during the copy, which is one synchronous step.
  const filler = new Database(dbPath);
  filler.exec('CREATE TABLE filler (b BLOB); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 32) INSERT INTO filler SELECT randomblob(1000000) FROM n');
  filler.close();
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    const directory = join(dirOf(tt), `stopped-${signal}`);
    const copy = join(directory, 'copy.sqlite');
    const child = start(['backup', copy, '--db', dbPath]);
    const output = watch(child);
    // Stopped as soon as the copy has begun (or the command has already ended), looked for every
    // few milliseconds: a tighter loop would take the CPU the copy needs.
    while (!existsSync(copy) && child.exitCode === null && child.signalCode === null) await new Promise((resolve) => setTimeout(resolve, 2));
    child.kill(signal);
    const { code } = await exited(child);
    if (code === 0) {
      tt.match(output.stdout, /integrity ok/, `${signal}: finished before the signal was handled, and said so`);
      const opened = new Database(copy, { readonly: true, fileMustExist: true });
      tt.equal(opened.pragma('integrity_check', { simple: true }), 'ok', `${signal}: the copy is whole`);
      opened.close();
    } else {
      tt.notOk(existsSync(directory), `${signal}: exit ${String(code)}, and no copy or directory is left (stderr: ${output.stderr.trim()})`);
    }
  }
});

t.test('backup FILE makes a consistent copy while the server runs on the same file', async (tt) => {
  const dbPath = fixtureDatabase(tt);
  const { base } = await serve(tt, ['--db', dbPath]);
  // A change the running server holds in its WAL: the copy must include it.
  const task = await fetch(`${base}/api/v1/tasks/1`, { headers: AUTH });
  const patched = await fetch(`${base}/api/v1/tasks/1`, {
    method: 'PATCH',
    headers: { ...AUTH, 'content-type': 'application/json', 'if-match': task.headers.get('etag') ?? '' },
    body: JSON.stringify({ status: 'InProgress' }),
  });
  tt.equal(patched.status, 204);
  tt.ok(existsSync(`${dbPath}-wal`), 'the server has the database open in WAL mode');

  const copy = join(dirOf(tt), 'backups', 'copy.sqlite');
  const result = await run(['backup', copy, '--db', dbPath]);
  tt.equal(result.code, 0, result.stderr);
  tt.match(result.stdout, /^backed up .*ops\.sqlite to .*copy\.sqlite \(\d+ pages, integrity ok\)$/m);

  const opened = new Database(copy, { readonly: true, fileMustExist: true });
  tt.teardown(() => opened.close());
  tt.equal(opened.pragma('integrity_check', { simple: true }), 'ok', 'PRAGMA integrity_check');
  tt.equal(opened.pragma('journal_mode', { simple: true }), 'delete', 'the copy is one self-contained file');
  tt.equal(opened.prepare('SELECT status FROM tasks WHERE id = 1').pluck().get(), 'InProgress', 'it holds the write made through the server');
  tt.equal(opened.prepare('SELECT count(*) FROM tasks').pluck().get(), 2);
  tt.equal(opened.prepare('SELECT name FROM api_clients WHERE id = 1').pluck().get(), 'scout-bot');
  tt.notOk(existsSync(`${copy}-wal`), 'no WAL beside the copy');

  tt.equal((await fetch(`${base}/api/v1/identity`, { headers: AUTH })).status, 200, 'the server carries on');

  const again = await run(['backup', copy, '--db', dbPath]);
  tt.equal(again.code, 1, 'an existing file is never overwritten');
  tt.match(again.stderr, /^error: .*copy\.sqlite already exists; back up to a new file$/m);
  const missing = await run(['backup', join(dirOf(tt), 'other.sqlite'), '--db', join(dirOf(tt), 'none.sqlite')]);
  tt.equal(missing.code, 1);
  tt.match(missing.stderr, /^error: no database at /m);
  tt.notOk(existsSync(join(dirOf(tt), 'none.sqlite')), 'backing up does not create the source');
  // A --db naming some other file (a mistyped path in a cron job) must fail, not copy it as "ok".
  const foreign = join(dirOf(tt), 'foreign.sqlite');
  const other = new Database(foreign);
  other.exec('CREATE TABLE foo (x)');
  other.close();
  const notOurs = join(dirOf(tt), 'not-ours.sqlite');
  writeFileSync(notOurs, 'x');
  const text = join(dirOf(tt), 'text.sqlite');
  writeFileSync(text, 'Not a database, but long enough to have what would be a SQLite header.\n'.repeat(30));
  for (const source of [foreign, notOurs, text]) {
    const refused = await run(['backup', join(dirOf(tt), 'refused', 'copy.sqlite'), '--db', source]);
    tt.equal(refused.code, 1, `${source}: refused`);
    tt.match(refused.stderr, /^error: .*\.sqlite is not a worker-task-api database$/m);
    tt.notOk(existsSync(join(dirOf(tt), 'refused')), 'no copy, no directory');
  }
  const usage = await run(['backup']);
  tt.equal(usage.code, 2);
  tt.match(usage.stderr, /backup needs a target FILE/);
});

/** A tracker that holds each request until `release()` is called. */
async function slowTracker(tt: TapTest) {
  let release: () => void = () => undefined;
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  const seen: string[] = [];
  let arrived: (url: string) => void = () => undefined;
  const firstRequest = new Promise<string>((resolve) => {
    arrived = resolve;
  });
  const server = createServer((req: IncomingMessage, res) => {
    seen.push(req.url ?? '');
    arrived(req.url ?? '');
    void released.then(() => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ title: 'Supplier asks for a summary', businessStatus: 'open' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  tt.teardown(() => new Promise<void>((resolve) => {
    release();
    server.close(() => resolve());
    server.closeAllConnections();
  }));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, firstRequest, release };
}

t.test('a request whose client went away before the answer is logged once the service answers, with "delivered":false, a pipelined one too', async (tt) => {
  const tracker = await slowTracker(tt);
  const { output, base } = await serve(tt, ['--db', fixtureDatabase(tt), '--source', `tracker=${tracker.base}/items/`]);
  const etag = (await fetch(`${base}/api/v1/tasks/1`, { headers: AUTH })).headers.get('etag') ?? '';
  const socket = connect(Number(new URL(base).port), '127.0.0.1');
  socket.on('error', () => undefined);
  // /tasks/available refreshes task 2's tracker item first: the request stays in flight, and the
  // note pipelined behind it is carried out, its answer queued behind the first.
  const note = JSON.stringify({ text: 'pipelined' });
  socket.write(
    `GET /api/v1/tasks/available HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${SCOUT}\r\n\r\n` +
      `POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${SCOUT}\r\nIf-Match: ${etag}\r\n` +
      `Content-Type: application/json\r\nContent-Length: ${note.length}\r\n\r\n${note}`,
  );
  tt.equal(await tracker.firstRequest, '/items/T-1');
  socket.destroy();
  // Sent after the close, so read after it: once this is answered the server has seen the client go.
  const health = await fetch(`${base}/healthz`);
  tt.equal(health.status, 200);
  await logEntry(output, health.headers.get('x-trace-id') ?? '');
  tt.notMatch(output.stderr, /"route":"\/api\/v1\/tasks\/available"/, 'no line while the service has not answered');
  tracker.release();
  for (const [route, method, status] of [['/api/v1/tasks/available', 'GET', 200], ['/api/v1/tasks/{id}/notes', 'POST', 204]] as const) {
    const line = await output.waitFor('stderr', new RegExp(`^.*"route":"${route.replace(/[/{}]/g, '\\$&')}".*$`, 'm'));
    const entry = JSON.parse(line[0]) as Record<string, unknown>;
    tt.match(entry, { level: 'info', method, status, clientId: 1, delivered: false }, `${method} ${route}`);
    tt.type(entry['durationMs'], 'number');
    tt.match(entry['traceId'], /^[0-9a-f]{32}$/, 'the trace id of the answer the client did not get');
    tt.equal(output.stderr.split(`"route":"${route}"`).length - 1, 1, 'one line');
  }
});

t.test('WTA_* configure serve; SIGTERM lets a request in flight finish, then closes the database and exits 0', async (tt) => {
  const tracker = await slowTracker(tt);
  const dbPath = join(dirOf(tt), 'env.sqlite');
  const { child, output, base } = await serve(tt, [], {
    WTA_DB: dbPath,
    WTA_PORT: '0',
    WTA_HOST: '127.0.0.1',
    WTA_FIXTURE: fixtureFile(tt),
    WTA_SOURCES: ` tracker=${tracker.base}/items/ , other=http://127.0.0.1:9/x/`,
    WTA_RATE_LIMIT: '5',
  });
  tt.ok(existsSync(dbPath), 'WTA_DB');
  tt.notMatch(output.stderr, /warning/, 'no plain-HTTP warning on loopback');

  // /tasks/available refreshes task 2's tracker item first: the request stays in flight.
  const inFlight = fetch(`${base}/api/v1/tasks/available`, { headers: AUTH });
  tt.equal(await tracker.firstRequest, '/items/T-1', 'WTA_SOURCES configured the tracker');
  child.kill('SIGTERM');
  await output.waitFor('stderr', /"message":"stopping","signal":"SIGTERM"/);
  await tt.rejects(fetch(`${base}/healthz`), 'no new connections once stopping');
  tt.equal(child.exitCode, null, 'still running while the request is in flight');

  tracker.release();
  const answer = await inFlight;
  tt.equal(answer.status, 200, 'the request in flight got its answer');
  tt.equal(answer.headers.get('connection'), 'close', 'and a Connection: close, so its keep-alive connection does not hold up the exit');
  tt.same(((await answer.json()) as { id: number }[]).map((task) => task.id), [1, 2], 'WTA_FIXTURE was loaded; the refreshed task is offered');
  tt.equal(answer.headers.get('ratelimit-policy'), '"default";q=5;w=60', 'WTA_RATE_LIMIT');
  tt.same(await exited(child), { code: 0, signal: null });
  tt.notOk(existsSync(`${dbPath}-wal`), 'the database was closed (its WAL checkpointed away)');
  tt.match(output.stderr, /"route":"\/api\/v1\/tasks\/available","status":200/, 'the request was logged');
});

t.test('serve --demo on a database holding other data warns on stderr, as JSON, and prints no demo token', async (tt) => {
  const { child, output } = await serve(tt, ['--db', fixtureDatabase(tt), '--demo']);
  child.kill('SIGTERM');
  tt.same(await exited(child), { code: 0, signal: null });
  tt.match(jsonLines(output.stderr), [{ level: 'warn', message: 'demo: the database already holds other data; the demo token does not work in it' }]);
  tt.strictSame(notJson(output.stderr), []);
  tt.notMatch(output.stdout, /Bearer/, 'no curl lines with a token that does not work');
});

t.test('serve stops on SIGHUP as on SIGTERM, exiting 129 so that the systemd unit starts it again; a new database is announced', async (tt) => {
  const dbPath = join(dirOf(tt), 'hangup.sqlite');
  const first = await serve(tt, ['--db', dbPath, '--demo']);
  tt.match(jsonLines(first.output.stderr).find((line) => line['message'] === 'created a new database'), { level: 'info', path: dbPath }, 'said on stderr');
  tt.match(first.output.stdout, /^listening on /, 'so the listening line is the first on stdout');
  tt.equal((await fetch(`${first.base}/healthz`)).status, 200);
  first.child.kill('SIGHUP');
  await first.output.waitFor('stderr', /"message":"stopping","signal":"SIGHUP"/);
  tt.same(await exited(first.child), { code: 129, signal: null }, 'a clean stop, with a status that asks for a restart');
  tt.strictSame(notJson(first.output.stderr), [], 'every line on stderr is JSON: the announcement, the demo, the requests, the stop');
  tt.match(jsonLines(first.output.stderr).slice(0, 2), [{ message: 'created a new database' }, { level: 'info', message: /^demo: loaded 1 organisations, / }],
    'the new database first, then what the demo loaded into it');
  tt.notOk(existsSync(`${dbPath}-wal`), 'the database was closed (its WAL folded into the file)');

  const again = await serve(tt, ['--db', dbPath, '--demo']);
  tt.notMatch(again.output.stderr, /created a new database/, 'an existing database is not announced');
  again.child.kill('SIGTERM');
  tt.same(await exited(again.child), { code: 0, signal: null }, 'SIGTERM still exits 0');
});

t.test('serve on an empty file (0 bytes, as a truncated database is) announces the new database it makes there', async (tt) => {
  const dbPath = join(dirOf(tt), 'truncated.sqlite');
  writeFileSync(dbPath, '');
  const { child, output } = await serve(tt, ['--db', dbPath]);
  child.kill('SIGTERM');
  tt.same(await exited(child), { code: 0, signal: null });
  tt.match(jsonLines(output.stderr).find((line) => line['message'] === 'created a new database'), { level: 'info', path: dbPath, inEmptyFile: true });
});

t.test('WTA_DEMO loads the demo; flags win over the environment; bad environment values are usage errors', async (tt) => {
  const { base, output } = await serve(tt, ['--rate-limit', '7'], { WTA_DB: join(dirOf(tt), 'demo.sqlite'), WTA_DEMO: '1', WTA_RATE_LIMIT: '5' });
  await output.waitFor('stdout', /\/api\/v1\/tasks\/available$/m);
  const identity = await fetch(`${base}/api/v1/identity`, { headers: { authorization: 'Bearer wta_demo_ada_3f9c2b7e8d1a4c6b' } });
  tt.equal(identity.status, 200);
  tt.equal(identity.headers.get('ratelimit-policy'), '"default";q=7;w=60', '--rate-limit wins over WTA_RATE_LIMIT');

  const badDemo = await run(['serve'], { WTA_DEMO: 'maybe' });
  tt.equal(badDemo.code, 2);
  tt.match(badDemo.stderr, /WTA_DEMO must be 1, true or yes, or 0, false or no, got "maybe"/);
  const badSources = await run(['serve'], { WTA_SOURCES: 'tracker' });
  tt.equal(badSources.code, 2);
  tt.match(badSources.stderr, /WTA_SOURCES must be KEY=BASEURL \(KEY of letters, digits, \. _ -\); it is not/);
  // A password with a comma in it, as an operator might type it: no part of it reaches the journal.
  for (const sources of ['tracker=https://svc:s3c,r3t@tracker.example/items/', 'tracker=https://svc:s3cr3t@tracker example/items/', 'https://svc:s3cr3t@tracker.example/items/']) {
    const leaky = await run(['serve'], { WTA_SOURCES: sources });
    tt.equal(leaky.code, 2, sources);
    tt.notMatch(`${leaky.stdout}${leaky.stderr}`, /s3c|r3t/, 'the value is not repeated');
    tt.match(leaky.stderr, /WTA_SOURCES (tracker: the base URL is not an absolute URL|must be KEY=BASEURL .*; it is not)/);
  }
  const badPort = await run(['serve'], { WTA_PORT: 'eighty' });
  tt.equal(badPort.code, 2);
  tt.match(badPort.stderr, /WTA_PORT must be an integer/, 'names the variable, not the flag it stands in for');
  const badLimit = await run(['serve'], { WTA_RATE_LIMIT: '0' });
  tt.equal(badLimit.code, 2);
  tt.match(badLimit.stderr, /WTA_RATE_LIMIT must be an integer/);
  const badFlag = await run(['serve', '--port', 'eighty'], { WTA_PORT: '0' });
  tt.match(badFlag.stderr, /--port must be an integer/, 'a bad flag is named as the flag');
  const missingFixture = await run(['serve', '--db', join(dirOf(tt), 'x.sqlite')], { WTA_FIXTURE: join(dirOf(tt), 'nope.json') });
  tt.equal(missingFixture.code, 1);
});

t.test('serve --tls-cert/--tls-key (or WTA_TLS_CERT/WTA_TLS_KEY) serves HTTPS, /healthz included', { skip: OPENSSL_MISSING }, async (tt) => {
  const { cert, key } = selfSignedPair(tt, dirOf(tt), 'server');
  const { base, output } = await serve(tt, ['--db', fixtureDatabase(tt), '--host', '127.0.0.1', '--keep-alive-timeout', '42'], { WTA_TLS_CERT: cert, WTA_TLS_KEY: key });
  tt.match(base, /^https:\/\/127\.0\.0\.1:\d+$/, 'prints an https URL');
  const get = (path: string, headers: Record<string, string> = {}) =>
    new Promise<{ status: number; body: string; keepAlive: string | undefined }>((resolve, reject) => {
      const request = httpsRequest(`${base}${path}`, { ca: readFileSync(cert), headers }, (response) => {
        let body = '';
        const keepAlive = response.headers['keep-alive'];
        response.setEncoding('utf8').on('data', (chunk: string) => (body += chunk))
          .on('end', () => resolve({ status: response.statusCode ?? 0, body, keepAlive: typeof keepAlive === 'string' ? keepAlive : undefined }));
      });
      request.on('error', reject);
      request.end();
    });
  tt.same(await get('/healthz', { connection: 'keep-alive' }), { status: 200, body: '{"status":"ok"}', keepAlive: 'timeout=42' }, 'the keep-alive timeout applies to HTTPS too');
  const identity = await get('/api/v1/identity', AUTH);
  tt.equal(identity.status, 200);
  tt.match(JSON.parse(identity.body), { clientName: 'scout-bot' });
  tt.notMatch(output.stderr, /warning/, 'no plain-HTTP warning');
});

t.test('serve: a certificate and key that do not go together are named in words before anything is opened', { skip: OPENSSL_MISSING }, async (tt) => {
  const dir = dirOf(tt);
  const one = selfSignedPair(tt, dir, 'one');
  const two = selfSignedPair(tt, dir, 'two');
  const junk = join(dir, 'junk.pem');
  writeFileSync(junk, 'not a pem file\n');
  const dbPath = join(dir, 'never.sqlite');
  const cases: [string[], Record<string, string>, RegExp][] = [
    [['--tls-cert', one.key, '--tls-key', one.cert], {}, /^error: --tls-cert \S+one-key\.pem is not a PEM certificate$/m],
    [['--tls-cert', one.cert, '--tls-key', junk], {}, /^error: --tls-key \S+junk\.pem is not a PEM private key/m],
    [['--tls-cert', one.cert, '--tls-key', two.key], {}, /^error: --tls-key \S+two-key\.pem is not the private key of the certificate in --tls-cert \S+one-cert\.pem$/m],
    [[], { WTA_TLS_CERT: junk, WTA_TLS_KEY: one.key }, /^error: WTA_TLS_CERT \S+junk\.pem is not a PEM certificate$/m],
  ];
  for (const [args, env, message] of cases) {
    const result = await run(['serve', '--db', dbPath, '--port', '0', ...args], env);
    tt.equal(result.code, 1, `${args.join(' ') || JSON.stringify(env)}: exit 1`);
    tt.match(result.stderr, message);
    tt.notMatch(result.stderr, /routines::/, 'no OpenSSL error code');
  }
  tt.notOk(existsSync(dbPath), 'no database was created');
});

t.test('serve keeps serving when the reader of its output goes away (serve | head -1), and still stops cleanly', async (tt) => {
  const { child, base } = await serve(tt, ['--db', fixtureDatabase(tt)]);
  // What `head -1` does after the first line: the read ends of stdout and stderr close.
  child.stdout?.destroy();
  child.stderr?.destroy();
  for (let attempt = 0; attempt < 5; attempt += 1) {
    // Each answer writes a request log line to the closed pipe.
    tt.equal((await fetch(`${base}/api/v1/identity`, { headers: AUTH })).status, 200, `request ${attempt + 1} answered`);
  }
  tt.equal((await fetch(`${base}/healthz`)).status, 200);
  child.kill('SIGTERM');
  tt.same(await exited(child), { code: 0, signal: null }, 'exit 0 on SIGTERM');
});
