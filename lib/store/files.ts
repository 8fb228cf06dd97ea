import { closeSync, existsSync, mkdirSync, openSync, rmdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Creates the missing directories above a file, one level at a time: node's recursive
 * mkdirSync never returns on some paths (under /proc, say). Returns the topmost one it created,
 * which removes them all again; on failure nothing created is left behind. They are the owner's
 * alone (0700), as the database files in them are.
 */
export function makeParents(directory: string): string | undefined {
  const missing: string[] = [];
  for (let current = directory; !existsSync(current); current = dirname(current)) {
    missing.unshift(current);
    if (dirname(current) === current) break;
  }
  try {
    for (const created of missing) mkdirSync(created, { mode: 0o700 });
  } catch (error) {
    // The cleanup's own failure must not hide why the directories could not be made.
    if (missing[0] !== undefined) removeEmptyDirectories(missing[missing.length - 1] as string, missing[0]);
    throw error;
  }
  return missing[0];
}

/**
 * Creates `file` empty (an empty file is an empty SQLite database), readable and writable by its
 * owner only, whatever the umask: it will hold token hashes and every organisation's data.
 * SQLite gives the WAL and shared-memory files beside it the same mode. A file that exists
 * already, or appears meanwhile, is left as it is.
 */
export function createPrivateFile(file: string): void {
  if (!existsSync(file)) createNewPrivateFile(file);
}

/**
 * `createPrivateFile` for a file that must be new (a backup): false when one exists already, so
 * a file that appears between a check and the write is never overwritten.
 */
export function createNewPrivateFile(file: string): boolean {
  try {
    closeSync(openSync(file, 'wx', 0o600));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  }
}

/**
 * Removes `from` and its parents up to and including `upTo` (directories this process made),
 * each only while empty: a file another process put there meanwhile stays, and so does its
 * directory.
 */
export function removeEmptyDirectories(from: string, upTo: string): void {
  for (let current = from; ; current = dirname(current)) {
    try {
      rmdirSync(current);
    } catch (error) {
      // One never made (its parent's mkdir failed) is passed over; one not empty ends it.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') return;
    }
    if (current === upTo || dirname(current) === current) return;
  }
}

/** Removes a SQLite database file with the journal, WAL and shared-memory files beside it. */
export function removeDatabaseFiles(file: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${file}${suffix}`, { force: true });
}
