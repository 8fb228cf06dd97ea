import t from 'tap';
import Database from 'better-sqlite3';
import { isDatabaseBusy } from '../../lib/store/open.js';

// lib/store/open.ts: which failures are a busy database (503 temporarily_unavailable, not a 500).

/** An error shaped as another copy of better-sqlite3 throws it: its own class, the same name and code. */
class OtherCopySqliteError extends Error {
  constructor(message: string, readonly code: string) {
    super(message);
  }
}
Object.defineProperty(OtherCopySqliteError.prototype, 'name', { value: 'SqliteError' });

t.test('STORE: a busy or locked database is recognised by name and code, from any copy of better-sqlite3', async (t) => {
  for (const code of ['SQLITE_BUSY', 'SQLITE_BUSY_SNAPSHOT', 'SQLITE_LOCKED', 'SQLITE_LOCKED_SHAREDCACHE']) {
    t.ok(isDatabaseBusy(new Database.SqliteError('database is locked', code)), `this copy: ${code}`);
    t.ok(isDatabaseBusy(new OtherCopySqliteError('database is locked', code)), `another copy: ${code}`);
  }
  for (const [error, what] of [
    [new Database.SqliteError('constraint failed', 'SQLITE_CONSTRAINT'), 'another SQLite code'],
    [new OtherCopySqliteError('x', 'SQLITE_BUSYNESS'), 'a code that only starts like busy'],
    [Object.assign(new Error('locked'), { code: 'SQLITE_BUSY' }), 'not a SqliteError'],
    [{ name: 'SqliteError', code: 'SQLITE_BUSY' }, 'not an Error'],
    ['SQLITE_BUSY', 'a string'],
  ] as const) {
    t.notOk(isDatabaseBusy(error), what);
  }
});
