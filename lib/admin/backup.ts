import Database from 'better-sqlite3';
import { accessSync, closeSync, constants, existsSync, openSync, readSync, realpathSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { AdminError } from './clients.js';
import { createNewPrivateFile, makeParents, removeDatabaseFiles, removeEmptyDirectories } from '../store/files.js';
import { holdsServiceSchema } from '../store/migrations.js';
import { BACKUP_COPY_ID } from '../store/organisations.js';

/** What `backupDatabase` did. */
export interface BackupSummary {
  /** Pages copied (of the source's page size). */
  readonly pages: number;
}

/**
 * Writes a consistent copy of the database at `source` to the new file `target`, also while a
 * server is using the source: SQLite's online backup copies every page under one read snapshot
 * (in WAL mode readers do not block writers, and a write by another connection cannot make a
 * one-step copy restart). The copy is then made self-contained (rollback journal instead of
 * WAL, so it is one file), marked as a backup copy (`BACKUP_COPY_ID`, so that the service moves
 * its versions on when it is restored) and must pass `PRAGMA integrity_check`. A source that is not the
 * service's database is refused, an existing `target` is never overwritten, and a failed copy
 * is removed.
 */
export async function backupDatabase(
  source: string,
  target: string,
  /** The last step (the command line's report of it): when it fails, the copy is removed after all. */
  confirm?: (summary: BackupSummary) => Promise<void>,
  /**
   * Aborted to give up (the command line's SIGINT or SIGTERM): the copy is removed and an
   * AdminError thrown. The copy itself is one synchronous step, so it is looked at once that ends.
   */
  stop?: AbortSignal,
): Promise<BackupSummary> {
  if (source === ':memory:') throw new AdminError('an in-memory database cannot be backed up');
  if (resolve(target) === resolve(source)) throw new AdminError('the backup file must not be the database itself');
  if (!existsSync(source)) throw new AdminError(`no database at ${source}`);
  if (existsSync(target)) throw new AdminError(`${target} already exists; back up to a new file`);
  // Reading a database in WAL mode makes its -wal and -shm files, with the database file's mode;
  // made by a process that may not write that file, they stay (only a writer removes them) and
  // lock every server out of the file once its mode is put right. With a -shm file there (named
  // after the file a link leads to), a connection has it open (or had): reading then makes
  // nothing new; nor does reading a database in rollback-journal mode (a backup copy, say).
  if (!mayWrite(source) && inWalMode(source) && !existsSync(`${realpathSync(source)}-shm`)) {
    throw new AdminError(
      `${source} is read-only to this process and nothing has it open: reading it would leave -wal and -shm files beside it ` +
        'that a server could not remove. Run backup as the user the server runs as, or copy the file (with its -wal file, if there is one) as it is',
    );
  }

  let db: Database.Database | undefined;
  try {
    db = new Database(source, { fileMustExist: true, timeout: 5000 });
    // A mistyped --db that names another file would otherwise be copied and reported "ok".
    if (!holdsServiceSchema(db)) throw new AdminError(`${source} is not a worker-task-api database`);
  } catch (error) {
    db?.close();
    if (error instanceof AdminError) throw error;
    if ((error as { code?: unknown }).code === 'SQLITE_NOTADB') throw new AdminError(`${source} is not a worker-task-api database`);
    throw new AdminError(`cannot open database ${source}: ${error instanceof Error ? error.message : String(error)}`);
  }
  let createdDirectory: string | undefined;
  const removeCopy = (): void => {
    removeDatabaseFiles(target);
    if (createdDirectory !== undefined) removeEmptyDirectories(dirname(resolve(target)), createdDirectory);
  };
  let pages: number;
  let created = false;
  try {
    createdDirectory = makeParents(dirname(resolve(target)));
    // Created here, new: a file that appeared since the check above is left alone, not overwritten.
    if (!createNewPrivateFile(target)) throw new AdminError(`${target} already exists; back up to a new file`);
    created = true;
    // After the first (sizing) step, every remaining page in one step.
    pages = (await db.backup(target, { progress: () => 0x7fffffff })).totalPages;
  } catch (error) {
    if (created) removeCopy();
    else if (createdDirectory !== undefined) removeEmptyDirectories(dirname(resolve(target)), createdDirectory);
    throw error instanceof AdminError ? error : new AdminError(`backup failed: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    db.close();
  }

  let integrity: unknown;
  try {
    const copy = new Database(target, { fileMustExist: true });
    try {
      copy.pragma('journal_mode = DELETE');
      // Marked, so that the service, opening it in place of its database, knows it for a restore.
      copy.pragma(`application_id = ${BACKUP_COPY_ID}`);
      integrity = copy.pragma('integrity_check', { simple: true });
    } finally {
      copy.close();
    }
  } catch (error) {
    removeCopy();
    throw new AdminError(`the copy ${target} could not be checked: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (integrity !== 'ok') {
    removeCopy();
    throw new AdminError(`the copy ${target} failed its integrity check: ${String(integrity)}`);
  }
  const summary = { pages };
  try {
    if (stop !== undefined) {
      // A signal that arrived during the synchronous copy is handled once the event loop turns.
      await new Promise((resolve) => setImmediate(resolve));
      if (stop.aborted) throw new AdminError('interrupted; the unfinished copy was removed');
    }
    await confirm?.(summary);
  } catch (error) {
    removeCopy();
    throw error;
  }
  return summary;
}

function mayWrite(path: string): boolean {
  try {
    accessSync(path, constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

/** Whether the file's header says WAL mode (bytes 18 and 19 both 2); false when it cannot be read. */
function inWalMode(path: string): boolean {
  let descriptor: number | undefined;
  try {
    descriptor = openSync(path, 'r');
    const header = Buffer.alloc(20);
    return readSync(descriptor, header, 0, 20, 0) === 20 && header[18] === 2 && header[19] === 2;
  } catch {
    return false;
  } finally {
    if (descriptor !== undefined) closeSync(descriptor);
  }
}
