import t, { type Test } from 'tap';
import Database from 'better-sqlite3';
import { createService } from '../../lib/service.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { manualClock } from '../../lib/time/clock.js';
import { adaWorld, API, etagOf, workspaceVersion } from '../helpers/api.js';
import { baseFixture, TEST_NOW, TOKENS } from '../helpers/fixture.js';
import { harness, type CallResult, type Harness } from '../helpers/service.js';
import type { SourceProvider } from '../../lib/sources/provider.js';
import { expectProblem } from '../helpers/expect-problem.js';

/**
 * Some SQLite failures (an I/O error, a full disk) roll back the whole transaction, whichever
 * statement met them: a write's own, or one run beside the batch's writes (a target check, a
 * claim's plan). The batch is then gone with every write that joined it, and nothing decided
 * inside it may be answered or remembered as if it had happened.
 */

type StatementMethod = 'get' | 'run' | 'all';

/**
 * Makes the next call of `method` on a statement of `db` whose SQL matches `sql` (and whose first
 * argument passes `when`) fail as SQLite fails on an I/O error: the transaction is rolled back and
 * SQLITE_IOERR is thrown. Once only; undone at the end of the test.
 */
function failOnce(t: Test, db: Database.Database, method: StatementMethod, sql: RegExp, when: (arg: unknown) => boolean = () => true): { fired: () => boolean } {
  const prototype = Object.getPrototypeOf(db.prepare('SELECT 1')) as Record<StatementMethod, (...args: unknown[]) => unknown>;
  const original = prototype[method];
  let fired = false;
  prototype[method] = function (this: Database.Statement, ...args: unknown[]) {
    if (!fired && this.database === db && sql.test(this.source) && when(args[0])) {
      fired = true;
      if (db.inTransaction) db.exec('ROLLBACK');
      throw new Database.SqliteError('disk I/O error', 'SQLITE_IOERR');
    }
    return original.apply(this, args);
  };
  t.teardown(() => {
    prototype[method] = original;
  });
  return { fired: () => fired };
}

const note = (text: string, etag: string) => ({ headers: { 'if-match': etag }, body: { text } });
const notesOf = (h: Harness, taskId: number) => h.db.prepare('SELECT text FROM notes WHERE task_id = ?').pluck().all(taskId);
const unexpected = (h: Harness) => h.errors.filter((entry) => entry['message'] === 'unexpected error');

t.test('GROUP COMMIT: an I/O error in a target check beside the batch fails the whole batch 503; a write after it in the same turn starts a new batch and is answered as kept', async (t) => {
  const h = adaWorld();
  const [one, three, five] = [await etagOf(h, 1), await etagOf(h, 3), await etagOf(h, 5)];
  const version = workspaceVersion(h);
  const fault = failOnce(t, h.db, 'get', /AS organisationId,\s+EXISTS/, (arg) => (arg as { id?: number } | undefined)?.id === 3);
  const [first, failing, after] = await Promise.all([
    h.call('POST', `${API}/tasks/1/notes`, note('first', one)),
    h.call('POST', `${API}/tasks/3/notes`, note('failing', three)),
    h.call('POST', `${API}/tasks/5/notes`, note('after', five)),
  ]);
  t.ok(fault.fired(), 'the target check of task 3 met the I/O error');
  expectProblem(t, failing, 'temporarily_unavailable', 'the write whose check failed');
  expectProblem(t, first, 'temporarily_unavailable', 'the write of the batch SQLite rolled back');
  t.strictSame(notesOf(h, 1), [], 'and it is not kept');
  t.equal(after.status, 204, 'the write after the failure is applied');
  t.strictSame(notesOf(h, 5), ['after'], 'once, in a batch of its own');
  t.equal(workspaceVersion(h), version + 1, 'one version step: the one write kept');
  t.strictSame(unexpected(h), [], 'no 500');
  t.notOk(h.db.inTransaction, 'no batch is left open');
});

t.test('GROUP COMMIT: an I/O error in a statement beside the batch, with no write after it, fails the batch 503 at its commit, not 500', async (t) => {
  const h = adaWorld();
  const [one, three] = [await etagOf(h, 1), await etagOf(h, 3)];
  const version = workspaceVersion(h);
  failOnce(t, h.db, 'get', /AS organisationId,\s+EXISTS/, (arg) => (arg as { id?: number } | undefined)?.id === 3);
  const [first, failing] = await Promise.all([
    h.call('POST', `${API}/tasks/1/notes`, note('first', one)),
    h.call('POST', `${API}/tasks/3/notes`, note('failing', three)),
  ]);
  expectProblem(t, first, 'temporarily_unavailable', 'the write of the lost batch');
  expectProblem(t, failing, 'temporarily_unavailable', 'the write whose check failed');
  t.ok(h.errors.some((entry) => entry['message'] === 'database transaction rolled back'), 'the operator is told what happened');
  t.strictSame(unexpected(h), [], 'no 500');
  t.equal(workspaceVersion(h), version, 'nothing kept');
  t.equal((await h.call('POST', `${API}/tasks/1/notes`, note('again', one))).status, 204, 'the next write is applied');
});

t.test('GROUP COMMIT: refusals decided inside a batch that SQLite then rolls back are answered 503, not with what the batch showed (a 412 naming its version, a conflict with its receipt)', async (t) => {
  const h = adaWorld();
  const one = await etagOf(h, 1);
  const version = workspaceVersion(h);
  failOnce(t, h.db, 'run', /INSERT INTO notes/);
  const keyed = (title: string) => ({ headers: { 'if-match': one, 'idempotency-key': 'k-1' }, body: { title } });
  const [written, stale, conflict, failing] = await Promise.all([
    h.call('PATCH', `${API}/tasks/1`, keyed('Renamed')),
    // Decided on the batch's rows: the version the PATCH above made, and the receipt it stored.
    h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': one }, body: { title: 'Stale' } }),
    h.call('PATCH', `${API}/tasks/1`, keyed('Other')),
    // Current inside the batch, which the PATCH above moved on by one step.
    h.call('POST', `${API}/tasks/3/notes`, note('failing', `"task-3-plan-${version + 1}"`)),
  ]);
  expectProblem(t, failing, 'temporarily_unavailable', 'the write that met the I/O error');
  expectProblem(t, written, 'temporarily_unavailable', 'the write the rollback took back');
  expectProblem(t, stale, 'temporarily_unavailable', 'no 412 naming a version that never happened');
  t.equal(stale.headers['etag'], undefined, 'and no ETag of it');
  expectProblem(t, conflict, 'temporarily_unavailable', 'no 409 for a receipt that was never kept');
  t.strictSame([...new Set(h.errors.map((entry) => entry['message']))], ['database I/O error'], 'only the failure is logged, not the refusals it withdrew');
  t.equal(workspaceVersion(h), version, 'nothing kept');
  const retried = await h.call('PATCH', `${API}/tasks/1`, keyed('Other'));
  t.equal(retried.status, 204, 'the key is free: a resend applies');
  t.equal(retried.headers['idempotent-replayed'], undefined);
  t.strictSame(unexpected(h), [], 'no 500');
});

t.test('GROUP COMMIT: a batch of refusals alone whose commit fails answers 503, and its failure is logged once', async (t) => {
  const h = adaWorld();
  const stale = `"task-1-plan-${workspaceVersion(h) - 1}"`;
  failOnce(t, h.db, 'run', /^COMMIT$/);
  const answers = await Promise.all([1, 2].map((n) => h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': stale }, body: { title: `Stale ${n}` } })));
  for (const answer of answers) expectProblem(t, answer, 'temporarily_unavailable', 'a 412 of the lost batch');
  t.strictSame(h.errors.map((entry) => entry['message']), ['database I/O error'], 'the failure, once');
});

t.test('GROUP COMMIT: a refusal beside the write whose own failure ended the batch is 503, the failure logged once, by that write', async (t) => {
  const h = adaWorld();
  const version = workspaceVersion(h);
  const three = await etagOf(h, 3);
  failOnce(t, h.db, 'run', /INSERT INTO notes/);
  const [stale, failing] = await Promise.all([
    h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': `"task-1-plan-${version - 1}"` }, body: { title: 'Stale' } }),
    h.call('POST', `${API}/tasks/3/notes`, note('failing', three)),
  ]);
  expectProblem(t, stale, 'temporarily_unavailable', 'the 412 of the lost batch');
  expectProblem(t, failing, 'temporarily_unavailable', 'the write that met the failure');
  t.strictSame(h.errors.map((entry) => entry['message']), ['database I/O error'], 'once');
});

t.test('GROUP COMMIT: a refusal decided inside a batch that commits is answered as decided, after the commit', async (t) => {
  const h = adaWorld();
  const one = await etagOf(h, 1);
  const [written, stale] = await Promise.all([
    h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': one }, body: { title: 'Renamed' } }),
    h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': one }, body: { title: 'Stale' } }),
  ]);
  t.equal(written.status, 204);
  expectProblem(t, stale, 'stale_update', 'the 412 stands');
  t.equal(stale.headers['etag'], written.headers['etag'], 'naming the version the batch committed');
});

t.test('PLANS: a plan read inside a batch that is rolled back is not kept, though the next commit brings the workspace version to the same number', async (t) => {
  const h = adaWorld();
  const offered = async () => (await h.call('GET', `${API}/tasks/available`)).json.map((task: { id: number }) => task.id);
  const before = await offered();
  t.ok(before.includes(3) && before.includes(1), 'tasks 1 and 3 are offered');
  const version = workspaceVersion(h);
  const three = await etagOf(h, 3);
  // One batch: task 3 set waiting (the version moves on), then a claim of task 1 plans at that version.
  const waiting = h.call('PATCH', `${API}/tasks/3`, { headers: { 'if-match': three }, body: { isWaiting: true } });
  const claim = h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': `"task-1-plan-${version + 1}"`, 'idempotency-key': 'c-1' } });
  failOnce(t, h.db, 'run', /^COMMIT$/);
  const [waitingAnswer, claimAnswer] = await Promise.all([waiting, claim]);
  expectProblem(t, waitingAnswer, 'temporarily_unavailable', 'the commit failed');
  expectProblem(t, claimAnswer, 'temporarily_unavailable', 'the claim, which planned inside the batch, went with it');
  t.equal(workspaceVersion(h), version, 'nothing kept');
  // An unrelated write brings the version to the number the lost batch had reached.
  t.equal((await h.call('POST', `${API}/tasks/4/notes`, note('unrelated', await etagOf(h, 4)))).status, 204);
  t.equal(workspaceVersion(h), version + 1);
  t.strictSame(await offered(), before, 'the offer is as before: task 3 was never set waiting');
  const claimed = await h.call('POST', `${API}/tasks/3/claim`, { headers: { 'if-match': await etagOf(h, 3), 'idempotency-key': 'c-3' } });
  t.equal(claimed.status, 200, `and task 3 can be claimed: ${claimed.text ?? ''}`);
});

t.test('PLANS: a plan read in a read transaction is kept: offers at the same version plan once', async (t) => {
  let plans = 0;
  const db = new Database(':memory:', { verbose: (sql) => { if (String(sql).includes('AS assigneeCount')) plans += 1; } });
  const clock = manualClock(TEST_NOW);
  loadFixture(db, baseFixture(), { now: clock.now() });
  const service = createService({ db, clock });
  t.teardown(() => service.close());
  const offer = async (token: string) => (await service.handle({ method: 'GET', url: `${API}/tasks/available`, headers: { authorization: `Bearer ${token}` } })).status;
  t.equal(await offer(TOKENS.ada), 200);
  t.equal(plans, 1, 'the offer plans');
  // Another client of the same worker, with other scopes: its own cached answer, the same plan.
  t.equal(await offer(TOKENS.readOnly), 200);
  t.equal(plans, 1, 'the next offer at the same version reuses the plan');
});

/** Ada's world with task 1 linked to a tracker item whose refresh answers at once. */
function linkedWorld(): Harness {
  const provider: SourceProvider = {
    refresh: () => ({ title: 'Ticket', description: null, businessStatus: 'open' }),
    publish: async () => ({ ref: 'r' }),
  };
  const fixture = baseFixture();
  fixture.tasks[0]!['sources'] = [{ providerKey: 'tracker', itemId: 'T-1' }];
  return harness({ fixture, defaultToken: TOKENS.ada, serviceOptions: { sources: { tracker: provider } } });
}

t.test('SOURCES: a list that waited for its linked sources reads once no batch is open, so a batch opened meanwhile and then rolled back takes nothing from it', async (t) => {
  const h = linkedWorld();
  t.teardown(() => h.service.close());
  const etag = await etagOf(h, 1);
  // As the refresh records its result, a write is queued to arrive before the list goes on: it
  // opens a batch that sets task 1 waiting, and that batch's commit fails.
  let patched: Promise<CallResult> | undefined;
  const prototype = Object.getPrototypeOf(h.db.prepare('SELECT 1')) as { run: (...args: unknown[]) => unknown };
  const run = prototype.run;
  prototype.run = function (this: Database.Statement, ...args: unknown[]) {
    if (patched === undefined && this.database === h.db && this.source.includes('last_success_utc')) {
      patched = Promise.resolve().then(() => {
        const answer = h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': etag }, body: { isWaiting: true } });
        failOnce(t, h.db, 'run', /^COMMIT$/);
        return answer;
      });
    }
    return run.apply(this, args);
  };
  t.teardown(() => {
    prototype.run = run;
  });
  const listed = await h.call('GET', `${API}/tasks/available`);
  t.ok(patched !== undefined, 'the write arrived while the list waited');
  expectProblem(t, await patched!, 'temporarily_unavailable', "the write's batch was rolled back at its commit");
  t.equal(listed.status, 200, 'the list is answered');
  t.ok(listed.json.some((task: { id: number }) => task.id === 1), 'and shows task 1, which never became waiting');
});

t.test('SOURCES: a list waiting for a batch when the service closes is answered 503 and runs nothing more on the connection', async (t) => {
  const h = linkedWorld();
  const etag = await etagOf(h, 1);
  const prototype = Object.getPrototypeOf(h.db.prepare('SELECT 1')) as Record<'run' | 'get' | 'all', (...args: unknown[]) => unknown>;
  const originals = { run: prototype.run, get: prototype.get, all: prototype.all };
  let closed = false;
  const afterClose: string[] = [];
  let patched: Promise<CallResult> | undefined;
  for (const method of ['run', 'get', 'all'] as const) {
    prototype[method] = function (this: Database.Statement, ...args: unknown[]) {
      if (this.database === h.db) {
        if (closed) afterClose.push(this.source);
        // As the refresh records its result, a write opens a batch, and the service is closed.
        if (patched === undefined && this.source.includes('last_success_utc')) {
          patched = Promise.resolve().then(() => {
            const answer = h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': etag }, body: { isWaiting: true } });
            h.service.close();
            closed = true;
            return answer;
          });
        }
      }
      return originals[method].apply(this, args);
    };
  }
  t.teardown(() => Object.assign(prototype, originals));
  const listed = await h.call('GET', `${API}/tasks/available`);
  expectProblem(t, listed, 'temporarily_unavailable', 'the list');
  t.equal(listed.headers['retry-after'], '1');
  expectProblem(t, await patched!, 'temporarily_unavailable', 'the write close() rolled back');
  t.strictSame(afterClose, [], 'no statement ran after close()');
});
