import t, { type Test } from 'tap';
import Database from 'better-sqlite3';
import { existsSync, lstatSync, readFileSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { openDb, withDb } from '../bin/database.js';
import { closeDatabase } from '../bin/shutdown.js';
import { CommandError } from '../bin/command-line.js';
import { loadFixture } from '../lib/fixtures/load.js';
import { removeDatabaseFiles } from '../lib/store/files.js';
import { openDatabase } from '../lib/store/open.js';
import { baseFixture, TEST_NOW } from './helpers/fixture.js';

/**
 * bin/database.ts: a command that fails removes the database it created, but never one another
 * command has committed to meanwhile; a command whose file was removed under it changes nothing.
 */

const NOW = Date.parse(TEST_NOW);

/** Another command (a `load`) committing the test world to the file at `path`. */
function loadElsewhere(path: string): void {
  const other = openDatabase(path).db;
  loadFixture(other, baseFixture(), { now: NOW });
  other.close();
}

/** What serve does: fill the database in a write transaction that first claims it if it is empty. */
function seed(opened: Awaited<ReturnType<typeof openDb>>): void {
  opened.db.transaction(() => {
    opened.claimIfEmpty();
    loadFixture(opened.db, baseFixture(), { now: NOW });
  }).immediate();
}

/** An error as better-sqlite3 throws them (told by name and code, as any copy of the module makes them). */
const sqliteError = (message: string, code: string): Error => Object.assign(new Error(message), { name: 'SqliteError', code });

/** bin/database.ts's openDb, with the store's opening of the file doing `openDatabase` instead. */
async function openDbFailing(t: Test, openDatabase: () => never): Promise<typeof openDb> {
  const actual = await import('../lib/store/open.js');
  // Mocks are keyed by the file tsx loads.
  const mocked = await t.mockImport<typeof import('../bin/database.js')>('../bin/database.js', { '../lib/store/open.ts': { ...actual, openDatabase } });
  return mocked.openDb;
}

t.test('CLI DATABASE: a failing command removes the database it created, with what it wrote itself', async (t) => {
  const path = join(t.testdir(), 'new', 'db.sqlite');
  const opened = await openDb(path);
  seed(opened);
  opened.abandon();
  t.notOk(existsSync(join(path, '..')), 'no file and no directory is left');

  const unclaimed = join(t.testdir(), 'plain', 'db.sqlite');
  (await openDb(unclaimed)).abandon();
  t.notOk(existsSync(join(unclaimed, '..')), 'nor when it wrote nothing (a load that failed)');
});

t.test('CLI DATABASE: what another command commits after the failing one filled the database it made keeps the file', async (t) => {
  const path = join(t.testdir(), 'new', 'db.sqlite');
  const opened = await openDb(path);
  seed(opened);
  const other = openDatabase(path).db;
  other.prepare("UPDATE tasks SET title = 'theirs' WHERE id = 1").run();
  other.close();
  opened.abandon();
  t.ok(existsSync(path), 'the file stays');
});

t.test('CLI DATABASE: a failing command keeps the database it created once another command has committed to it', async (t) => {
  const path = join(t.testdir(), 'new', 'db.sqlite');
  const failing = await openDb(path);
  loadElsewhere(path);
  failing.abandon();
  t.ok(existsSync(path), 'the file stays');
  const reopened = openDatabase(path).db;
  t.ok((reopened.prepare('SELECT count(*) FROM tasks').pluck().get() as number) > 0, 'with what the other command loaded');
  reopened.close();
});

t.test('CLI DATABASE: a failing command that found the file made by another command (which committed) never removes it', async (t) => {
  const path = join(t.testdir(), 'new', 'db.sqlite');
  // The failing command starts first, but the other one makes the file and commits before it opens it.
  const failingOpen = openDb(path);
  loadElsewhere(path);
  (await failingOpen).abandon();
  t.ok(existsSync(path), 'the file stays');

  // A path whose file was removed and made again by a third command: still not the failing one's.
  const third = join(t.testdir(), 'again', 'db.sqlite');
  const first = await openDb(third);
  const second = await openDb(third);
  first.abandon();
  t.notOk(existsSync(third), 'the first command removed the file it made');
  loadElsewhere(third);
  second.abandon();
  t.ok(existsSync(third), 'the second command leaves the third one\'s file alone');
});

t.test('CLI DATABASE: a command that opened a database another command then removed (it created it, and failed) changes nothing and says so', async (t) => {
  const path = join(t.testdir(), 'new', 'db.sqlite');
  const failing = await openDb(path);
  const waiting = await openDb(path);
  failing.abandon();
  t.notOk(existsSync(path), 'removed: nobody had committed to it');
  t.throws(() => waiting.assertInPlace(), /was removed while this command waited/, 'the other command can tell');
  waiting.db.close();

  // withDb looks under its write lock, before it reports or commits.
  const reported: string[] = [];
  const failure = await withDb(path, () => {
    removeDatabaseFiles(path);
    return 1;
  }, () => {
    reported.push('loaded');
    return ['loaded'];
  }).then(() => null, (error: unknown) => error);
  t.ok(failure instanceof CommandError, 'the command fails');
  t.match(String(failure), /the database file .*db\.sqlite was removed while this command waited \(another command that created it failed\); nothing was changed/);
  t.strictSame(reported, ['loaded'], 'the report was made ready, and never written (it would have come after the look)');
});

t.test('CLI DATABASE: a database removed while this command was still opening it is reported as removed, not as SQLite\'s read error', async (t) => {
  const path = join(t.testdir(), 'db.sqlite');
  loadElsewhere(path);
  // The other command (which created the file and failed) removes it in the middle of this one's
  // opening; SQLite then fails on what it can no longer read.
  const openingWhileRemoved = await openDbFailing(t, () => {
    removeDatabaseFiles(path);
    throw sqliteError('disk I/O error', 'SQLITE_IOERR_SHORT_READ');
  });
  const failure = await openingWhileRemoved(path).then(() => null, (error: unknown) => error);
  t.ok(failure instanceof Error, `the command fails (got ${String(failure)})`);
  t.match(String(failure), /the database file .*db\.sqlite was removed while this command waited \(another command that created it failed\); nothing was changed/);
  t.notOk(existsSync(path), 'nothing was made in its place');

  // A file still there is SQLite's to describe.
  loadElsewhere(path);
  const openingBroken = await openDbFailing(t, () => {
    throw sqliteError('disk I/O error', 'SQLITE_IOERR_SHORT_READ');
  });
  t.match(String(await openingBroken(path).then(() => null, (error: unknown) => error)), /cannot open database .*db\.sqlite: disk I\/O error/);
});

t.test('CLI DATABASE: a --db that is a loop of links is SQLite\'s to describe, not a file another command removed', async (t) => {
  const dir = t.testdir();
  symlinkSync(join(dir, 'loopB'), join(dir, 'loopA'));
  symlinkSync(join(dir, 'loopA'), join(dir, 'loopB'));
  const failure = await openDb(join(dir, 'loopA')).then(() => null, (error: unknown) => error);
  t.ok(failure instanceof CommandError, `the command fails (got ${String(failure)})`);
  t.match(String(failure), /cannot open database .*loopA: /);
  t.notMatch(String(failure), /removed while this command waited/);
});

t.test('CLI DATABASE: a database file gone while its -wal is still there is refused, and neither is touched', async (t) => {
  const path = join(t.testdir(), 'db.sqlite');
  writeFileSync(`${path}-wal`, 'the latest writes of a file that was moved away');
  const failure = await openDb(path).then(() => null, (error: unknown) => error);
  t.ok(failure instanceof CommandError, 'the command fails');
  t.match(String(failure), /no database at .*db\.sqlite, but .*db\.sqlite-wal is there: the database file was removed or moved without its write-ahead log/);
  t.notOk(existsSync(path), 'no new, empty database was made');
  t.equal(readFileSync(`${path}-wal`, 'utf8'), 'the latest writes of a file that was moved away', 'the log is as it was');

  const emptyLog = join(t.testdir(), 'empty.sqlite');
  writeFileSync(`${emptyLog}-wal`, '');
  const opened = await openDb(emptyLog);
  t.ok(opened.created, 'an empty -wal holds no writes: the database is made');
  opened.db.close();
});

t.test('CLI DATABASE: an empty database file (truncated) beside a -wal that holds writes is refused the same way, and neither is touched', async (t) => {
  const path = join(t.testdir(), 'db.sqlite');
  writeFileSync(path, '');
  writeFileSync(`${path}-wal`, 'the latest writes of a file that was truncated');
  const failure = await openDb(path).then(() => null, (error: unknown) => error);
  t.ok(failure instanceof CommandError, 'the command fails');
  t.match(String(failure), /the database file .*db\.sqlite is empty, but .*db\.sqlite-wal is there: the database file was truncated or replaced without its write-ahead log/);
  t.equal(readFileSync(path, 'utf8'), '', 'the file is as it was');
  t.equal(readFileSync(`${path}-wal`, 'utf8'), 'the latest writes of a file that was truncated', 'the log is as it was');
});

/** What `action` writes to stderr (the CLI's log), kept from the test's own output. */
function loggedWhile(action: () => void): string[] {
  const logged: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((line: string) => logged.push(line) > 0) as typeof process.stderr.write;
  try {
    action();
  } finally {
    process.stderr.write = write;
  }
  return logged;
}

t.test('CLI DATABASE: closing says so when the write-ahead log cannot be folded into the file, and nothing is lost', async (t) => {
  const path = join(t.testdir(), 'db.sqlite');
  const { db } = openDatabase(path);
  loadFixture(db, baseFixture(), { now: NOW });
  // A reader in another process on an older snapshot keeps the later writes in the log.
  const reader = new Database(path);
  reader.exec('BEGIN');
  reader.prepare('SELECT count(*) FROM tasks').get();
  db.prepare("UPDATE tasks SET title = 'after the reader began' WHERE id = 1").run();

  const logged = loggedWhile(() => closeDatabase(db));
  t.notOk(db.open, 'closed all the same');
  t.equal(logged.length, 1);
  t.match(JSON.parse(logged[0] as string), { level: 'error', message: /could not be folded into the database file .* keep the two together/, file: path });
  reader.exec('COMMIT');
  reader.close();
  const reopened = new Database(path, { readonly: true });
  t.equal(reopened.prepare('SELECT title FROM tasks WHERE id = 1').pluck().get(), 'after the reader began', 'the write is there from the log');
  reopened.close();

  const quiet = join(t.testdir(), 'quiet.sqlite');
  const alone = openDatabase(quiet).db;
  loadFixture(alone, baseFixture(), { now: NOW });
  t.strictSame(loggedWhile(() => closeDatabase(alone)), [], 'nothing to say when the log was folded in');
  t.notOk(existsSync(`${quiet}-wal`), 'and the file alone holds everything');
});

t.test('CLI DATABASE: a --db that is a link to a file not made yet gets that file, private whatever the umask', async (t) => {
  const previous = process.umask(0o022);
  t.teardown(() => process.umask(previous));
  const dir = t.testdir();
  const link = join(dir, 'db.sqlite');
  symlinkSync(join('data', 'real.sqlite'), link);
  const opened = await openDb(link);
  t.ok(opened.created, 'made, and so removed again if the command fails');
  opened.db.close();
  const target = join(dir, 'data', 'real.sqlite');
  t.equal(statSync(target).mode & 0o777, 0o600, 'the file the link names, 0600');
  t.equal(statSync(join(dir, 'data')).mode & 0o777, 0o700, 'its directory made 0700');
  t.ok(lstatSync(link).isSymbolicLink(), 'the link stays a link');

  // The library opens a path the same way.
  const libraryLink = join(dir, 'library.sqlite');
  symlinkSync('library-real.sqlite', libraryLink);
  openDatabase(libraryLink).db.close();
  t.equal(statSync(join(dir, 'library-real.sqlite')).mode & 0o777, 0o600);
});

/**
 * The command modules as they run, except that their connections give up on a lock at once
 * rather than after SQLite's 5 s busy timeout: what a command says then is what it says after
 * the wait, and no test waits.
 */
async function withoutBusyTimeout<T>(t: Test, module: string): Promise<T> {
  const actual = await import('../lib/store/open.js');
  return t.mockImport<T>(module, {
    '../lib/store/open.ts': {
      ...actual,
      openDatabase: (db: string | Database.Database) => {
        const opened = actual.openDatabase(db);
        opened.db.pragma('busy_timeout = 0');
        return opened;
      },
    },
  });
}

/** Another program holding the write lock of the database at `path` until the test ends. */
function holdWriteLock(t: Test, path: string): void {
  const holder = new Database(path);
  holder.exec('BEGIN IMMEDIATE');
  t.teardown(() => {
    holder.exec('ROLLBACK');
    holder.close();
  });
}

const LOCKED = /^the database .*db\.sqlite is locked: another connection kept its write lock for the 5 s this command waited \(a long load, or a transaction another program left open\); nothing was changed\. Run this again once it is free$/;

t.test('CLI DATABASE: a command that finds the database locked past the busy timeout names the file and changes nothing', async (t) => {
  const path = join(t.testdir(), 'db.sqlite');
  loadElsewhere(path);
  const before = readFileSync(path);
  holdWriteLock(t, path);
  const { withDb: lockedOut } = await withoutBusyTimeout<typeof import('../bin/database.js')>(t, '../bin/database.js');
  let ran = false;
  const failure = await lockedOut(path, () => {
    ran = true;
  }, () => ['done']).then(() => null, (error: unknown) => error);
  t.ok(failure instanceof Error, `the command fails (got ${String(failure)})`);
  t.match((failure as Error).message, LOCKED, 'SQLite\'s "database is locked" told with the file, and that a retry can succeed');
  t.notOk(ran, 'the command did not run');
  t.ok(readFileSync(path).equals(before), 'the file is as it was');
});

t.test('CLI DATABASE: serve on a database locked past the busy timeout says so with the file, before it listens', async (t) => {
  const path = join(t.testdir(), 'db.sqlite');
  loadElsewhere(path);
  holdWriteLock(t, path);
  const { serve } = await withoutBusyTimeout<typeof import('../bin/serve.js')>(t, '../bin/serve.js');
  const failure = await serve(['--db', path, '--host', '127.0.0.1', '--port', '0']).then(() => null, (error: unknown) => error);
  t.ok(failure instanceof Error, `the start fails (got ${String(failure)})`);
  t.match((failure as Error).message, LOCKED);
  t.ok(existsSync(path), 'the database stays');
});

t.test('CLI DATABASE: a database locked while it is opened (its migration waits for the write lock) is told as locked, not as a file that cannot be opened', async (t) => {
  const path = join(t.testdir(), 'db.sqlite');
  loadElsewhere(path);
  const openingLocked = await openDbFailing(t, () => {
    throw sqliteError('database is locked', 'SQLITE_BUSY');
  });
  const failure = await openingLocked(path).then(() => null, (error: unknown) => error);
  t.ok(failure instanceof Error, `the command fails (got ${String(failure)})`);
  t.match((failure as Error).message, LOCKED);
});

t.test('CLI DATABASE: another SQLite failure of a command names the file and says nothing was changed', async (t) => {
  const path = join(t.testdir(), 'db.sqlite');
  loadElsewhere(path);
  const failure = await withDb(path, () => {
    throw sqliteError('database or disk is full', 'SQLITE_FULL');
  }, () => ['done']).then(() => null, (error: unknown) => error);
  t.ok(failure instanceof CommandError, `the command fails (got ${String(failure)})`);
  t.match((failure as Error).message, /^database .*db\.sqlite: database or disk is full; nothing was changed$/);

  const other = new Error('not SQLite\'s');
  t.equal(await withDb(path, () => {
    throw other;
  }, () => ['done']).then(() => null, (error: unknown) => error), other, 'anything else is thrown as it is');
});
