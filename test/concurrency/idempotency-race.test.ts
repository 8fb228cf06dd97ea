import t from 'tap';
import Database from 'better-sqlite3';
import { TEST_NOW, TOKENS } from '../helpers/fixture.js';
import { fileDatabase, race } from './race-harness.js';

/** Contract 3: two concurrent first requests with the same key never apply the operation twice. */

t.test('IDEMPOTENCY RACE: concurrent first requests with one key apply the write once; the rest replay', { timeout: 120_000 }, async (t) => {
  const path = fileDatabase(t.testdir());
  const { results, logged } = await race(
    { path, count: 10, taskId: 3, now: TEST_NOW, mode: 'same-key-note', sharedKey: 'one-key' },
    [TOKENS.ada, TOKENS.ada, TOKENS.ada, TOKENS.ada],
  );
  t.equal(results.length, 40);
  t.strictSame(logged, []);
  t.ok(results.every((result) => result.status === 204), 'every request is a 204');
  t.equal(results.filter((result) => !result.replayed).length, 1, 'exactly one first application; every other answer is a replay');
  const db = new Database(path, { readonly: true });
  t.teardown(() => db.close());
  const notes = db.prepare('SELECT count(*) AS n FROM notes WHERE task_id = 3').get() as { n: number };
  t.equal(notes.n, 1, 'the note was written once');
});
