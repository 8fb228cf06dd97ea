import t from 'tap';
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createService } from '../../lib/service.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { manualClock } from '../../lib/time/clock.js';
import { ResponseCache } from '../../lib/http/response-cache.js';
import { adaWorld, API, bumpVersion, readTask, type TapTest } from '../helpers/api.js';
import { baseFixture, TEST_NOW, TOKENS } from '../helpers/fixture.js';
import type { Harness } from '../helpers/service.js';

/**
 * Rendered task reads and verified credentials are kept in memory (README, Performance). Each
 * test here changes something a cached answer depends on, by a path the API does not see (SQL on
 * the service's connection or on another one, a rollback, the clock alone), and checks that the
 * very next request sees it. Each would fail if the cache served the earlier answer.
 */

const ids = (list: { id: number }[]) => list.map((task) => task.id);

async function availableIds(h: Harness): Promise<number[]> {
  const response = await h.call('GET', `${API}/tasks/available`);
  if (response.status !== 200) throw new Error(`available answered ${response.status}`);
  return ids(response.json);
}

/** A service on a database file, and a second connection to the same file (another process, say). */
function fileWorld(t: TapTest) {
  const dir = mkdtempSync(join(tmpdir(), 'wta-cache-'));
  const path = join(dir, 'service.db');
  const clock = manualClock(TEST_NOW);
  const seed = new Database(path);
  loadFixture(seed, baseFixture(), { now: clock.now() });
  seed.close();
  const service = createService({ db: path, clock, rateLimit: 100_000 });
  const other = new Database(path);
  t.teardown(() => {
    other.close();
    service.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const get = async (url: string, token: string = TOKENS.ada) => {
    const response = await service.handle({ method: 'GET', url: `${API}${url}`, headers: { authorization: `Bearer ${token}` } });
    return { status: response.status, json: response.body === undefined ? undefined : JSON.parse(response.body) };
  };
  return { other, get };
}

t.test('READ CACHE: a task changed by another connection shows on the next GET /tasks/{id}', async (t) => {
  const { other, get } = fileWorld(t);
  t.equal((await get('/tasks/1')).json.title, 'Write copy');
  t.equal((await get('/tasks/1')).json.title, 'Write copy', 'read twice (the second from the cache)');
  other.prepare("UPDATE tasks SET title = 'Renamed elsewhere' WHERE id = 1").run();
  t.equal((await get('/tasks/1')).json.title, 'Renamed elsewhere');
});

t.test('READ CACHE: a client revoked by another connection is refused on its very next request', async (t) => {
  const { other, get } = fileWorld(t);
  t.equal((await get('/identity')).status, 200);
  t.equal((await get('/identity')).status, 200, 'verified twice (the second from memory)');
  other.prepare('UPDATE api_clients SET is_active = 0 WHERE id = 100').run();
  t.equal((await get('/identity')).status, 401);
});

t.test('READ CACHE: a scope, a sponsor or an organisation withdrawn with SQL takes effect on the next request', async (t) => {
  const h = adaWorld();
  t.equal((await h.call('GET', `${API}/tasks/1`)).status, 200);
  h.db.prepare("DELETE FROM api_client_scopes WHERE client_id = 100 AND scope = 'tasks:read'").run();
  t.equal((await h.call('GET', `${API}/tasks/1`)).status, 403, 'scope removed');

  t.equal((await h.call('GET', `${API}/identity`, { token: TOKENS.bob })).status, 200);
  h.db.prepare('UPDATE staff SET is_active = 0 WHERE id = 11').run();
  t.equal((await h.call('GET', `${API}/identity`, { token: TOKENS.bob })).status, 401, 'sponsor deactivated');

  t.equal((await h.call('GET', `${API}/identity`, { token: TOKENS.otherOrg })).status, 200);
  h.db.prepare('UPDATE organisations SET is_active = 0 WHERE id = 2').run();
  t.equal((await h.call('GET', `${API}/identity`, { token: TOKENS.otherOrg })).status, 401, 'organisation deactivated');
});

t.test('READ CACHE: credentials seen inside a transaction that changed them are forgotten with its rollback', async (t) => {
  const h = adaWorld();
  const scopes = async () => (await h.call('GET', `${API}/identity`, { token: TOKENS.readOnly })).json.scopes;
  t.strictSame(await scopes(), ['tasks:read']);
  h.db.exec('BEGIN IMMEDIATE');
  h.db.prepare("INSERT INTO api_client_scopes (client_id, scope) VALUES (101, 'tasks:update')").run();
  t.strictSame(await scopes(), ['tasks:read', 'tasks:update'], 'the open transaction is visible on its own connection');
  h.db.exec('ROLLBACK');
  // Moves the credential generation to the number the rolled-back transaction had reached.
  h.db.prepare("UPDATE api_clients SET name = 'renamed' WHERE id = 103").run();
  t.strictSame(await scopes(), ['tasks:read']);
});

t.test('READ CACHE: a task reassigned or deleted with SQL is refused on the next read', async (t) => {
  const h = adaWorld();
  t.equal((await h.call('GET', `${API}/tasks/3`)).status, 200);
  h.db.prepare('UPDATE task_assignments SET staff_id = 12 WHERE task_id = 3').run();
  t.equal((await h.call('GET', `${API}/tasks/3`)).status, 403, 'now assigned only to Bob');
  t.equal((await h.call('GET', `${API}/tasks/3`, { token: TOKENS.bob })).status, 200, 'and readable by Bob');
  h.db.prepare('DELETE FROM tasks WHERE id = 3').run();
  t.equal((await h.call('GET', `${API}/tasks/3`, { token: TOKENS.bob })).status, 404, 'gone');
});

t.test('READ CACHE: what a transaction showed before it rolled back is never served afterwards', async (t) => {
  const h = adaWorld();
  t.equal((await readTask(h, 1)).title, 'Write copy');
  h.db.exec('BEGIN IMMEDIATE');
  h.db.prepare("UPDATE tasks SET title = 'Uncommitted' WHERE id = 1").run();
  t.equal((await readTask(h, 1)).title, 'Uncommitted', 'the open transaction is visible on its own connection');
  h.db.exec('ROLLBACK');
  t.equal((await readTask(h, 1)).title, 'Write copy');
});

t.test('READ CACHE: remainingMinutes of a started task drops with each whole working minute', async (t) => {
  const h = adaWorld();
  h.db.prepare("UPDATE tasks SET status = 'InProgress', started_at_local = '2026-11-16T09:30:00' WHERE id = 1").run();
  bumpVersion(h);
  t.equal((await readTask(h, 1)).remainingMinutes, 90, '30 of 120 minutes elapsed at 10:00');
  h.clock.advance(59_999);
  t.equal((await readTask(h, 1)).remainingMinutes, 90, 'still 90 at 10:00:59.999');
  h.clock.advance(1);
  t.equal((await readTask(h, 1)).remainingMinutes, 89, '89 at 10:01');
  h.clock.advance(30 * 60_000);
  t.equal((await readTask(h, 1)).remainingMinutes, 59, '59 at 10:31');
});

t.test('READ CACHE: a leased task rejoins /tasks/available the instant its lease expires', async (t) => {
  const h = adaWorld();
  t.notOk((await availableIds(h)).includes(11), 'task 11 is leased until 10:10');
  h.clock.set(Date.parse('2026-11-16T10:09:59.999Z'));
  t.notOk((await availableIds(h)).includes(11), 'still leased a millisecond before');
  h.clock.set(Date.parse('2026-11-16T10:10:00.000Z'));
  t.ok((await availableIds(h)).includes(11), 'offered at 10:10:00.000');
});

t.test('READ CACHE: a task joins /tasks/available the instant its earliestStart arrives', async (t) => {
  const h = adaWorld();
  // Sooner than the plan's own minute of validity, so only the start time can end the cached list.
  h.db.prepare("UPDATE tasks SET earliest_start_local = '2026-11-16T10:00:30' WHERE id = 9").run();
  bumpVersion(h);
  t.notOk((await availableIds(h)).includes(9), 'not offered before 10:00:30');
  h.clock.set(Date.parse('2026-11-16T10:00:29.999Z'));
  t.notOk((await availableIds(h)).includes(9), 'not offered a millisecond before');
  h.clock.set(Date.parse('2026-11-16T10:00:30.000Z'));
  t.ok((await availableIds(h)).includes(9), 'offered at 10:00:30');
});

t.test('READ CACHE: a clock set back never gets an answer computed for a later instant', async (t) => {
  const h = adaWorld();
  h.clock.set(Date.parse('2026-11-16T10:10:00.000Z'));
  t.ok((await availableIds(h)).includes(11), 'offered once the lease has expired');
  h.clock.set(Date.parse('2026-11-16T10:05:00.000Z'));
  t.notOk((await availableIds(h)).includes(11), 'leased again at 10:05');
});

t.test('READ CACHE: readers with different scopes or resources never share an answer', async (t) => {
  const h = adaWorld();
  h.db.prepare(`INSERT INTO notes (task_id, client_id, staff_id, text, created_utc) VALUES (4, 100, 10, 'by Ada', ?)`).run(h.clock.now());
  const ada = await h.call('GET', `${API}/tasks/4`);
  const bob = await h.call('GET', `${API}/tasks/4`, { token: TOKENS.bob });
  t.equal(ada.status, 200);
  t.equal(bob.status, 200);
  t.equal(ada.json.remainingMinutes, bob.json.remainingMinutes, 'the same shared task');
  t.equal((await h.call('GET', `${API}/tasks/4`, { token: TOKENS.readOnly })).status, 200);
  t.equal((await h.call('GET', `${API}/tasks/7`, { token: TOKENS.readOnly })).status, 403, 'ownership is still checked for every reader');
});

t.test('ResponseCache: holds an answer only for its epoch and its [from, until) interval', async (t) => {
  const cache = new ResponseCache();
  const epoch = { changes: 1, dataVersion: 1, credentials: 0 };
  cache.set('k', epoch, 1000, 2000, { body: '"a"' });
  t.equal(cache.get('k', epoch, 999)?.body, undefined, 'before it was read');
  cache.set('k', epoch, 1000, 2000, { body: '"a"' });
  t.equal(cache.get('k', epoch, 1999)?.body, '"a"');
  t.equal(cache.get('k', epoch, 2000), undefined, 'until is exclusive');
  cache.set('k', epoch, 1000, 2000, { body: '"a"' });
  t.equal(cache.get('k', { ...epoch, changes: 2 }, 1500), undefined, 'a write on this connection');
  cache.set('k', epoch, 1000, 2000, { body: '"a"' });
  t.equal(cache.get('k', { ...epoch, dataVersion: 2 }, 1500), undefined, 'a commit by another connection');
  cache.set('k', epoch, 1000, 1000, { body: '"a"' });
  t.equal(cache.size, 0, 'an answer valid for no time is not kept');
});

t.test('ResponseCache: total size stays within its bound, the oldest answers going first', async (t) => {
  const cache = new ResponseCache(100);
  const epoch = { changes: 1, dataVersion: 1, credentials: 0 };
  for (let index = 0; index < 10; index += 1) cache.set(`k${index}`, epoch, 0, Number.POSITIVE_INFINITY, { body: 'x'.repeat(30) });
  t.equal(cache.size, 3, 'three 30-character answers fit in 100');
  t.equal(cache.get('k9', epoch, 1)?.body.length, 30, 'the newest is kept');
  t.equal(cache.get('k0', epoch, 1), undefined, 'the oldest went first');
  cache.set('huge', epoch, 0, Number.POSITIVE_INFINITY, { body: 'x'.repeat(101) });
  t.equal(cache.get('huge', epoch, 1), undefined, 'an answer larger than the whole bound is not kept');
});
