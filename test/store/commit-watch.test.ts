import t from 'tap';
import Database from 'better-sqlite3';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, fstatSync, readdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { createService } from '../../lib/service.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { watchCommits } from '../../lib/store/commit-watch.js';
import { openDatabase } from '../../lib/store/open.js';
import { snapshotStatements } from '../../lib/store/snapshots.js';
import { manualClock } from '../../lib/time/clock.js';
import { API } from '../helpers/api.js';
import { baseFixture, TEST_NOW, TOKENS } from '../helpers/fixture.js';
import type { TapTest } from '../helpers/api.js';

/**
 * lib/store/commit-watch.ts: a cached read learns that nothing was committed from the wal-index
 * header, not from `PRAGMA data_version`. Statements are counted through better-sqlite3's
 * `verbose` hook; every change below is made where the API cannot see it.
 */

const REPOSITORY = resolve(import.meta.dirname, '../..');

/** A service over a file, on a connection whose statements are counted, and a second connection to the file. */
function countedWorld(t: TapTest) {
  const dir = t.testdir();
  const path = join(dir, 'service.db');
  const clock = manualClock(TEST_NOW);
  const seed = new Database(path);
  loadFixture(seed, baseFixture(), { now: clock.now() });
  seed.close();
  const executed: string[] = [];
  const db = new Database(path, { verbose: (sql) => executed.push(String(sql)) });
  const service = createService({ db, clock, rateLimit: 100_000 });
  const other = new Database(path);
  t.teardown(() => {
    other.close();
    service.close();
    db.close();
  });
  const title = async () => {
    const response = await service.handle({ method: 'GET', url: `${API}/tasks/1`, headers: { authorization: `Bearer ${TOKENS.ada}` } });
    return response.status === 200 ? (JSON.parse(response.body ?? '{}') as { title: string }).title : `status ${response.status}`;
  };
  /** How many times `PRAGMA data_version` ran during `run`. */
  const versionChecks = async (run: () => Promise<unknown>) => {
    const before = executed.length;
    await run();
    return executed.slice(before).filter((sql) => sql === 'PRAGMA data_version').length;
  };
  return { path, db, service, other, title, versionChecks };
}

t.test('EPOCH: repeated cached reads of a file database run no PRAGMA data_version while nothing is committed', async (t) => {
  const { title, versionChecks } = countedWorld(t);
  t.equal(await title(), 'Write copy');
  t.equal(await versionChecks(async () => {
    for (let index = 0; index < 5; index += 1) t.equal(await title(), 'Write copy');
  }), 0);
});

t.test('EPOCH: a commit by another connection is seen by the next read, which checks data_version once', async (t) => {
  const { other, title, versionChecks } = countedWorld(t);
  t.equal(await title(), 'Write copy');
  other.prepare("UPDATE tasks SET title = 'Renamed elsewhere' WHERE id = 1").run();
  t.equal(await versionChecks(async () => t.equal(await title(), 'Renamed elsewhere')), 1);
  t.equal(await versionChecks(title), 0, 'then quiet again');
});

t.test('EPOCH: a commit by another process is seen by the next read', async (t) => {
  const { path, title } = countedWorld(t);
  t.equal(await title(), 'Write copy');
  execFileSync(process.execPath, ['-e', `
    const Database = require('better-sqlite3');
    const db = new Database(process.argv[1]);
    db.prepare("UPDATE tasks SET title = 'Renamed by another process' WHERE id = 1").run();
    db.close();
  `, path], { cwd: REPOSITORY });
  t.equal(await title(), 'Renamed by another process');
});

t.test('EPOCH: a commit after another connection checkpointed and truncated the WAL is seen (the log starts over)', async (t) => {
  const { other, title } = countedWorld(t);
  t.equal(await title(), 'Write copy');
  other.prepare("UPDATE tasks SET title = 'First' WHERE id = 1").run();
  t.equal(await title(), 'First');
  for (const name of ['Second', 'Third']) {
    other.pragma('wal_checkpoint(TRUNCATE)');
    other.prepare('UPDATE tasks SET title = ? WHERE id = 1').run(name);
    t.equal(await title(), name);
  }
});

t.test('EPOCH: the service\'s own writes are seen by its next read, and so is SQL on its own connection', async (t) => {
  const { db, title } = countedWorld(t);
  t.equal(await title(), 'Write copy');
  db.prepare("UPDATE tasks SET title = 'Same handle' WHERE id = 1").run();
  t.equal(await title(), 'Same handle');
});

/** Device and inode of a file, as fstat gives them for a descriptor. */
function fileId(path: string): { dev: bigint; ino: bigint } {
  const stats = statSync(path, { bigint: true });
  return { dev: stats.dev, ino: stats.ino };
}

/** The open descriptors of this process on that file. */
function descriptorsOn(file: { dev: bigint; ino: bigint }): number {
  return readdirSync('/proc/self/fd').filter((fd) => {
    try {
      const stats = fstatSync(Number(fd), { bigint: true });
      return stats.dev === file.dev && stats.ino === file.ino;
    } catch {
      return false;
    }
  }).length;
}

/**
 * The locks this process holds on that file, through any of its descriptors: the `lock:` lines
 * of /proc/self/fdinfo, which need no device numbers (btrfs and some overlays print another
 * device in /proc/locks than stat gives).
 */
function locksOn(file: { dev: bigint; ino: bigint }): number {
  return readdirSync('/proc/self/fd').reduce((count, fd) => {
    try {
      const stats = fstatSync(Number(fd), { bigint: true });
      if (stats.dev !== file.dev || stats.ino !== file.ino) return count;
      return count + readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8').split('\n').filter((line) => line.startsWith('lock:')).length;
    } catch {
      return count;
    }
  }, 0);
}

t.test('EPOCH: closing a service keeps SQLite\'s locks on the -shm file; the watch\'s descriptor goes once SQLite has removed the file', { skip: process.platform !== 'linux' && 'reads /proc' }, async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'service.db');
  const db = openDatabase(path).db;
  db.pragma('data_version'); // SQLite opens the -wal and -shm files at the first read
  const shm = fileId(`${path}-shm`);
  const sqliteDescriptors = descriptorsOn(shm);
  const sqliteLocks = locksOn(shm);
  t.ok(sqliteDescriptors >= 1 && sqliteLocks >= 1, 'SQLite holds the -shm file open and locked');

  const first = createService({ db });
  t.equal(descriptorsOn(shm), sqliteDescriptors + 1, 'the watch reads it through a descriptor of its own');
  first.close();
  const second = createService({ db: path });
  t.equal(descriptorsOn(shm), sqliteDescriptors + 1, 'the next service on the same file shares it');
  second.close();
  // Closing any descriptor of the file would drop every POSIX lock this process holds on it.
  t.equal(locksOn(shm), sqliteLocks, 'SQLite\'s locks are all still there');
  t.equal(descriptorsOn(shm), sqliteDescriptors + 1, 'so the descriptor stays while the -shm file does');

  db.close();
  t.notOk(existsSync(`${path}-shm`), 'the last connection removed the -shm file');
  createService({ db: join(dir, 'another.db') }).close();
  t.equal(descriptorsOn(shm), 0, 'and the next service opened or closed let go of the descriptor');
});

t.test('EPOCH: a database directory renamed while the connection is open does not make a service close SQLite\'s -shm file', { skip: process.platform !== 'linux' && 'reads /proc' }, async (t) => {
  const root = t.testdir();
  const path = join(root, 'before', 'service.db');
  const db = openDatabase(path).db;
  t.teardown(() => db.close());
  db.pragma('data_version');
  const shm = fileId(`${path}-shm`);
  const sqliteLocks = locksOn(shm);
  t.ok(sqliteLocks >= 1);
  createService({ db }).close();
  renameSync(join(root, 'before'), join(root, 'after'));
  // Creating and closing services looks over the descriptors no watch uses.
  createService({ db }).close();
  createService({ db: join(root, 'another.db') }).close();
  t.equal(locksOn(shm), sqliteLocks, 'SQLite\'s locks are all still there');
  t.equal(db.prepare('SELECT count(*) FROM tasks').pluck().get(), 0, 'and the connection still reads');
});

t.test('EPOCH: a connection taken out of WAL mode (its -shm file removed) is checked with data_version again', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'service.db');
  const db = openDatabase(path).db;
  t.teardown(() => db.close());
  db.exec('CREATE TABLE marks (n INTEGER)');
  const snapshots = snapshotStatements(db, { watchCheckMs: 0 });
  t.teardown(() => snapshots.close());
  const first = snapshots.epoch();
  t.equal(snapshots.epoch(), first);
  const commitElsewhere = (n: number) => {
    const other = new Database(path);
    other.prepare('INSERT INTO marks VALUES (?)').run(n);
    other.close();
  };
  db.pragma('journal_mode = DELETE');
  t.notOk(existsSync(`${path}-shm`), 'SQLite removed the -shm file');
  const switched = snapshots.epoch();
  commitElsewhere(1);
  const second = snapshots.epoch();
  t.not(second.dataVersion, switched.dataVersion, 'a commit by another connection in the rollback journal is seen');
  db.pragma('journal_mode = WAL');
  const back = snapshots.epoch();
  commitElsewhere(2);
  t.not(snapshots.epoch().dataVersion, back.dataVersion, 'and one after the connection went back to WAL mode');
});

t.test('EPOCH: a connection taken out of WAL mode and back before the next check watches its new -shm file', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'service.db');
  const executed: string[] = [];
  const db = new Database(path, { verbose: (sql) => executed.push(String(sql)) });
  openDatabase(db);
  t.teardown(() => db.close());
  db.exec('CREATE TABLE marks (n INTEGER)');
  const snapshots = snapshotStatements(db, { watchCheckMs: 0 });
  t.teardown(() => snapshots.close());
  snapshots.epoch();
  const before = fileId(`${path}-shm`);
  db.pragma('journal_mode = DELETE');
  db.pragma('journal_mode = WAL');
  db.pragma('data_version'); // the first read in WAL mode makes the new -shm file
  t.not(fileId(`${path}-shm`).ino, before.ino, 'a new -shm file');
  const back = snapshots.epoch();
  const other = new Database(path);
  t.teardown(() => other.close());
  other.exec('INSERT INTO marks VALUES (1)');
  const seen = snapshots.epoch();
  t.not(seen.dataVersion, back.dataVersion, 'a commit by another connection is seen');
  const checks = executed.length;
  t.equal(snapshots.epoch(), seen);
  t.equal(executed.slice(checks).filter((sql) => sql === 'PRAGMA data_version').length, 0, 'and quiet reads are answered from the new file\'s header');
});

t.test('EPOCH: the watched file is checked at most once per watchCheckMs, and never again once closed', async (t) => {
  const db = openDatabase(join(t.testdir(), 'service.db')).db;
  t.teardown(() => db.close());
  const made: string[] = [];
  const fake = (name: string) => () => {
    made.push(name);
    return { unchanged: () => true, remember: () => undefined, alive: () => { made.push(`${name} alive?`); return false; }, close: () => undefined };
  };
  const throttled = snapshotStatements(db, { watchCommits: fake('throttled'), watchCheckMs: 1e9 });
  throttled.epoch();
  throttled.epoch();
  t.same(made, ['throttled'], 'no check within watchCheckMs');
  throttled.close();

  made.length = 0;
  const eager = snapshotStatements(db, { watchCommits: fake('eager'), watchCheckMs: 0 });
  eager.epoch();
  t.same(made, ['eager', 'eager alive?', 'eager'], 'a file gone: watched afresh');
  eager.close();
  made.length = 0;
  eager.epoch();
  t.same(made, [], 'closed: no check and no new watch (nothing would release it)');
});

t.test('EPOCH: a database opened by a URI with parameters is not watched (unix-excl keeps the wal-index in memory)', async (t) => {
  // better-sqlite3 reads SQLITE_USE_URI when it loads, so this runs in processes of its own.
  const dir = t.testdir();
  const path = join(dir, 'service.db');
  const killed = spawnSync(process.execPath, ['-e', `
    const Database = require('better-sqlite3');
    const db = new Database(process.argv[1]);
    db.pragma('journal_mode = WAL');
    db.exec('CREATE TABLE marks (n INTEGER); INSERT INTO marks VALUES (0)');
    process.kill(process.pid, 'SIGKILL');
  `, path], { cwd: REPOSITORY });
  t.equal(killed.signal, 'SIGKILL');
  t.ok(existsSync(`${path}-shm`), 'a -shm file left by a process that was killed');
  const script = join(dir, 'uri.mts');
  writeFileSync(script, `
    import Database from 'better-sqlite3';
    import { openDatabase } from ${JSON.stringify(join(REPOSITORY, 'lib/store/open.ts'))};
    import { snapshotStatements } from ${JSON.stringify(join(REPOSITORY, 'lib/store/snapshots.ts'))};
    const name = 'file:' + process.argv[2] + '?vfs=unix-excl';
    const db = openDatabase(new Database(name)).db;
    const snapshots = snapshotStatements(db);
    const first = snapshots.epoch().dataVersion;
    const other = new Database(name);
    other.exec('INSERT INTO marks VALUES (1)');
    process.stdout.write(JSON.stringify({ first, second: snapshots.epoch().dataVersion }));
  `);
  const output = execFileSync(process.execPath, ['--import', 'tsx', script, path], {
    cwd: REPOSITORY, env: { ...process.env, SQLITE_USE_URI: '1' },
  }).toString();
  const { first, second } = JSON.parse(output) as { first: number; second: number };
  t.not(second, first, 'a commit by another connection of the process is seen');
});

t.test('EPOCH: the header is read before data_version and kept only after it, with no second look in between', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'service.db');
  const steps: string[] = [];
  const db = new Database(path, { verbose: (sql) => { if (String(sql) === 'PRAGMA data_version') steps.push('data_version'); } });
  openDatabase(db);
  t.teardown(() => db.close());
  let unchanged = false;
  const snapshots = snapshotStatements(db, {
    watchCommits: () => ({
      unchanged: () => { steps.push('header'); return unchanged; },
      remember: () => { steps.push('remember'); },
      alive: () => true,
      close: () => undefined,
    }),
  });
  steps.length = 0;
  snapshots.epoch();
  t.same(steps, ['header', 'data_version', 'remember'], 'a header that moved: data_version, then kept');
  steps.length = 0;
  unchanged = true;
  snapshots.epoch();
  t.same(steps, ['header'], 'a header as kept: nothing more');
  db.prepare('INSERT INTO organisations (id, name) VALUES (1, ?)').run('Own');
  steps.length = 0;
  snapshots.epoch();
  t.same(steps, ['header', 'data_version', 'remember'], 'this connection\'s own change: data_version too');
});

t.test('EPOCH: a commit made while an epoch is being read shows at the next read, not as seen', async (t) => {
  // The header kept must be the one read before data_version: a commit landing after it moves
  // the header again, so the next epoch looks at data_version once more.
  const dir = t.testdir();
  const path = join(dir, 'service.db');
  let during: (() => void) | undefined;
  const db = new Database(path, {
    verbose: (sql) => {
      if (String(sql).startsWith('SELECT generation FROM credential_generation') && during !== undefined) {
        const commit = during;
        during = undefined;
        commit();
      }
    },
  });
  openDatabase(db);
  const other = new Database(path);
  t.teardown(() => {
    other.close();
    db.close();
  });
  other.exec('CREATE TABLE marks (n INTEGER)');
  const snapshots = snapshotStatements(db);
  t.teardown(() => snapshots.close());
  const first = snapshots.epoch();
  t.equal(snapshots.epoch(), first, 'nothing committed: the same epoch');
  other.exec('INSERT INTO marks VALUES (1)');
  during = () => other.exec('INSERT INTO marks VALUES (2)');
  const second = snapshots.epoch();
  t.equal(during, undefined, 'the second commit landed while the epoch was being read');
  t.not(second.dataVersion, first.dataVersion);
  const third = snapshots.epoch();
  t.not(third.dataVersion, second.dataVersion, 'the commit made during the read moves the next epoch');
  t.equal(snapshots.epoch(), third, 'then nothing more');
});

t.test('watchCommits: nothing to watch in memory, outside WAL mode or with exclusive locking', async (t) => {
  const dir = t.testdir();
  const memory = new Database(':memory:');
  t.equal(watchCommits(memory, ''), undefined, 'in memory');
  memory.close();

  /** A file database with one table, set up by `pragmas` first. */
  const fileDatabase = (name: string, pragmas: readonly string[]) => {
    const db = new Database(join(dir, name));
    for (const pragma of pragmas) db.pragma(pragma);
    db.exec('CREATE TABLE x (y)');
    return db;
  };
  for (const [name, pragmas, what] of [
    ['rollback.db', [], 'rollback journal'],
    ['exclusive.db', ['journal_mode = WAL', 'locking_mode = EXCLUSIVE'], 'exclusive locking'],
  ] as const) {
    const db = fileDatabase(name, pragmas);
    t.equal(watchCommits(db, join(dir, name)), undefined, what);
    db.close();
  }

  const missing = fileDatabase('wal.db', ['journal_mode = WAL']);
  t.equal(watchCommits(missing, join(dir, 'elsewhere.db')), undefined, 'no -shm file by that name');
  const watch = watchCommits(missing, join(dir, 'wal.db'));
  t.not(watch, undefined, 'a WAL database');
  t.equal(watch?.unchanged(), false, 'nothing kept before the first look');
  watch?.remember();
  t.equal(watch?.unchanged(), true, 'no commit since');
  missing.exec('INSERT INTO x VALUES (1)');
  t.equal(watch?.unchanged(), false, 'a commit');
  t.equal(watch?.unchanged(), false, 'still differs from what was kept until it is remembered');
  watch?.remember();
  t.equal(watch?.unchanged(), true);
  watch?.close();
  t.equal(watch?.unchanged(), false, 'a closed watch never says unchanged');
  missing.close();
});
