import t from 'tap';
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { backupDatabase } from '../../lib/admin/backup.js';
import { AdminError } from '../../lib/admin/clients.js';
import { createNewPrivateFile, makeParents, removeEmptyDirectories } from '../../lib/store/files.js';
import { openDatabase, transientDatabaseFailure } from '../../lib/store/open.js';

// lib/store/open.ts: which failures are a busy, full, read-only or failing database (503 temporarily_unavailable, not a 500).

/** An error shaped as another copy of better-sqlite3 throws it: its own class, the same name and code. */
class OtherCopySqliteError extends Error {
  constructor(message: string, readonly code: string) {
    super(message);
  }
}
Object.defineProperty(OtherCopySqliteError.prototype, 'name', { value: 'SqliteError' });

t.test('STORE: a busy, locked, full, read-only or failing (I/O error) database is recognised by name and code, from any copy of better-sqlite3', async (t) => {
  for (const [code, kind] of [
    ['SQLITE_BUSY', 'busy'], ['SQLITE_BUSY_SNAPSHOT', 'busy'], ['SQLITE_LOCKED', 'busy'], ['SQLITE_LOCKED_SHAREDCACHE', 'busy'],
    ['SQLITE_FULL', 'full'], ['SQLITE_READONLY', 'read-only'], ['SQLITE_READONLY_DBMOVED', 'read-only'],
    ['SQLITE_IOERR', 'I/O error'], ['SQLITE_IOERR_WRITE', 'I/O error'], ['SQLITE_IOERR_FSYNC', 'I/O error'],
  ] as const) {
    t.equal(transientDatabaseFailure(new Database.SqliteError('database is locked', code)), kind, `this copy: ${code}`);
    t.equal(transientDatabaseFailure(new OtherCopySqliteError('database is locked', code)), kind, `another copy: ${code}`);
  }
  for (const [error, what] of [
    [new Database.SqliteError('constraint failed', 'SQLITE_CONSTRAINT'), 'another SQLite code'],
    [new OtherCopySqliteError('x', 'SQLITE_BUSYNESS'), 'a code that only starts like busy'],
    [new OtherCopySqliteError('x', 'SQLITE_FULLY'), 'a code that only starts like full'],
    [new OtherCopySqliteError('x', 'SQLITE_IOERRS'), 'a code that only starts like an I/O error'],
    [Object.assign(new Error('locked'), { code: 'SQLITE_BUSY' }), 'not a SqliteError'],
    [{ name: 'SqliteError', code: 'SQLITE_BUSY' }, 'not an Error'],
    ['SQLITE_BUSY', 'a string'],
  ] as const) {
    t.equal(transientDatabaseFailure(error), null, what);
  }
});

t.test('STORE: a file database runs in WAL mode, synchronous FULL, and a WAL that grew is cut back to 16 MiB when the log starts over', async (t) => {
  const { db } = openDatabase(join(t.testdir(), 'pragmas.sqlite'));
  t.teardown(() => db.close());
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal');
  t.equal(db.pragma('synchronous', { simple: true }), 2, 'FULL');
  t.equal(db.pragma('journal_size_limit', { simple: true }), 16 * 1024 * 1024);
  const wal = `${db.name}-wal`;
  db.exec('CREATE TABLE big (b BLOB); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 24) INSERT INTO big SELECT randomblob(1000000) FROM n');
  t.ok(statSync(wal).size > 20 * 1024 * 1024, 'one 24 MB transaction grew the WAL');
  db.pragma('wal_checkpoint(PASSIVE)');
  db.exec('DELETE FROM big');
  t.ok(statSync(wal).size <= 16 * 1024 * 1024, `the next write started the log over, cut back to ${statSync(wal).size} bytes`);
});

t.test('STORE: a new database file is its owner\'s alone (0600, and so its WAL), in new directories that are too (0700), whatever the umask', async (t) => {
  const before = process.umask(0o022);
  t.teardown(() => { process.umask(before); });
  const dir = t.testdir();
  const path = join(dir, 'new', 'deeper', 'db.sqlite');
  const { db } = openDatabase(path);
  db.prepare('INSERT INTO organisations (id, name) VALUES (1, ?)').run('Acme');
  const mode = (file: string) => statSync(file).mode & 0o777;
  t.equal(mode(path), 0o600, 'the database');
  t.equal(mode(`${path}-wal`), 0o600, 'its WAL');
  t.equal(mode(join(dir, 'new')), 0o700, 'the directories made for it');
  t.equal(mode(join(dir, 'new', 'deeper')), 0o700);
  db.close();
  const existing = join(dir, 'shared.sqlite');
  writeFileSync(existing, '', { mode: 0o640 });
  openDatabase(existing).db.close();
  t.equal(mode(existing), 0o640, 'an existing file keeps the mode its owner gave it');
});

t.test('STORE: a backup is its owner\'s alone (0600) too', async (t) => {
  const before = process.umask(0o022);
  t.teardown(() => { process.umask(before); });
  const dir = t.testdir();
  const source = join(dir, 'db.sqlite');
  openDatabase(source).db.close();
  await backupDatabase(source, join(dir, 'copies', 'copy.sqlite'));
  t.equal(statSync(join(dir, 'copies', 'copy.sqlite')).mode & 0o777, 0o600);
  t.equal(statSync(join(dir, 'copies')).mode & 0o777, 0o700);
});

t.test('STORE: a backup given up (its stop signal aborted, as SIGINT or SIGTERM does in the command) removes the copy and the directories it made', async (t) => {
  const dir = t.testdir();
  const source = join(dir, 'db.sqlite');
  openDatabase(source).db.close();
  const stop = new AbortController();
  const copying = backupDatabase(source, join(dir, 'new', 'deeper', 'copy.sqlite'), undefined, stop.signal);
  stop.abort();
  await t.rejects(copying, new AdminError('interrupted; the unfinished copy was removed'));
  t.notOk(existsSync(join(dir, 'new')), 'no copy and no directory is left to block the next run');
  t.strictSame(readdirSync(dir).sort(), ['db.sqlite'], 'nor any journal beside it');
  const kept = await backupDatabase(source, join(dir, 'new', 'copy.sqlite'), undefined, new AbortController().signal);
  t.ok(kept.pages > 0, 'not stopped, the same call keeps its copy');
  t.ok(existsSync(join(dir, 'new', 'copy.sqlite')));
});

t.test('STORE: a file that must be new (a backup) is created 0600, and an existing one is reported and left as it was', async (t) => {
  const dir = t.testdir();
  const fresh = join(dir, 'copy.sqlite');
  t.equal(createNewPrivateFile(fresh), true);
  t.equal(statSync(fresh).mode & 0o777, 0o600);
  const existing = join(dir, 'precious.sqlite');
  writeFileSync(existing, 'precious');
  t.equal(createNewPrivateFile(existing), false, 'exclusive create: an existing file is not taken over');
  t.equal(readFileSync(existing, 'utf8'), 'precious', 'and is untouched');
});

t.test('STORE: directories made for a file are removed again only while empty: what another process put there stays', async (t) => {
  const dir = t.testdir();
  const top = join(dir, 'made');
  const deepest = join(top, 'deeper');
  t.equal(makeParents(deepest), top, 'the topmost directory made');
  writeFileSync(join(top, 'theirs.txt'), 'kept');
  removeEmptyDirectories(deepest, top);
  t.notOk(existsSync(deepest), 'the empty directory goes');
  t.equal(readFileSync(join(top, 'theirs.txt'), 'utf8'), 'kept', 'a directory holding another file stays, with the file');
  removeEmptyDirectories(join(top, 'never-made'), top);
  t.ok(existsSync(top), 'a directory never made is passed over, and a non-empty one still stays');
});

t.test('STORE: directories made before a mkdir that fails are removed again, and the failure is the one reported', async (t) => {
  const dir = t.testdir();
  const tooLong = join(dir, 'made', 'a', 'x'.repeat(300), 'db.sqlite');
  t.throws(() => openDatabase(tooLong), { code: 'ENAMETOOLONG' }, 'the mkdir that failed is what the caller hears of');
  t.notOk(existsSync(join(dir, 'made')), 'nothing made on the way is left');
});

const READ_ONLY = /^worker-task-api: the database is read-only to this process; the service writes to it, so it needs write access to the file and its directory/;

t.test('STORE: a database opened read-only is refused in words when it is adopted, not a 500 on every write later', async (t) => {
  const path = join(t.testdir(), 'db.sqlite');
  openDatabase(path).db.close();
  const readOnly = new Database(path, { readonly: true });
  t.teardown(() => readOnly.close());
  t.throws(() => openDatabase(readOnly), READ_ONLY);
  t.equal(readOnly.open, true, "the caller's handle stays open");
  t.equal(readOnly.inTransaction, false, 'and outside any transaction');
});

// SQLite opens a file it may not write read-only without a word; root may write any file.
const asUser = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
t.test('STORE: a database file this process may not write is refused at open, also through a link, and by backup while nothing has it open, and left as it was', { skip: process.platform === 'win32' ? 'POSIX modes' : false }, async (t) => {
  const dir = t.testdir();
  chmodSync(dir, 0o777);
  const path = join(dir, 'db.sqlite');
  const { db } = openDatabase(path);
  db.prepare('INSERT INTO organisations (id, name) VALUES (1, ?)').run('Acme');
  db.close();
  chmodSync(path, 0o444);
  symlinkSync(path, join(dir, 'link.sqlite'));
  const before = readFileSync(path);
  const openAs = (body: string): string[] => {
    const script = `import { fileHoldsServiceSchema, openDatabase } from ${JSON.stringify(new URL('../../lib/store/open.ts', import.meta.url).href)};
import Database from 'better-sqlite3';
const attempt = (db) => { try { openDatabase(db); console.log('opened'); } catch (error) { console.log(error.message); } };
${body}`;
    // Through sh, which drops the NODE_OPTIONS tap adds to every child and the NODE_V8_COVERAGE of
    // `npm run coverage`: tap's process-info hook and V8 would write where this user may not.
    const child = spawnSync('/bin/sh', ['-c', 'unset NODE_OPTIONS NODE_V8_COVERAGE; exec "$0" "$@"', process.execPath, '--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      cwd: dir,
      ...asUser,
    });
    t.equal(child.stderr, '', 'nothing on stderr');
    return child.stdout.trim().split('\n');
  };
  const byName = openAs("attempt('db.sqlite'); attempt('link.sqlite'); console.log(fileHoldsServiceSchema('link.sqlite'));");
  t.equal(byName.length, 3);
  t.match(byName[0], READ_ONLY, 'by its name');
  t.match(byName[1], READ_ONLY, 'through a link');
  t.equal(byName[2], 'true', 'the command line\'s look at its schema leaves it to openDatabase to refuse');
  // No read happened: SQLite would have made -wal and -shm files this user cannot remove, which
  // would keep the database refused once its mode is put right.
  t.same(readdirSync(dir).sort(), ['db.sqlite', 'link.sqlite'], 'no -wal or -shm left');
  // An embedder's handle, adopted after the working directory has changed.
  const adopted = openAs("const handle = new Database('db.sqlite'); process.chdir('/'); attempt(handle); handle.close();");
  t.match(adopted, [READ_ONLY], 'a handle adopted after a chdir');
  t.same(readdirSync(dir).sort(), ['db.sqlite', 'link.sqlite'], 'no -wal or -shm left by the adopted handle either');
  t.same(readFileSync(path), before, 'the file is unchanged');

  // backup reads it: refused too, leaving nothing, unless a connection already has it open.
  const backupAs = (source: string, target: string): string[] => openAs(`import { backupDatabase } from ${JSON.stringify(new URL('../../lib/admin/backup.ts', import.meta.url).href)};
try { const { pages } = await backupDatabase(${JSON.stringify(source)}, ${JSON.stringify(target)}); console.log('copied', pages > 0); } catch (error) { console.log(error.message); }`);
  t.match(backupAs('db.sqlite', join(dir, 'copy.sqlite')), [/^db\.sqlite is read-only to this process and nothing has it open: reading it would leave -wal and -shm files beside it that a server could not remove\./],
    'backup refuses a read-only database nothing has open');
  t.same(readdirSync(dir).sort(), ['db.sqlite', 'link.sqlite'], 'no -wal, -shm or copy left by backup');
  chmodSync(path, 0o644);
  const server = new Database(path);
  server.pragma('journal_mode = WAL');
  server.prepare('SELECT count(*) FROM organisations').get();
  chmodSync(path, 0o444);
  t.match(backupAs('db.sqlite', join(dir, 'live.sqlite')), ['copied true'], 'with a connection holding it open, the copy is made');
  t.match(backupAs('link.sqlite', join(dir, 'through-link.sqlite')), ['copied true'], 'also through a link (SQLite names the -shm file after the file it leads to)');
  server.close();
  chmodSync(join(dir, 'live.sqlite'), 0o444);
  t.match(backupAs('live.sqlite', join(dir, 'copy-of-copy.sqlite')), ['copied true'], 'a database in rollback-journal mode (a backup) is read without making any file');
  t.notOk(existsSync(join(dir, 'live.sqlite-wal')) || existsSync(join(dir, 'live.sqlite-shm')), 'and none is left');
});
