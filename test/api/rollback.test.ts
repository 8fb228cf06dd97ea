import t from 'tap';
import { harness, type Harness } from '../helpers/service.js';
import { TOKENS } from '../helpers/fixture.js';
import { API, etagOf, LEASE_11, workspaceVersion, type TapTest } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';

/**
 * No write path can leave a partial change: a step that fails late inside the transaction (made
 * to fail here by a SQLite trigger) rolls back every earlier step, the version bump and the receipt.
 */

function receipts(h: Harness): { key: string }[] {
  return h.db.prepare('SELECT key FROM idempotency_receipts ORDER BY key').all() as { key: string }[];
}

function failOn(h: Harness, when: 'INSERT' | 'UPDATE' | 'DELETE', table: string): () => void {
  h.db.exec(`CREATE TRIGGER fail BEFORE ${when} ON ${table} BEGIN SELECT RAISE(ABORT, 'boom'); END`);
  return () => h.db.exec('DROP TRIGGER fail');
}

/** Everything a write could have touched, to compare before and after a failed one. */
function snapshot(h: Harness): unknown {
  const all = (sql: string) => h.db.prepare(sql).all();
  return {
    tasks: all('SELECT * FROM tasks ORDER BY id'),
    dependencies: all('SELECT * FROM task_dependencies ORDER BY task_id, prerequisite_id'),
    intervals: all('SELECT * FROM actual_intervals ORDER BY id'),
    notes: all('SELECT * FROM notes ORDER BY id'),
    claims: all('SELECT * FROM claims ORDER BY id'),
    receipts: all('SELECT * FROM idempotency_receipts ORDER BY key'),
    organisations: all('SELECT * FROM organisations ORDER BY id'),
  };
}

function expectInternalError(t: TapTest, h: Harness, response: Parameters<typeof expectProblem>[1], what: string): void {
  expectProblem(t, response, 'internal_error', what);
  t.notMatch(response.text ?? '', /boom/, `${what}: no diagnostics in the body`);
  t.ok(h.errors.some((entry) => String(entry['error']).includes('boom')), `${what}: the cause is logged`);
}

t.test('ROLLBACK: a PATCH whose dependency insert fails changes nothing: title, old dependencies, version, receipt', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const etag = await etagOf(h, 2);
  const before = snapshot(h);
  const version = workspaceVersion(h);
  const restore = failOn(h, 'INSERT', 'task_dependencies');
  const send = () => h.call('PATCH', `${API}/tasks/2`, { headers: { 'if-match': etag, 'idempotency-key': 'patch-1' }, body: { title: 'Renamed', dependencyIds: [3] } });
  expectInternalError(t, h, await send(), 'failing dependency insert');
  t.strictSame(snapshot(h), before, 'no row of any table changed');
  const task = (await h.call('GET', `${API}/tasks/2`)).json;
  t.equal(task.title, 'Review copy', 'title unchanged');
  t.strictSame(task.dependencies.map((d: { taskId: number }) => d.taskId), [1], 'the deleted dependency is back');
  t.equal(workspaceVersion(h), version, 'version unchanged');
  t.strictSame(receipts(h), [], 'no receipt');

  restore();
  const retry = await send();
  t.equal(retry.status, 204, 'the same key applies the change once the trigger is gone');
  t.equal(retry.headers['idempotent-replayed'], undefined, 'a first application, not a replay');
  const after = (await h.call('GET', `${API}/tasks/2`)).json;
  t.equal(after.title, 'Renamed');
  t.strictSame(after.dependencies.map((d: { taskId: number }) => d.taskId), [3]);
  t.equal(workspaceVersion(h), version + 1, 'bumped once');
  const replay = await send();
  t.equal(replay.headers['idempotent-replayed'], 'true');
  t.equal(workspaceVersion(h), version + 1);
});

t.test('ROLLBACK: a claim whose lease insert fails creates no lease, no version bump and no receipt', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const etag = await etagOf(h, 1);
  const before = snapshot(h);
  const restore = failOn(h, 'INSERT', 'claims');
  const send = () => h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': etag, 'idempotency-key': 'claim-1' } });
  expectInternalError(t, h, await send(), 'failing lease insert');
  t.strictSame(snapshot(h), before, 'nothing changed');
  restore();
  const retry = await send();
  t.equal(retry.status, 200);
  t.equal(retry.headers['idempotent-replayed'], undefined);
  const leases = h.db.prepare('SELECT token FROM claims WHERE task_id = 1').all() as { token: string }[];
  t.strictSame(leases, [{ token: retry.json.token }], 'exactly one lease, the retried one');
  const replay = await send();
  t.strictSame(replay.json, retry.json, 'and the key now replays it');
});

t.test('ROLLBACK: an effort replacement whose insert fails after deleting the caller\'s intervals keeps the old intervals', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const etag = await etagOf(h, 6);
  const old = (await h.call('GET', `${API}/tasks/6`)).json.actualIntervals;
  t.equal(old.length, 1, 'task 6 has one interval of Ada');
  const before = snapshot(h);
  const restore = failOn(h, 'INSERT', 'actual_intervals');
  const body = { actualIntervals: [{ staffMemberId: 10, start: '2026-11-03T09:00:00', end: '2026-11-03T11:00:00' }] };
  const send = () => h.call('PUT', `${API}/tasks/6/actual-effort`, { headers: { 'if-match': etag, 'idempotency-key': 'effort-1' }, body });
  expectInternalError(t, h, await send(), 'failing interval insert');
  t.strictSame(snapshot(h), before, 'nothing changed');
  t.strictSame((await h.call('GET', `${API}/tasks/6`)).json.actualIntervals, old, 'the old intervals are still there');
  restore();
  t.equal((await send()).status, 204);
  t.strictSame((await h.call('GET', `${API}/tasks/6`)).json.actualIntervals, [{ staffMemberId: 10, start: '2026-11-03T09:00:00', end: '2026-11-03T11:00:00' }]);
});

t.test('ROLLBACK: a renewal or release whose lease update fails leaves the lease as it was', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const before = snapshot(h);
  const restore = failOn(h, 'UPDATE', 'claims');
  for (const action of ['renew', 'release']) {
    const response = await h.call('POST', `${API}/tasks/11/claim/${action}`, { headers: { 'if-match': await etagOf(h, 11), 'idempotency-key': action }, body: { token: LEASE_11 } });
    expectInternalError(t, h, response, `failing ${action}`);
  }
  t.strictSame(snapshot(h), before, 'nothing changed');
  restore();
});

t.test('ROLLBACK: a failing version bump or receipt store undoes the use case (a note is not left behind)', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const before = snapshot(h);
  let restore = failOn(h, 'UPDATE', 'organisations');
  const note = async (key: string) => h.call('POST', `${API}/tasks/1/notes`, { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': key }, body: { text: 'late failure' } });
  expectInternalError(t, h, await note('n1'), 'failing version bump');
  t.strictSame(snapshot(h), before, 'no note, no receipt');
  restore();
  restore = failOn(h, 'INSERT', 'idempotency_receipts');
  expectInternalError(t, h, await note('n2'), 'failing receipt insert');
  t.strictSame(snapshot(h), before, 'no note, no version bump');
  restore();
  t.equal((await note('n2')).status, 204);
  t.equal((h.db.prepare('SELECT count(*) AS n FROM notes WHERE task_id = 1').get() as { n: number }).n, 1, 'exactly one note in the end');
});

t.test('ROLLBACK: a failed write also keeps the expired receipts its purge deleted', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  t.equal((await h.call('POST', `${API}/tasks/1/notes`, { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': 'old' }, body: { text: 'a' } })).status, 204);
  h.clock.advance(24 * 60 * 60 * 1000 + 1);
  const restore = failOn(h, 'INSERT', 'notes');
  expectInternalError(t, h, await h.call('POST', `${API}/tasks/1/notes`, { headers: { 'if-match': await etagOf(h, 1) }, body: { text: 'b' } }), 'failing note');
  t.strictSame(receipts(h), [{ key: 'old' }], 'the purge was rolled back with the rest');
  restore();
});
