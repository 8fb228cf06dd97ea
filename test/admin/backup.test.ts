import t from 'tap';
import Database from 'better-sqlite3';
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { AdminError } from '../../lib/admin/clients.js';
import { backupDatabase } from '../../lib/admin/backup.js';
import { BACKUP_COPY_ID, moveVersionsPastRestore } from '../../lib/store/organisations.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { createService, type Service } from '../../lib/service.js';
import type { ServiceResponse } from '../../lib/http/types.js';
import { manualClock } from '../../lib/time/clock.js';
import { baseFixture, TEST_NOW, TOKENS } from '../helpers/fixture.js';

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

t.test('RESTORE: a database in rollback-journal mode that no backup made (an embedder\'s, say) keeps its versions when the service first opens it', async (t) => {
  const path = join(t.testdir(), 'own.sqlite');
  const db = new Database(path);
  db.transaction(() => loadFixture(db, baseFixture()))();
  const version = (db.prepare('SELECT workspace_version AS v FROM organisations WHERE id = 1').get() as { v: number }).v;
  t.equal(db.pragma('journal_mode', { simple: true }), 'delete');
  db.close();
  const service = createService({ db: path, clock: manualClock(TEST_NOW) });
  const read = await service.handle({ method: 'GET', url: '/api/v1/tasks/1', headers: { authorization: `Bearer ${TOKENS.ada}` } });
  t.equal(read.headers['etag'], `"task-1-plan-${version}"`);
  service.close();
});

t.test('RESTORE: a backup copy put in place of the database moves every workspace version past those issued since the copy, so an ETag kept from before the restore is stale (412), not a 304 or a write over another state', async (t) => {
  const dir = t.testdir();
  const source = sourceIn(dir);
  const copy = join(dir, 'backups', 'copy.sqlite');
  const clock = manualClock(TEST_NOW);
  const call = (service: Service, method: string, url: string, headers: Record<string, string> = {}, body?: unknown) =>
    service.handle({
      method, url: `/api/v1${url}`, body: body === undefined ? undefined : JSON.stringify(body),
      headers: { authorization: `Bearer ${TOKENS.ada}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    }) as Promise<ServiceResponse>;
  const etagOf = async (service: Service, id: number) => (await call(service, 'GET', `/tasks/${id}`)).headers['etag'] as string;

  const before = createService({ db: source, clock });
  const copied = await etagOf(before, 1);
  await backupDatabase(source, copy);
  const patched = await call(before, 'PATCH', '/tasks/1', { 'if-match': copied }, { title: 'Written after the backup' });
  t.equal(patched.status, 204);
  const kept = patched.headers['etag'] as string;
  before.close();

  // A plain restart changes no version: the ETag an agent kept is still current.
  const restarted = createService({ db: source, clock });
  t.equal(await etagOf(restarted, 1), kept, 'a restart keeps the versions');
  restarted.close();

  // The README's restore: the server stopped, -wal and -shm deleted, the copy put in place.
  for (const file of [source, `${source}-wal`, `${source}-shm`]) rmSync(file, { force: true });
  copyFileSync(copy, source);
  const restored = createService({ db: source, clock });
  const note = await call(restored, 'POST', '/tasks/2/notes', { 'if-match': await etagOf(restored, 2) }, { text: 'the first write after the restore' });
  t.equal(note.status, 204);
  const version = (etag: string) => Number(/-plan-(\d+)"$/.exec(etag)?.[1]);
  t.ok(version(await etagOf(restored, 1)) > version(kept), 'the version is past every one issued before the restore');
  const conditional = await call(restored, 'GET', '/tasks/1', { 'if-none-match': kept });
  t.equal(conditional.status, 200, 'the kept ETag does not give 304: the task is the backup\'s again');
  t.not(JSON.parse(conditional.body ?? '{}').title, 'Written after the backup');
  const stale = await call(restored, 'PATCH', '/tasks/1', { 'if-match': kept }, { title: 'Over a state never read' });
  t.equal(stale.status, 412, 'a write with the kept ETag is refused');
  restored.close();

  // An organisation the copy does not hold (loaded after the backup, say, and loaded again now)
  // starts from the restore's floor, not from 1, where its lost ETags began.
  const db = new Database(source);
  const { version_floor: floor } = db.prepare('SELECT version_floor FROM restores').get() as { version_floor: number };
  t.ok(floor > version(kept), 'the floor is recorded');
  loadFixture(db, { organisations: [{ id: 7, name: 'Loaded after the restore' }] });
  t.ok((db.prepare('SELECT workspace_version AS v FROM organisations WHERE id = 7').get() as { v: number }).v > floor, 'a new organisation starts above it');
  t.equal(db.pragma('application_id', { simple: true }), 0, 'the copy\'s mark is gone');
  db.close();
  // The mark the README gives for marking a copy made another way is the one backup sets.
  t.match(readFileSync(new URL('../../README.md', import.meta.url), 'utf8'), `PRAGMA application_id = ${BACKUP_COPY_ID}'`);

  // The restore took the copy's mark away: the next start moves nothing.
  const current = await (async () => {
    const again = createService({ db: source, clock });
    const etag = await etagOf(again, 1);
    again.close();
    return etag;
  })();
  const last = createService({ db: source, clock });
  t.equal(await etagOf(last, 1), current, 'later restarts keep the versions again');
  last.close();
});

t.test('RESTORE: a copy two processes open at once moves its versions once: the mark is looked at again under the write lock', async (t) => {
  const dir = t.testdir();
  const copy = join(dir, 'copy.sqlite');
  await backupDatabase(sourceIn(dir), copy);
  const first = new Database(copy);
  const second = new Database(copy);
  // Both saw the mark before either moved the versions.
  t.equal(first.pragma('application_id', { simple: true }), BACKUP_COPY_ID);
  t.equal(second.pragma('application_id', { simple: true }), BACKUP_COPY_ID);
  moveVersionsPastRestore(first, Date.parse(TEST_NOW));
  const moved = (first.prepare('SELECT workspace_version AS v FROM organisations WHERE id = 1').get() as { v: number }).v;
  moveVersionsPastRestore(second, Date.parse(TEST_NOW) + 1000);
  t.equal((second.prepare('SELECT workspace_version AS v FROM organisations WHERE id = 1').get() as { v: number }).v, moved, 'moved once');
  t.equal((second.prepare('SELECT count(*) AS n FROM restores').get() as { n: number }).n, 1, 'one restore recorded');
  first.close();
  second.close();
});
