import t from 'tap';
import { adaWorld, API, etagOf } from '../helpers/api.js';
import type { CallResult, Harness } from '../helpers/service.js';
import { expectProblem } from '../helpers/expect-problem.js';

/**
 * Writes that arrive together share one transaction (group commit) and are answered after its
 * commit. No other answer may show that transaction's rows earlier: a read waits for the batch to
 * end, and an answer decided inside the batch (a 412, a replay) waits for its commit, or becomes
 * 503 if the batch is rolled back.
 */

/** An answer and whether the batch transaction was still open when it was delivered. */
interface Delivered {
  readonly response: CallResult;
  readonly batchOpen: boolean;
}

/** Starts a call now (handle() runs synchronously up to its answer) and notes what was open at its delivery. */
function started(h: Harness, ...args: Parameters<Harness['call']>): Promise<Delivered> {
  return h.call(...args).then((response) => ({ response, batchOpen: h.db.inTransaction }));
}

const rename = (title: string, etag: string) => ({ headers: { 'if-match': etag }, body: { title } });

t.test('GROUP COMMIT: a GET arriving while a write batch is open is answered after the commit and shows the write', async (t) => {
  const h = adaWorld();
  const etag = await etagOf(h, 2);
  const [written, read] = await Promise.all([
    started(h, 'PATCH', `${API}/tasks/2`, rename('Renamed', etag)),
    started(h, 'GET', `${API}/tasks/2`),
  ]);
  t.equal(written.response.status, 204, 'the PATCH applies');
  t.equal(read.batchOpen, false, 'the GET is not answered while the batch is uncommitted');
  t.equal(read.response.json.title, 'Renamed', 'it shows the committed write');
  t.equal(read.response.headers['etag'], written.response.headers['etag'], 'with the ETag the PATCH answered');
});

t.test('GROUP COMMIT: a 412 decided inside an open batch is answered after the batch commits', async (t) => {
  const h = adaWorld();
  const etag = await etagOf(h, 2);
  const [applied, refused] = await Promise.all([
    started(h, 'PATCH', `${API}/tasks/2`, rename('First', etag)),
    started(h, 'PATCH', `${API}/tasks/2`, rename('Second', etag)),
  ]);
  t.equal(applied.response.status, 204, 'the first PATCH applies');
  expectProblem(t, refused.response, 'stale_update', 'the second names the version the first replaced');
  t.equal(refused.response.headers['etag'], applied.response.headers['etag'], 'its current ETag is the one the first PATCH made');
  t.equal(refused.batchOpen, false, 'the 412 waits for the commit of the version it names');
});

t.test('GROUP COMMIT: a claim replayed from a receipt of the open batch waits for its commit', async (t) => {
  const h = adaWorld();
  const claim = async () => ({ headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': 'claim-1' } });
  const request = await claim();
  const [first, again] = await Promise.all([
    started(h, 'POST', `${API}/tasks/1/claim`, request),
    started(h, 'POST', `${API}/tasks/1/claim`, request),
  ]);
  t.equal(first.response.status, 200, 'the first claim takes the lease');
  t.equal(again.response.headers['idempotent-replayed'], 'true', 'the same request with the same key is a replay');
  t.strictSame(again.response.json, first.response.json, 'of the same lease');
  t.equal(again.batchOpen, false, 'answered only once the lease it repeats is committed');
});

t.test('GROUP COMMIT: when the batch fails to commit, answers decided inside it become 503 and reads see the old state', async (t) => {
  const h = adaWorld();
  const etag = await etagOf(h, 2);
  const first = h.call('PATCH', `${API}/tasks/2`, rename('Lost', etag));
  const stale = h.call('PATCH', `${API}/tasks/2`, rename('Refused', etag));
  const read = h.call('GET', `${API}/tasks/2`);
  // Make the batch's COMMIT fail: a foreign key checked only at commit, broken inside the batch.
  h.db.pragma('defer_foreign_keys = ON');
  h.db.prepare('INSERT INTO notes (task_id, client_id, staff_id, text, created_utc) VALUES (999999, 1, 1, ?, 0)').run('orphan');
  const [lost, refused, got] = await Promise.all([first, stale, read]);
  expectProblem(t, lost, 'internal_error', 'the write of the failed batch');
  expectProblem(t, refused, 'temporarily_unavailable', 'the 412 decided on the rolled-back version');
  t.equal(refused.headers['retry-after'], '1', 'with Retry-After');
  t.equal(got.status, 200, 'the GET waited for the batch and then read');
  t.equal(got.json.title, 'Review copy', 'the title of before the batch');
  t.equal(got.headers['etag'], etag, 'and its ETag');
  t.equal(h.db.prepare('SELECT count(*) AS n FROM notes WHERE task_id = 999999').pluck().get(), 0, 'the batch is rolled back');
});
