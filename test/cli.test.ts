import t from 'tap';
import Database from 'better-sqlite3';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { dirname, join } from 'node:path';
import { adminClients } from '../lib/admin/clients.js';
import { hashToken } from '../lib/auth/token.js';
import { loadFixtureFile } from '../lib/fixtures/load.js';
import { createService } from '../lib/service.js';
import { openDatabase } from '../lib/store/open.js';
import type { TapTest } from './helpers/api.js';
import { exited, jsonLines, ROOT, run, serve, start } from './helpers/cli.js';

const DEMO = join(ROOT, 'fixtures', 'demo.json');
const DEMO_AGENT = 'wta_demo_ada_3f9c2b7e8d1a4c6b';
const DEMO_DIRECTORY = 'wta_demo_directory_5e1d7a2c9b';

/** A file database holding the demo fixture, loaded in-process. */
function demoDatabase(tt: TapTest): string {
  const path = join(tt.testdir(), 'demo.sqlite');
  const { db } = openDatabase(path);
  loadFixtureFile(db, DEMO);
  db.close();
  return path;
}

async function identityStatus(dbPath: string, token: string): Promise<number> {
  const service = createService({ db: dbPath });
  try {
    const response = await service.handle({ method: 'GET', url: '/api/v1/identity', headers: { authorization: `Bearer ${token}` } });
    return response.status;
  } finally {
    service.close();
  }
}

// Each test spawns its own CLI (start-up dominates), so they run side by side.
t.jobs = 4;

t.test('serve prints "listening on http://127.0.0.1:PORT" and answers /api/v1/identity with the demo token', async (tt) => {
  const db = join(tt.testdir(), 'served.sqlite');
  const { output, base } = await serve(tt, ['--demo', '--db', db]);
  await output.waitFor('stdout', /\/api\/v1\/tasks\/available$/m);
  tt.match(output.stdout, `curl -H 'Authorization: Bearer ${DEMO_AGENT}' ${base}/api/v1/identity`, 'prints a ready-to-paste call');

  const response = await fetch(`${base}/api/v1/identity?probe=1`, { headers: { authorization: `Bearer ${DEMO_AGENT}` } });
  const traceId = response.headers.get('x-trace-id') ?? '';
  const problem = (await response.json()) as Record<string, unknown>;
  tt.equal(response.status, 400, 'an unknown query parameter still reaches the service');
  tt.equal(problem['code'], 'validation_failed');
  const ok = await fetch(`${base}/api/v1/identity`, { headers: { authorization: `Bearer ${DEMO_AGENT}` } });
  tt.equal(ok.status, 200);
  tt.match(await ok.json(), { clientId: 100, clientName: 'ada-bot', resource: { id: 10 } });

  const logged = await output.waitFor('stderr', new RegExp(`^.*"traceId":"${traceId}".*$`, 'm'));
  const entry = JSON.parse(logged[0]) as Record<string, unknown>;
  tt.match(entry, { level: 'info', method: 'GET', route: '/api/v1/identity', status: 400, clientId: 100, traceId });
  tt.type(entry['durationMs'], 'number');
  tt.type(entry['time'], 'string');
  tt.notMatch(output.stderr, DEMO_AGENT, 'the request log never contains a token');
});

t.test('serve --demo does not reload the demo into a non-empty database', async (tt) => {
  const path = demoDatabase(tt);
  // A change the user made: revoking ada-bot. Reloading the demo would make it active again.
  const { db } = openDatabase(path);
  adminClients(db).revoke(100);
  db.close();

  const { base } = await serve(tt, ['--demo', '--db', path]);
  const revoked = await fetch(`${base}/api/v1/identity`, { headers: { authorization: `Bearer ${DEMO_AGENT}` } });
  tt.equal(revoked.status, 401, 'the revoked demo client stays revoked');
  const other = await fetch(`${base}/api/v1/identity`, { headers: { authorization: `Bearer ${DEMO_DIRECTORY}` } });
  tt.equal(other.status, 200, 'the rest of the data is still there');
});

t.test('serve --demo --fixture on an empty database loads the demo, then the fixture over it', async (tt) => {
  const dir = tt.testdir();
  const fixture = join(dir, 'mine.json');
  writeFileSync(fixture, JSON.stringify({
    organisations: [{ id: 50, name: 'Mine' }],
    staff: [{ id: 500, organisationId: 50, name: 'Me', kind: 'human' }, { id: 501, organisationId: 50, name: 'Bot', kind: 'agent' }],
    clients: [{ id: 5000, organisationId: 50, name: 'my-bot', token: 'wta_mine_bot_0123456789', sponsorId: 500, resourceId: 501, scopes: ['tasks:read'] }],
  }));
  const { base, output } = await serve(tt, ['--demo', '--fixture', fixture, '--db', join(dir, 'both.sqlite')]);
  await output.waitFor('stdout', /\/api\/v1\/tasks\/available$/m);
  await output.waitFor('stderr', /^\{.*"message":"demo: loaded 1 organisations, /m);
  const identity = (token: string) => fetch(`${base}/api/v1/identity`, { headers: { authorization: `Bearer ${token}` } }).then((response) => response.status);
  tt.equal(await identity(DEMO_AGENT), 200, 'the demo was loaded, and its token printed');
  tt.equal(await identity('wta_mine_bot_0123456789'), 200, 'and the fixture too');
});

t.test('load rejects a bad fixture naming the path and writes nothing', async (tt) => {
  const dir = tt.testdir();
  const fixture = JSON.parse(readFileSync(DEMO, 'utf8')) as { tasks: { assignees: { staffMemberId: number }[] }[] };
  const assignee = fixture.tasks[2]?.assignees[0];
  if (assignee !== undefined) assignee.staffMemberId = 999;
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, JSON.stringify(fixture));

  // Into a database that does not exist yet: neither the file nor its new directories are left.
  const fresh = join(dir, 'new', 'deeper', 'load.sqlite');
  const result = await run(['load', bad, '--db', fresh]);
  tt.equal(result.code, 1);
  tt.match(result.stderr, /^fixture error: tasks\[2\]\.assignees\[0\]\.staffMemberId: /m, 'names the offending path');
  tt.equal(result.stdout, '');
  tt.notOk(existsSync(join(dir, 'new')), 'no file or directory left behind');

  // Into an existing database: its rows stay as they were.
  const dbPath = join(dir, 'load.sqlite');
  const good = await run(['load', DEMO, '--db', dbPath]);
  tt.equal(good.code, 0);
  tt.equal(good.stdout, 'loaded 1 organisations, 3 staff, 3 clients, 2 projects, 7 tasks, 0 claims\n');
  const counts = () => {
    const db = new Database(dbPath, { readonly: true });
    try {
      return ['organisations', 'staff', 'api_clients', 'projects', 'tasks', 'task_assignments'].map(
        (table) => (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n);
    } finally {
      db.close();
    }
  };
  const before = counts();
  fixture.tasks.push({ assignees: [] } as never);
  writeFileSync(bad, JSON.stringify(fixture));
  const again = await run(['load', bad, '--db', dbPath]);
  tt.equal(again.code, 1);
  tt.match(again.stderr, /^fixture error: tasks\[7\]\.id: required member missing$/m, 'a missing member is named itself');
  tt.same(counts(), before, 'nothing written');
  tt.ok(existsSync(dbPath), 'the existing database is kept');
});

t.test('serve --demo --fixture with a bad fixture leaves no demo behind: both load in one transaction', async (tt) => {
  const dir = tt.testdir();
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, JSON.stringify({ organisations: [{ id: 1, name: 'Clash' }], projects: [{ id: 1, organisationId: 7, name: 'P' }] }));
  // An existing, empty database: the demo would go in, then the fixture fail.
  const dbPath = join(dir, 'empty.sqlite');
  openDatabase(dbPath).db.close();
  const result = await run(['serve', '--demo', '--fixture', bad, '--db', dbPath, '--port', '0']);
  tt.equal(result.code, 1);
  tt.match(result.stderr, /^fixture error: projects\[0\]\.organisationId: /m);
  tt.notMatch(result.stderr, /demo: loaded/, 'nor does it say the demo was loaded');
  const db = new Database(dbPath, { readonly: true });
  tt.teardown(() => db.close());
  tt.equal((db.prepare('SELECT count(*) AS n FROM organisations').get() as { n: number }).n, 0, 'the demo was taken back');

  const fresh = join(dir, 'fresh.sqlite');
  const onNew = await run(['serve', '--demo', '--fixture', bad, '--db', fresh, '--port', '0']);
  tt.equal(onNew.code, 1);
  tt.notOk(existsSync(fresh), 'a database the command created is removed again');
});

t.test('serve on a port in use exits 1 naming it, and removes the database it created (an existing one stays)', async (tt) => {
  const busy = createServer();
  await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
  tt.teardown(() => new Promise<void>((resolve) => busy.close(() => resolve())));
  const port = (busy.address() as AddressInfo).port;
  const dir = tt.testdir();
  const fresh = join(dir, 'fresh.sqlite');
  const result = await run(['serve', '--demo', '--db', fresh, '--port', String(port)]);
  tt.equal(result.code, 1);
  tt.match(result.stderr, new RegExp(`^error: cannot listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE`, 'm'));
  tt.notOk(existsSync(fresh), 'the database this start created is gone');
  tt.notMatch(result.stderr, /demo: loaded/, 'and with it the demo, which is not announced');

  // An existing, empty database keeps the demo it was given: said, though the start failed.
  const empty = join(dir, 'empty.sqlite');
  openDatabase(empty).db.close();
  const seeded = await run(['serve', '--demo', '--db', empty, '--port', String(port)]);
  tt.equal(seeded.code, 1);
  tt.match(jsonLines(seeded.stderr), [{ level: 'info', message: /^demo: loaded 1 organisations, / }], 'what the demo loaded is said');
  tt.equal(await identityStatus(empty, DEMO_AGENT), 200, 'and it is there');

  const kept = demoDatabase(tt);
  const again = await run(['serve', '--db', kept, '--port', String(port)]);
  tt.equal(again.code, 1);
  tt.ok(existsSync(kept), 'an existing database is kept');
  tt.equal(await identityStatus(kept, DEMO_AGENT), 200, 'with its data');
});

t.test('load --db under a directory that cannot be created fails at once (node\'s recursive mkdir would spin)', { skip: existsSync('/proc/self') ? false : 'no /proc' }, async (tt) => {
  const result = await run(['load', DEMO, '--db', '/proc/no-such-dir/x.sqlite']);
  tt.equal(result.code, 1);
  tt.match(result.stderr, /^error: cannot open database \/proc\/no-such-dir\/x\.sqlite: /m);
});

t.test('client commands start without TypeBox (its seven hundred modules cost a third of a second; only serve and load validate)', async (tt) => {
  // A load hook that refuses TypeBox: a client command that loaded it would fail. The command is a
  // bundle (scripts/build.mjs), so TypeBox is found by esbuild's comments naming its files.
  const refuseTypeBox = 'export async function load(url, context, next) {'
    + ' const loaded = await next(url, context);'
    + " if (url.includes('/node_modules/typebox/') || String(loaded.source).includes('// node_modules/typebox/')) throw new Error('TypeBox was loaded');"
    + ' return loaded; }';
  const register = `import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(refuseTypeBox)}`)});`;
  const env = { NODE_OPTIONS: `--import=data:text/javascript,${encodeURIComponent(register)}` };
  const path = demoDatabase(tt);
  const listed = await run(['client', 'list', '--db', path], env);
  tt.equal(listed.code, 0, listed.stderr);
  tt.match(listed.stdout, /^id=100 org=1 name="ada-bot" /m);
  const refused = await run(['client', 'revoke', '999', '--db', path], env);
  tt.equal(refused.code, 1);
  tt.match(refused.stderr, /^error: no client 999$/m, 'an error is reported without loading TypeBox either');
  const loading = await run(['load', DEMO, '--db', join(tt.testdir(), 'load.sqlite')], env);
  tt.match(loading.stderr, /TypeBox was loaded/, 'the hook does refuse TypeBox to a command that needs it');
});

t.test('client create without --scope makes an identity-only client; with --resource a scope is required (exit 2)', async (tt) => {
  const path = demoDatabase(tt);
  const created = await run(['client', 'create', '--org', '1', '--name', 'directory', '--sponsor', '11', '--db', path]);
  tt.equal(created.code, 0, created.stderr);
  tt.match(created.stdout, /^created client id=\d+ org=1 name="directory" sponsor=11 resource=none active=yes scopes=none$/m);
  const token = /^token: (wta_\S+)$/m.exec(created.stdout)?.[1] ?? '';
  tt.equal(await identityStatus(path, token), 200, 'it reads its identity, which needs no scope');

  const forgotten = await run(['client', 'create', '--org', '1', '--name', 'worker', '--sponsor', '11', '--resource', '10', '--db', path]);
  tt.equal(forgotten.code, 2, "a worker's client without a scope could do nothing more: taken for a forgotten flag");
  tt.match(forgotten.stderr, /^error: a client with --resource needs at least one --scope$/m);
});

t.test('client create prints a wta_ token once and stores only its hash', async (tt) => {
  const path = demoDatabase(tt);
  const result = await run([
    'client', 'create', '--org', '1', '--name', 'cli-bot', '--sponsor', '11', '--resource', '12',
    '--scope', 'tasks:read', '--scope', 'tasks:notes', '--db', path,
  ]);
  tt.equal(result.code, 0, result.stderr);
  const token = /^token: (wta_[A-Za-z0-9_-]{20,})$/m.exec(result.stdout)?.[1] ?? '';
  tt.not(token, '', 'prints the token');
  tt.equal(result.stdout.split(token).length - 1, 1, 'the token appears exactly once');
  tt.match(result.stdout, /only once/);

  const db = new Database(path, { readonly: true });
  // The new client gets the next free id after the demo's clients.
  const createdId = (db.prepare('SELECT max(id) AS id FROM api_clients').get() as { id: number }).id;
  const rows = db.prepare('SELECT id, token_hash AS hash FROM api_clients').all() as { id: number; hash: string }[];
  const scopes = db.prepare('SELECT scope FROM api_client_scopes WHERE client_id = ? ORDER BY scope').pluck().all(createdId);
  db.close();
  tt.ok(rows.every((row) => !row.hash.includes(token)), 'the token text is in no token_hash');
  tt.same(rows.find((row) => row.id === createdId)?.hash, hashToken(token), 'the stored value is its hash');
  tt.same(scopes, ['tasks:notes', 'tasks:read']);
  for (const file of [path, `${path}-wal`]) {
    if (existsSync(file)) tt.notOk(readFileSync(file).includes(token), `the token is nowhere in ${file.endsWith('-wal') ? 'the WAL' : 'the database file'}`);
  }
  tt.equal(await identityStatus(path, token), 200, 'the new token authenticates');

  const refused = await run(['client', 'create', '--org', '1', '--name', 'x', '--sponsor', '10', '--scope', 'tasks:read', '--db', path]);
  tt.equal(refused.code, 1);
  tt.match(refused.stderr, /^error: sponsor 10 is not a human$/m);

  // A credential works only while its sponsor and its resource are active: none is made otherwise.
  for (const [inactiveStaff, flags, message] of [
    [11, ['--sponsor', '11', '--scope', 'tasks:read'], /^error: sponsor 11 is not active$/m],
    [10, ['--sponsor', '11', '--resource', '10', '--scope', 'tasks:read'], /^error: resource 10 is not active$/m],
  ] as const) {
    const setActive = (active: number) => {
      const staff = new Database(path);
      staff.prepare('UPDATE staff SET is_active = ? WHERE id = ?').run(active, inactiveStaff);
      staff.close();
    };
    setActive(0);
    const inactive = await run(['client', 'create', '--org', '1', '--name', 'x', ...flags, '--db', path]);
    setActive(1);
    tt.equal(inactive.code, 1, flags.join(' '));
    tt.match(inactive.stderr, message);
    tt.notMatch(inactive.stdout, /token:/, 'no token is handed out');
  }

  // An inactive organisation's clients all get 401: a token made for one could never work.
  const retire = new Database(path);
  retire.prepare('UPDATE organisations SET is_active = 0 WHERE id = 1').run();
  retire.close();
  const retired = await run(['client', 'create', '--org', '1', '--name', 'x', '--sponsor', '11', '--scope', 'tasks:read', '--db', path]);
  tt.equal(retired.code, 1);
  tt.match(retired.stderr, /^error: organisation 1 is not active$/m);
  tt.notMatch(retired.stdout, /token:/, 'no token is handed out');
});

t.test('a command whose output nobody reads (| head -0) exits 1 without a stack trace and changes nothing: the token went nowhere', async (tt) => {
  const path = demoDatabase(tt);
  const clients = () => {
    const db = new Database(path, { readonly: true });
    try {
      return db.prepare('SELECT id, name, token_hash FROM api_clients ORDER BY id').all();
    } finally {
      db.close();
    }
  };
  const before = clients();
  const lost = async (args: string[]) => {
    const child = start(args);
    child.stdout?.destroy();
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    tt.same(await exited(child), { code: 1, signal: null }, `${args.slice(0, 2).join(' ')}: exit 1`);
    tt.notMatch(stderr, /at .*\.js:\d+/, 'no stack trace');
    tt.match(stderr, /^error: the output could not be written \(EPIPE\); nothing was changed$/m);
  };
  await lost(['client', 'create', '--org', '1', '--name', 'lost', '--sponsor', '11', '--scope', 'tasks:read', '--db', path]);
  await lost(['client', 'rotate', '100', '--db', path]);
  await lost(['client', 'revoke', '100', '--db', path]);
  tt.same(clients(), before, 'no client was made, and the rotated one keeps its token');
  tt.equal(await identityStatus(path, DEMO_AGENT), 200, 'the token that was neither replaced nor revoked still works');

  const fixture = join(dirname(path), 'renamed.json');
  writeFileSync(fixture, JSON.stringify({ organisations: [{ id: 1, name: 'Renamed' }] }));
  await lost(['load', fixture, '--db', path]);
  const db = new Database(path, { readonly: true });
  tt.equal(db.prepare('SELECT name FROM organisations WHERE id = 1').pluck().get(), 'Demo Org', 'the fixture was not loaded');
  db.close();

  const child = start(['backup', join(dirname(path), 'new', 'deeper', 'copy.sqlite'), '--db', path]);
  child.stdout?.destroy();
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  tt.same(await exited(child), { code: 1, signal: null }, 'backup: exit 1');
  tt.match(stderr, /^error: the output could not be written \(EPIPE\); the copy was removed$/m);
  tt.notOk(existsSync(join(dirname(path), 'new')), 'no copy, and not the directories made for it');
});

t.test('client rotate invalidates the old token', async (tt) => {
  const path = demoDatabase(tt);
  const result = await run(['client', 'rotate', '100', '--db', path]);
  tt.equal(result.code, 0, result.stderr);
  const token = /^token: (wta_\S+)$/m.exec(result.stdout)?.[1] ?? '';
  tt.not(token, '');
  tt.equal(await identityStatus(path, DEMO_AGENT), 401, 'the old token is refused');
  tt.equal(await identityStatus(path, token), 200, 'the new token works');
});

t.test('client revoke in another process makes a running service refuse the token on its very next request', async (tt) => {
  // The service has the token verified and its answers cached; only the -shm header it watches
  // (lib/store/commit-watch.ts) tells it another process committed.
  const path = demoDatabase(tt);
  const service = createService({ db: path });
  tt.teardown(() => service.close());
  const identity = async () => (await service.handle({ method: 'GET', url: '/api/v1/identity', headers: { authorization: `Bearer ${DEMO_AGENT}` } })).status;
  tt.equal(await identity(), 200);
  tt.equal(await identity(), 200, 'verified from memory');
  const result = await run(['client', 'revoke', '100', '--db', path]);
  tt.equal(result.code, 0, result.stderr);
  tt.equal(await identity(), 401);
});

t.test('client revoke makes the token answer 401 and releases the live leases it held', async (tt) => {
  const path = demoDatabase(tt);
  tt.equal(await identityStatus(path, DEMO_AGENT), 200);
  const db = new Database(path);
  const taskId = db.prepare('SELECT task_id FROM task_assignments WHERE staff_id = 10 LIMIT 1').pluck().get() as number;
  db.prepare('INSERT INTO claims (task_id, client_id, token, acquired_utc, expires_utc) VALUES (?, 100, ?, ?, ?)')
    .run(taskId, '0b3f6c1e-9a7d-4e2b-8c5a-1d9e7f3a2b4c', Date.now(), Date.now() + 600_000);
  db.close();
  const result = await run(['client', 'revoke', '100', '--db', path]);
  tt.equal(result.code, 0, result.stderr);
  tt.match(result.stdout, /^released 1 live lease it held$/m, 'says it freed the task');
  const check = new Database(path, { readonly: true });
  tt.not(check.prepare('SELECT released_utc FROM claims WHERE client_id = 100').pluck().get(), null, 'the lease is released');
  check.close();
  tt.equal(await identityStatus(path, DEMO_AGENT), 401);
  tt.equal(await identityStatus(path, DEMO_DIRECTORY), 200, 'other clients are untouched');

  const listed = await run(['client', 'list', '--db', path]);
  tt.match(listed.stdout, /^id=100 org=1 name="ada-bot" sponsor=11 resource=10 active=no scopes=tasks:read,/m);
  tt.notMatch(listed.stdout, hashToken(DEMO_AGENT), 'list shows no hashes');
});

t.test('client commands on a missing database exit 1 naming it and create no file', async (tt) => {
  const missing = join(tt.testdir(), 'typo.sqlite');
  // One command that reads and one that writes: all four share the check.
  for (const args of [['list'], ['create', '--org', '1', '--name', 'x', '--sponsor', '11', '--scope', 'tasks:read']]) {
    const result = await run(['client', ...args, '--db', missing]);
    tt.equal(result.code, 1, `client ${args[0] ?? ''}: exit 1`);
    tt.match(result.stderr, /^error: no database at .*typo\.sqlite \(serve or load creates one\)$/m, `client ${args[0] ?? ''}: names the file`);
    tt.notOk(existsSync(missing), `client ${args[0] ?? ''}: no database is created`);
  }
});

t.test('client commands on another application\'s database (or an empty file, or text) exit 1 naming it and change nothing', async (tt) => {
  const dir = tt.testdir();
  const other = join(dir, 'other.sqlite');
  const foreign = new Database(other);
  foreign.exec('CREATE TABLE foo (x)');
  foreign.close();
  // And one in WAL mode, where a careless look would leave -wal and -shm files beside it.
  const walled = join(dir, 'walled.sqlite');
  const inWal = new Database(walled);
  inWal.pragma('journal_mode = WAL');
  inWal.exec('CREATE TABLE bar (x)');
  inWal.close();
  const empty = join(dir, 'empty.sqlite');
  writeFileSync(empty, '');
  // Text that is no SQLite file at all, long enough to hold what would be a header.
  const text = join(dir, 'text.sqlite');
  writeFileSync(text, 'Not a database.\n'.repeat(100));
  // Every client command shares the check: all three on one file, `list` on the others.
  const commands = [['list'], ['create', '--org', '1', '--name', 'x', '--sponsor', '11', '--scope', 'tasks:read'], ['revoke', '100']];
  for (const [file, tried] of [[other, commands], [empty, commands.slice(0, 1)], [walled, commands.slice(0, 1)], [text, commands]] as const) {
    for (const args of tried) {
      const result = await run(['client', ...args, '--db', file]);
      tt.equal(result.code, 1, `client ${args[0] ?? ''}: exit 1`);
      tt.match(result.stderr, /^error: .*\.sqlite is not a worker-task-api database \(serve or load creates one\)$/m, `client ${args[0] ?? ''}: says so`);
    }
  }
  const after = new Database(other, { readonly: true });
  tt.strictSame(after.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all(), ['foo'], 'no table installed');
  tt.equal(after.pragma('user_version', { simple: true }), 0);
  tt.equal(after.pragma('journal_mode', { simple: true }), 'delete');
  after.close();
  tt.equal(readFileSync(empty).length, 0, 'the empty file stays empty');
  tt.strictSame(readdirSync(dir).sort(), ['empty.sqlite', 'other.sqlite', 'text.sqlite', 'walled.sqlite'], 'no -wal, -shm or journal files left beside them');
});

t.test('backup under a directory that cannot be created fails at once and leaves nothing', { skip: existsSync('/proc/self') ? false : 'no /proc' }, async (tt) => {
  const path = demoDatabase(tt);
  const dir = dirname(path);
  const result = await run(['backup', '/proc/no-such-dir/copy.sqlite', '--db', path]);
  tt.equal(result.code, 1, 'under /proc: exit 1 (node\'s recursive mkdir would spin)');
  tt.match(result.stderr, /^error: backup failed: /m);
  writeFileSync(join(dir, 'file'), 'not a directory');
  const under = await run(['backup', join(dir, 'file', 'sub', 'copy.sqlite'), '--db', path]);
  tt.equal(under.code, 1, 'a directory under a file cannot be made');
  const made = await run(['backup', join(dir, 'made', 'deeper', 'copy.sqlite'), '--db', path]);
  tt.equal(made.code, 0, made.stderr);
  tt.ok(existsSync(join(dir, 'made', 'deeper', 'copy.sqlite')), 'missing directories are created level by level');
});

t.test('SIGTERM stops serve cleanly with exit code 0', async (tt) => {
  const path = join(tt.testdir(), 'stop.sqlite');
  const { child, output, base } = await serve(tt, ['--demo', '--db', path]);
  // A kept-alive connection from fetch must not hold the shutdown up.
  tt.equal((await fetch(`${base}/api/v1/identity`, { headers: { authorization: `Bearer ${DEMO_AGENT}` } })).status, 200);
  child.kill('SIGTERM');
  tt.same(await exited(child), { code: 0, signal: null });
  tt.notMatch(output.stderr, /error/i);
  tt.notOk(existsSync(`${path}-wal`), 'the database was closed (its WAL checkpointed away)');
});

t.test('unknown flag, unknown command, bad value or no command exits 2 with the usage on stderr', async (tt) => {
  const unknown = await run(['serve', '--no-such-flag']);
  tt.equal(unknown.code, 2);
  tt.match(unknown.stderr, /--no-such-flag/);
  tt.match(unknown.stderr, /Usage: worker-task-api/);
  tt.equal(unknown.stdout, '');

  const badSource = await run(['serve', '--source', 'no-equals-sign']);
  tt.equal(badSource.code, 2);
  tt.match(badSource.stderr, /--source must be KEY=BASEURL/);

  const [certAlone, keyFromEnv] = await Promise.all([
    run(['serve', '--tls-cert', 'cert.pem']),
    run(['serve'], { WTA_TLS_KEY: 'key.pem' }),
  ]);
  tt.equal(certAlone.code, 2, '--tls-cert without --tls-key');
  tt.match(certAlone.stderr, /^error: --tls-cert and --tls-key go together \(or WTA_TLS_CERT and WTA_TLS_KEY\): --tls-cert was given alone$/m);
  tt.equal(keyFromEnv.code, 2, 'WTA_TLS_KEY without a certificate');
  tt.match(keyFromEnv.stderr, /: WTA_TLS_KEY was given alone$/m, 'names the variable it came from');

  const badScope = await run(['client', 'create', '--org', '1', '--name', 'x', '--sponsor', '11', '--scope', 'tasks:read', '--scope', 'nope']);
  tt.equal(badScope.code, 2, 'an unknown --scope is a bad value');
  tt.match(badScope.stderr, /unknown scope "nope"/);

  // A repeated flag would silently take its last value; an empty one would e.g. open a throwaway
  // database (--db '') or bind every interface (--host=). Each runs in parallel: a usage error
  // exits before anything is opened.
  const refusals = await Promise.all([
    ['serve', '--port', '1', '--port', '0'],
    ['load', 'fixture.json', '--db', 'a.sqlite', '--db=b.sqlite'],
    ['client', 'list', '--db', 'a.sqlite', '--db', 'b.sqlite'],
    ['serve', '--db', ''],
    ['serve', '--host='],
    ['load', 'fixture.json', '--db='],
    ['client', 'create', '--org', '1', '--name', '', '--sponsor', '11', '--scope', 'tasks:read'],
  ].map(async (args) => ({ args, result: await run(args) })));
  for (const { args, result } of refusals) {
    tt.equal(result.code, 2, `${args.join(' ')}: exit 2`);
    tt.match(result.stderr, /(given twice|must not be empty)[\s\S]*Usage: worker-task-api/, `${args.join(' ')}: says why, then the usage`);
  }
  tt.ok(refusals.some(({ result }) => /--db given twice/.test(result.stderr)), 'names the flag given twice');
  tt.ok(refusals.some(({ result }) => /--host must not be empty/.test(result.stderr)), 'names the empty flag');

  // A negative number is a value like any other, not an option parseArgs cannot place.
  const negatives = await Promise.all([
    [['serve', '--port', '-1'], /^error: --port must be an integer from 0 to 65535, got "-1"$/m],
    [['serve', '--rate-limit', '-5', '--demo'], /^error: --rate-limit must be an integer from 1 to 1000000000, got "-5"$/m],
    [['client', 'create', '--org', '-1', '--name', 'x', '--sponsor', '11'], /^error: --org must be an integer from 1 to 2147483647, got "-1"$/m],
    [['client', 'rotate', '-5'], /^error: client rotate ID must be an integer from 1 to 2147483647, got "-5"$/m],
    [['client', 'revoke', '-5', '--db', 'a.sqlite'], /^error: client revoke ID must be an integer from 1 to 2147483647, got "-5"$/m],
  ].map(async ([args, message]) => ({ args: args as string[], message: message as RegExp, result: await run(args as string[]) })));
  for (const { args, message, result } of negatives) {
    tt.equal(result.code, 2, `${args.join(' ')}: exit 2`);
    tt.match(result.stderr, message, `${args.join(' ')}: judged as a value`);
  }

  const none = await run([]);
  tt.equal(none.code, 2);
  tt.match(none.stderr, /Usage: worker-task-api/, 'no command is a usage error: the usage on stderr');
  tt.equal(none.stdout, '');

  const help = await run(['--help']);
  tt.equal(help.code, 0);
  tt.match(help.stdout, /Usage: worker-task-api/);
});
