import Database from 'better-sqlite3';
import { accessSync, constants, readFileSync, realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { createPrivateFile, fileIdentity, linkTarget, makeParents } from './files.js';
import { holdsServiceSchema, migrate } from './migrations.js';
import { BACKUP_COPY_ID, moveVersionsPastRestore } from './organisations.js';
import { packageFile } from './package-files.js';

export type Db = Database.Database;

let schemaText: string | undefined;

function schemaSql(): string {
  schemaText ??= readFileSync(packageFile('schema.sql'), 'utf8');
  return schemaText;
}

/**
 * Handles already set up. Adopting one again changes nothing, so it also works inside a
 * transaction (a fixture loaded in the same transaction as another, say), where SQLite refuses
 * to change the safety level.
 */
const prepared = new WeakSet<Db>();

/** What a checkpoint leaves of a WAL file: some four times what normal traffic keeps in it. */
const WAL_SIZE_LIMIT_BYTES = 16 * 1024 * 1024;

/** How long a statement waits for another connection's lock before SQLITE_BUSY. */
export const BUSY_TIMEOUT_MS = 5000;

/** A bare connection to a file, nothing set up yet: for `openDatabase` to adopt. */
export function openConnection(file: string): Db {
  return new Database(file);
}

/**
 * Opens (or adopts) a database and brings it to the current schema. A file database runs in WAL
 * mode with synchronous FULL, so a 2xx answer means the change is on disk.
 */
export function openDatabase(db: string | Db): { db: Db; owned: boolean } {
  const owned = typeof db === 'string';
  // Like the command line's `./data/...`: a path in a directory that does not exist yet works.
  if (typeof db === 'string' && db !== ':memory:' && !db.startsWith('file:')) {
    const file = linkTarget(db);
    makeParents(dirname(file));
    createPrivateFile(file);
  }
  const handle = typeof db === 'string' ? new Database(db) : db;
  if (prepared.has(handle)) return { db: handle, owned };
  try {
    // Inside the caller's transaction SQLite refuses these settings: the schema is brought up to
    // date, and the handle is set up in full the next time it is adopted outside one.
    const settle = !handle.inTransaction;
    if (settle) {
      // Before SQLite reads the file: a read would leave -wal and -shm files this process may not
      // remove, which would keep the database refused once its mode is put right.
      assertWritable(handle);
      handle.pragma('foreign_keys = ON');
      handle.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      handle.pragma('synchronous = FULL');
    }
    // A copy `backup` made, now opened as a database: put back in place, and the versions its
    // ETags carry must not start again from the copy's.
    const putInPlace = settle && handle.pragma('application_id', { simple: true }) === BACKUP_COPY_ID;
    migrate(handle, schemaSql());
    if (settle) {
      if (putInPlace) moveVersionsPastRestore(handle, Date.now());
      // After the migration, which refuses another application's database: its file stays in the
      // journal mode it had.
      if (!handle.memory) handle.pragma('journal_mode = WAL');
      // A WAL file that one large transaction (a big fixture load) grew is cut back when SQLite
      // starts the log over (the first write after a full checkpoint), instead of keeping its size
      // until the last connection closes.
      handle.pragma(`journal_size_limit = ${WAL_SIZE_LIMIT_BYTES}`);
      prepared.add(handle);
    }
  } catch (error) {
    if (owned) handle.close();
    // What the file system did not tell (a directory where the -wal file cannot be made) fails
    // the same way, in SQLite's words.
    throw isSqliteError(error) && /^SQLITE_READONLY(_|$)/.test(error.code) ? new ReadOnlyDatabase() : error;
  }
  return { db: handle, owned };
}

/**
 * A file this process may not write opens all the same (SQLite falls back to reading it), and
 * then every write fails: a 500 on each, while reads and the health check look fine. Asked of the
 * file system, not by writing: that would wait for the write lock another process may hold.
 */
function assertWritable(db: Db): void {
  const file = mainFile(db);
  if (db.readonly || (file !== '' && !mayWriteDatabase(file))) throw new ReadOnlyDatabase();
}

/** Where SQLite keeps the file: absolute, whatever the working directory is now or a link points to; '' in memory. */
export function mainFile(db: Db): string {
  return (db.pragma('database_list') as { name: string; file: string }[]).find((entry) => entry.name === 'main')?.file ?? '';
}

/**
 * Whether the file the connection has open is still the one at its path. A database file removed
 * (or replaced by another, or a link to it pointed elsewhere) while a service runs goes on taking
 * writes into the file it has open, to be lost when the service stops: the commit and the health
 * check ask this first. A path that cannot be looked at (gone, a directory made unreadable, an
 * I/O error) counts as not in place. Always true in memory.
 */
export function databaseFileCheck(db: Db): () => boolean {
  // Where SQLite resolved it, and the name it was opened by (a link, say) when that names the same file.
  const file = mainFile(db);
  if (file === '') return () => true;
  const opened = fileIdentity(file);
  if (opened === undefined) return () => false;
  const named = resolve(db.name);
  const paths = named !== file && fileIdentity(named) === opened ? [file, named] : [file];
  return () => paths.every((path) => fileIdentity(path) === opened);
}

/** A commit refused because the database file is no longer at its path (see `databaseFileCheck`). */
export class DatabaseFileGone extends Error {
  constructor() {
    super('the database file was removed or replaced while the service had it open');
  }
}

/**
 * A write batch whose transaction SQLite ended on its own: some failures (an I/O error, a full
 * disk), even in a statement that only reads, roll back the whole transaction, and a batch can
 * only find that out afterwards.
 */
export class TransactionLost extends Error {
  constructor() {
    super('SQLite rolled back the transaction of the write batch');
  }
}

/** Whether this process may write the database file at `file` and its -wal and -shm files. */
function mayWriteDatabase(file: string): boolean {
  return [file, `${file}-wal`, `${file}-shm`].every((path) => {
    try {
      accessSync(path, constants.W_OK);
      return true;
    } catch (error) {
      // Only an existing file can be read-only: SQLite makes the -wal and -shm files when it needs them.
      return (error as NodeJS.ErrnoException).code === 'ENOENT';
    }
  });
}

class ReadOnlyDatabase extends Error {
  constructor() {
    super(
      'worker-task-api: the database is read-only to this process; the service writes to it, so it needs write ' +
        'access to the file and its directory (for the -wal and -shm files)',
    );
  }
}

/**
 * Whether the file at `path` holds the service's schema, looked at without writing anything. A
 * file that is no SQLite database at all does not; one this process cannot read or write counts
 * as holding it: openDatabase then says what is wrong.
 */
export function fileHoldsServiceSchema(path: string): boolean {
  let db: Db | undefined;
  try {
    // A file this process may not write is not read either: reading it would leave -wal and -shm
    // files behind (see assertWritable), and openDatabase refuses it anyway.
    if (!mayWriteDatabase(realpathSync(path))) return true;
    // Not `readonly`: on a database in WAL mode a read-only connection creates -wal and -shm files
    // and cannot remove them; this one, the last to close, takes them away again.
    db = new Database(path, { fileMustExist: true });
    return holdsServiceSchema(db);
  } catch (error) {
    // Text, or random bytes: certainly not the service's. Other failures are openDatabase's to name.
    return !(isSqliteError(error) && error.code === 'SQLITE_NOTADB');
  } finally {
    db?.close();
  }
}

/**
 * A SQLite failure that says nothing about the request, so the client is asked to retry later
 * and the operator is told: `busy`, the database locked by another connection past the busy
 * timeout (a `load` or an embedder's long transaction); `full`, no room left on the disk (or
 * under `max_page_count`); `read-only` and `I/O error`, storage that stopped taking writes after
 * the service opened it (a file system remounted read-only answers EROFS, which SQLite reports
 * as an I/O error); `file removed or replaced`, a commit refused because the file the service
 * has open is no longer at its path; `transaction rolled back`, a write batch whose transaction
 * one of those failures ended (see TransactionLost). Null for anything else.
 */
export function transientDatabaseFailure(
  error: unknown,
): 'busy' | 'full' | 'read-only' | 'I/O error' | 'file removed or replaced' | 'transaction rolled back' | null {
  if (error instanceof DatabaseFileGone) return 'file removed or replaced';
  if (error instanceof TransactionLost) return 'transaction rolled back';
  if (!isSqliteError(error)) return null;
  if (/^SQLITE_(BUSY|LOCKED)(_|$)/.test(error.code)) return 'busy';
  if (/^SQLITE_FULL(_|$)/.test(error.code)) return 'full';
  if (/^SQLITE_READONLY(_|$)/.test(error.code)) return 'read-only';
  return /^SQLITE_IOERR(_|$)/.test(error.code) ? 'I/O error' : null;
}

/**
 * By name and code, not instanceof: an embedder's Database may come from another copy of
 * better-sqlite3, whose SqliteError is another class.
 */
export function isSqliteError(error: unknown): error is Error & { code: string } {
  return error instanceof Error && error.name === 'SqliteError' && typeof (error as { code?: unknown }).code === 'string';
}

/** Whether `value` looks like an open better-sqlite3 Database (duck-typed so any copy of the module works). */
export function isDatabase(value: unknown): value is Db {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as { prepare?: unknown; exec?: unknown; transaction?: unknown; open?: unknown };
  return (
    typeof candidate.prepare === 'function' &&
    typeof candidate.exec === 'function' &&
    typeof candidate.transaction === 'function' &&
    candidate.open === true
  );
}

/**
 * Runs `work` with the connection's busy timeout at zero, then puts it back: for best-effort
 * writes that must not wait (a closing service's). A locked database then fails at once.
 */
export function withoutBusyWait(db: Db, work: () => void): void {
  // An embedder may have closed a Database it passed in before closing the service.
  if (!db.open) return;
  const timeout = db.pragma('busy_timeout', { simple: true }) as number;
  db.pragma('busy_timeout = 0');
  try {
    work();
  } finally {
    db.pragma(`busy_timeout = ${timeout}`);
  }
}
