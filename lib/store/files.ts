import { closeSync, existsSync, lstatSync, mkdirSync, openSync, readlinkSync, rmdirSync, rmSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/**
 * Which file a path names now (device and inode, exact as bigints), or undefined when it cannot
 * be looked at (gone, a directory that cannot be searched, an I/O error).
 */
export function fileIdentity(path: string): string | undefined {
  try {
    const stats = statSync(path, { bigint: true, throwIfNoEntry: false });
    return stats === undefined ? undefined : `${stats.dev}:${stats.ino}`;
  } catch {
    return undefined;
  }
}

/**
 * Creates the missing directories above a file, one level at a time: node's recursive
 * mkdirSync never returns on some paths (under /proc, say). Returns the topmost one it created,
 * from which `removeEmptyDirectories` removes them again; on failure nothing it created is left
 * behind. They are the owner's alone (0700), as the database files in them are.
 */
export function makeParents(directory: string): string | undefined {
  const missing: string[] = [];
  for (let current = directory; !existsSync(current); current = dirname(current)) {
    missing.unshift(current);
    if (dirname(current) === current) break;
  }
  const made: string[] = [];
  try {
    for (const directory of missing) {
      try {
        mkdirSync(directory, { mode: 0o700 });
        made.push(directory);
      } catch (error) {
        // Another process made it meanwhile: it is there, and it is not ours to remove.
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
    }
  } catch (error) {
    // Only what this call made goes again, and the cleanup cannot hide why the mkdir failed.
    const [first] = made;
    if (first !== undefined) removeEmptyDirectories(made[made.length - 1] as string, first);
    throw error;
  }
  return made[0];
}

/**
 * The file a path names once symbolic links are followed, also when the last one points at a file
 * that does not exist yet: SQLite follows them to open the database, so that file is the one to
 * create privately (creating at the link itself fails, and SQLite would then make the target
 * with the umask's mode). A loop of links is left to fail where the file is opened.
 */
export function linkTarget(file: string): string {
  let current = resolve(file);
  for (let hops = 0; hops < 40; hops += 1) {
    let isLink: boolean;
    try {
      isLink = lstatSync(current).isSymbolicLink();
    } catch {
      return current;
    }
    if (!isLink) return current;
    current = resolve(dirname(current), readlinkSync(current));
  }
  return current;
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
  for (const suffix of ['', '-wal', '-shm', '-journal']) {
    try {
      rmSync(`${file}${suffix}`, { force: true });
    } catch {
      // Cleanup after a failure: what could not be made cannot be removed either, and the
      // failure being reported is the one that matters.
    }
  }
}
