import t from 'tap';
import Database from 'better-sqlite3';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { AdminError } from '../../lib/admin/clients.js';
import { backupDatabase } from '../../lib/admin/backup.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { baseFixture } from '../helpers/fixture.js';

/**
 * backupDatabase in-process (the command line's `backup`, whose runs in child processes cover
 * the copy made while a server writes): what it refuses before reading anything, what it leaves
 * when it gives up, and the copy it makes.
 */

function sourceIn(dir: string): string {
  const path = join(dir, 'tasks.sqlite');
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  loadFixture(db, baseFixture());
  db.close();
  return path;
}

t.test('BACKUP: an in-memory database, or a target that is the source itself however written, is refused and nothing changes', async (t) => {
  const dir = t.testdir();
  const source = sourceIn(dir);
  const before = readFileSync(source);
  await t.rejects(backupDatabase(':memory:', join(dir, 'copy.sqlite')), new AdminError('an in-memory database cannot be backed up'));
  for (const target of [source, relative(process.cwd(), source), join(dir, '.', 'sub', '..', 'tasks.sqlite')]) {
    await t.rejects(backupDatabase(source, target), new AdminError('the backup file must not be the database itself'), target);
  }
  t.same(readFileSync(source), before, 'the database is unchanged');
  t.same(readdirSync(dir).sort(), ['tasks.sqlite'], 'and nothing was made beside it');
});

t.test('BACKUP: the copy is one self-contained file that passes its integrity check and holds the data', async (t) => {
  const dir = t.testdir();
  const source = sourceIn(dir);
  const target = join(dir, 'nested', 'copy.sqlite');
  const summary = await backupDatabase(source, target);
  t.strictSame(readdirSync(join(dir, 'nested')), ['copy.sqlite'], 'no -wal, -shm or -journal beside it');
  const copy = new Database(target, { readonly: true, fileMustExist: true });
  t.teardown(() => copy.close());
  t.equal(summary.pages, copy.pragma('page_count', { simple: true }), 'every page reported');
  t.equal(copy.pragma('journal_mode', { simple: true }), 'delete');
  t.equal(copy.pragma('integrity_check', { simple: true }), 'ok');
  t.equal(copy.prepare('SELECT count(*) FROM tasks').pluck().get(), baseFixture().tasks.length);
});

t.test('BACKUP: a copy given up at its last step (a failed report, a stop signal) is removed with the directory made for it', async (t) => {
  const dir = t.testdir();
  const source = sourceIn(dir);
  await t.rejects(backupDatabase(source, join(dir, 'made', 'copy.sqlite'), async () => {
    throw new Error('stdout closed');
  }), /stdout closed/);
  t.notOk(existsSync(join(dir, 'made')), 'the report failed: no copy, no directory');
  const stop = new AbortController();
  stop.abort();
  await t.rejects(backupDatabase(source, join(dir, 'stopped', 'copy.sqlite'), undefined, stop.signal),
    new AdminError('interrupted; the unfinished copy was removed'));
  t.notOk(existsSync(join(dir, 'stopped')), 'stopped: no copy, no directory');
  t.same(readdirSync(dir).filter((name) => !name.startsWith('tasks.sqlite')), [], 'only the source (and its WAL files) remain');
});
