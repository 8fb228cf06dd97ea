import { existsSync, lstatSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { createNewPrivateFile, linkTarget, makeParents, removeDatabaseFiles, removeEmptyDirectories } from '../lib/store/files.js';
import type { Db } from '../lib/store/open.js';
import { CommandError, DEFAULT_DB, env, report } from './command-line.js';

/** The CLI's database, and how to give it up when the command fails. */
export interface OpenedDb {
  readonly db: Db;
  /** The path as given (or the default). */
  readonly path: string;
  /** Whether this command made the file: a new, empty database. */
  readonly created: boolean;
  /** Whether the file was there but empty (0 bytes, as a truncated one is): a new database was made in it. */
  readonly foundEmpty: boolean;
  /**
   * Closes it and removes what opening created (the file, directories), so a failure leaves no
   * trace; never what another command has committed to that file meanwhile. Returns whether the
   * database is gone (false: it stays, with what this command committed to it).
   */
  abandon(): boolean;
  /**
   * Called inside a write transaction that is about to fill the database (serve's seeding): when
   * it holds nothing yet, what this command commits now is its own to remove again.
   */
  claimIfEmpty(): void;
  /** Throws a CommandError when the file opened is no longer the one at the path (see `abandon`). */
  assertInPlace(): void;
  /** What to throw for `error`, once the command has given the database up: see `describedFailure`. */
  failure(error: unknown): unknown;
}

function nonEmpty(file: string): boolean {
  try {
    return statSync(file).size > 0;
  } catch {
    return false;
  }
}

const holdsNoOrganisation = (db: Db): boolean => db.prepare('SELECT NOT EXISTS (SELECT 1 FROM organisations) AS empty').pluck().get() === 1;

/**
 * Removes a database this command created when nothing in it is another command's: it holds no
 * organisation (every row worth keeping belongs to one), or everything was committed by this
 * command after `claimIfEmpty` found it empty (`PRAGMA data_version` moves only for other
 * connections' commits). Asked, and the files removed, under the write lock and only while the
 * path still names this file, so no other command can write in between. One that opened the file
 * before and writes later finds it gone (`assertInPlace`) and changes nothing.
 */
function removeIfOnlyOurs(db: Db, file: string, claimedAt: number | undefined, inPlace: () => boolean): boolean {
  try {
    db.exec('BEGIN IMMEDIATE');
  } catch {
    // Another command is writing it: what it writes is its own, and stays.
    return false;
  }
  try {
    const onlyOurs = inPlace() && (holdsNoOrganisation(db) || db.pragma('data_version', { simple: true }) === claimedAt);
    if (onlyOurs) removeDatabaseFiles(file);
    return onlyOurs;
  } catch {
    return false;
  } finally {
    db.exec('ROLLBACK');
  }
}

/** A file of 0 bytes (false for one gone meanwhile: opening it says what happened). */
function isEmptyFile(file: string): boolean {
  try {
    return statSync(file).size === 0;
  } catch {
    return false;
  }
}

/** No entry at `file` at all (lstat: a link that cannot be followed, a loop say, is still there). */
function gone(file: string): boolean {
  try {
    lstatSync(file);
    return false;
  } catch {
    return true;
  }
}

/**
 * SQLite's errors name no file ("database is locked"), and an operator may run several databases:
 * told with the path, and that nothing was changed (the command's transaction was rolled back and
 * what it made removed). A lock held past the busy timeout is no fault of the file's, so it says
 * what holds one that long and that a retry can succeed. Anything else is thrown as it is.
 */
function describedFailure(
  path: string,
  error: unknown,
  { BUSY_TIMEOUT_MS, isSqliteError, transientDatabaseFailure }: Pick<typeof import('../lib/store/open.js'), 'BUSY_TIMEOUT_MS' | 'isSqliteError' | 'transientDatabaseFailure'>,
): unknown {
  if (transientDatabaseFailure(error) === 'busy') {
    return new CommandError(`the database ${path} is locked: another connection kept its write lock for the ${BUSY_TIMEOUT_MS / 1000} s this command waited (a long load, or a transaction another program left open); nothing was changed. Run this again once it is free`);
  }
  if (!isSqliteError(error)) return error;
  return new CommandError(`database ${path}: ${error.message}; nothing was changed`);
}

const removedWhileWaiting = (path: string): CommandError =>
  new CommandError(`the database file ${path} was removed while this command waited (another command that created it failed); nothing was changed`);

/**
 * Opens the database the CLI owns, creating the directory of a file database first. With
 * `mustExist` (commands that manage what is already there) a missing file is an error instead:
 * a mistyped `--db` would otherwise leave an empty database behind.
 */
export async function openDb(dbOption: string | undefined, mustExist = false): Promise<OpenedDb> {
  const path = dbOption ?? env('WTA_DB') ?? DEFAULT_DB;
  // Through any symbolic links: the file SQLite will open is the one made (privately) and checked.
  const file = path === ':memory:' ? undefined : linkTarget(path);
  const existed = file === undefined || existsSync(file);
  const foundEmpty = file !== undefined && existed && isEmptyFile(file);
  if (mustExist && !existed) throw new CommandError(`no database at ${path} (serve or load creates one)`);
  // The file gone but its write-ahead log still there: the file was removed or moved without it
  // (the log holds its latest writes). SQLite would start a new database and empty the log.
  if (file !== undefined && !existed && nonEmpty(`${file}-wal`)) {
    throw new CommandError(`no database at ${path}, but ${file}-wal is there: the database file was removed or moved without its write-ahead log, which holds its latest writes. Put the file back beside it, or move the -wal away if no database of yours needs it, then run this again`);
  }
  // An empty file beside such a log is the same loss (a truncated database): SQLite would empty the log.
  if (file !== undefined && foundEmpty && nonEmpty(`${file}-wal`)) {
    throw new CommandError(`the database file ${path} is empty, but ${file}-wal is there: the database file was truncated or replaced without its write-ahead log, which holds its latest writes. Put the file back beside it, or move the -wal away if no database of yours needs it, then run this again`);
  }
  const store = await import('../lib/store/open.js');
  const { databaseFileCheck, fileHoldsServiceSchema, openConnection, openDatabase } = store;
  // Managing clients of a file that is not yet the service's (a mistyped --db that hit another
  // application's database, say) would install the schema in it: looked at first, writing nothing.
  if (mustExist && file !== undefined && !fileHoldsServiceSchema(file)) {
    throw new CommandError(`${path} is not a worker-task-api database (serve or load creates one)`);
  }
  let createdDirectory: string | undefined;
  let created = false;
  // The file was there when this command came to make it: found, or made by another command.
  let madeElsewhere = false;
  let handle: Db | undefined;
  try {
    if (file !== undefined) {
      createdDirectory = makeParents(dirname(file));
      // Made here, exclusively: a command removes only a file it made itself.
      created = createNewPrivateFile(file);
      madeElsewhere = !created;
    }
    handle = openConnection(path);
    const { db } = openDatabase(handle);
    const inPlace = databaseFileCheck(db);
    let claimedAt: number | undefined;
    return {
      db,
      path,
      created,
      foundEmpty,
      abandon: () => {
        const removed = file !== undefined && created && removeIfOnlyOurs(db, file, claimedAt, inPlace);
        db.close();
        if (removed && createdDirectory !== undefined) removeEmptyDirectories(dirname(file), createdDirectory);
        return removed;
      },
      claimIfEmpty: () => {
        // Read under the write lock: no other connection's commit can come before it unseen.
        if (created && holdsNoOrganisation(db)) claimedAt = Number(db.pragma('data_version', { simple: true }));
      },
      assertInPlace: () => {
        if (!inPlace()) throw removedWhileWaiting(path);
      },
      failure: (error) => describedFailure(path, error, store),
    };
  } catch (error) {
    handle?.close();
    if (file !== undefined && created) removeDatabaseFiles(file);
    if (file !== undefined && createdDirectory !== undefined) removeEmptyDirectories(dirname(file), createdDirectory);
    // Made elsewhere, and gone: the command that made it failed and removed it while this one was
    // opening it, and SQLite names only what it could no longer read ("disk I/O error").
    if (file !== undefined && madeElsewhere && gone(file)) throw removedWhileWaiting(path);
    // A migration waits for the write lock like any write: so told. Other failures say they came at the opening.
    if (store.transientDatabaseFailure(error) === 'busy') throw describedFailure(path, error, store);
    throw new CommandError(`cannot open database ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * Runs a command on the database in one transaction that commits only once the command's report
 * is written: a token or summary that never reached the operator must not leave a change behind
 * (a client nobody knows the token of, a retried `client create` making two). Closed afterwards,
 * and abandoned (see OpenedDb) if anything fails. The write lock is held across the awaited
 * report on purpose, as the commit must follow it; the report is a few lines, which a pipe's buffer
 * takes at once. A command that only reads (`readOnly`) takes no write lock, which a busy server
 * may hold for a moment, and ends its read before it reports, so a slow reader of the output holds
 * up no checkpoint.
 */
export async function withDb<T>(
  dbOption: string | undefined,
  action: (db: Db) => T,
  reportOf: (result: T) => readonly string[],
  { mustExist = false, readOnly = false }: { readonly mustExist?: boolean; readonly readOnly?: boolean } = {},
): Promise<void> {
  const opened = await openDb(dbOption, mustExist);
  const { db } = opened;
  let lines: readonly string[];
  try {
    db.exec(readOnly ? 'BEGIN' : 'BEGIN IMMEDIATE');
    lines = reportOf(action(db));
    if (!readOnly) {
      // Checked under the write lock, which the command that removes a file it made holds too.
      opened.assertInPlace();
      await report(lines).catch((error: unknown) => {
        throw error instanceof CommandError ? new CommandError(`${error.message}; nothing was changed`) : error;
      });
      try {
        db.exec('COMMIT');
      } catch (error) {
        // The report is out already: it must be taken back in so many words.
        const reason = error instanceof Error ? error.message : String(error);
        throw new CommandError(`the change could not be saved (${reason}); nothing was changed, and what is printed above did not happen`);
      }
    }
  } catch (error) {
    if (db.inTransaction) db.exec('ROLLBACK');
    opened.abandon();
    throw opened.failure(error);
  }
  if (db.inTransaction) db.exec('COMMIT');
  db.close();
  if (readOnly) await report(lines);
}
