import t from 'tap';
import Database from 'better-sqlite3';
import { TEST_NOW, TOKENS, TWIN } from '../helpers/fixture.js';
import { workspaceVersion } from '../helpers/api.js';
import { fileDatabase, race } from './race-harness.js';

/**
 * "No live lease is ever held twice": four services (one per worker thread, each with its own
 * connection) race to claim one task on one file database. The immediate transaction of the
 * mutation runner is what keeps them apart.
 */

const WORKERS = 4;
const PER_WORKER = 25;

t.test('CLAIM RACE: no live lease is ever held twice (4 services on one file, 100 claims, exactly one 200)', { timeout: 120_000 }, async (t) => {
  const path = fileDatabase(t.testdir());
  const started = Date.now();
  const { etags, results, logged, racedMs } = await race(
    { path, count: PER_WORKER, taskId: 1, now: TEST_NOW, mode: 'claim' },
    [TOKENS.ada, TWIN, TOKENS.ada, TWIN],
  );
  t.comment(`workers started and raced in ${Date.now() - started} ms, of which the race ${racedMs} ms`);
  t.equal(etags.length, WORKERS);
  t.equal(new Set(etags).size, 1, 'every racer read the same version before the start');
  t.equal(results.length, WORKERS * PER_WORKER, 'every request was answered');

  const winners = results.filter((result) => result.status === 200);
  t.equal(winners.length, 1, 'exactly one 200');
  t.equal(results.filter((result) => result.status >= 500).length, 0, 'never a 5xx');
  t.strictSame(logged, [], 'no unexpected error was logged');
  const losers = results.filter((result) => result.status !== 200);
  t.ok(
    losers.every((result) => (result.status === 409 && result.code === 'task_claimed') || (result.status === 412 && result.code === 'stale_update')),
    'the rest are 409 task_claimed or 412 stale_update',
  );
  t.equal(winners.filter((result) => result.replayed).length, 0);

  const db = new Database(path, { readonly: true });
  t.teardown(() => db.close());
  const live = db.prepare('SELECT token FROM claims WHERE task_id = 1 AND released_utc IS NULL AND expires_utc > ?').all(Date.parse(TEST_NOW)) as { token: string }[];
  t.equal(live.length, 1, 'the claims table holds exactly one live lease for task 1');
  t.equal(live[0]?.token, winners[0]?.leaseToken, 'and it is the winner\'s');
  t.equal(`"task-1-plan-${workspaceVersion({ db }) - 1}"`, etags[0], 'the version moved exactly once');
  const receipts = db.prepare('SELECT count(*) AS n FROM idempotency_receipts').get() as { n: number };
  t.equal(receipts.n, 1, 'one receipt, for the winner');
});
