import t from 'tap';
import Database from 'better-sqlite3';
import { transientDatabaseFailure } from '../../lib/store/open.js';

// lib/store/open.ts: which failures are a busy or full database (503 temporarily_unavailable, not a 500).

/** An error shaped as another copy of better-sqlite3 throws it: its own class, the same name and code. */
class OtherCopySqliteError extends Error {
  constructor(message: string, readonly code: string) {
    super(message);
  }
}
Object.defineProperty(OtherCopySqliteError.prototype, 'name', { value: 'SqliteError' });

t.test('STORE: a busy, locked or full database is recognised by name and code, from any copy of better-sqlite3', async (t) => {
  for (const [code, kind] of [
    ['SQLITE_BUSY', 'busy'], ['SQLITE_BUSY_SNAPSHOT', 'busy'], ['SQLITE_LOCKED', 'busy'], ['SQLITE_LOCKED_SHAREDCACHE', 'busy'],
    ['SQLITE_FULL', 'full'],
  ] as const) {
    t.equal(transientDatabaseFailure(new Database.SqliteError('database is locked', code)), kind, `this copy: ${code}`);
    t.equal(transientDatabaseFailure(new OtherCopySqliteError('database is locked', code)), kind, `another copy: ${code}`);
  }
  for (const [error, what] of [
    [new Database.SqliteError('constraint failed', 'SQLITE_CONSTRAINT'), 'another SQLite code'],
    [new OtherCopySqliteError('x', 'SQLITE_BUSYNESS'), 'a code that only starts like busy'],
    [new OtherCopySqliteError('x', 'SQLITE_FULLY'), 'a code that only starts like full'],
    [Object.assign(new Error('locked'), { code: 'SQLITE_BUSY' }), 'not a SqliteError'],
    [{ name: 'SqliteError', code: 'SQLITE_BUSY' }, 'not an Error'],
    ['SQLITE_BUSY', 'a string'],
  ] as const) {
    t.equal(transientDatabaseFailure(error), null, what);
  }
});
