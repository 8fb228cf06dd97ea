import { existsSync, mkdirSync, rmSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Creates the missing directories above a file, one level at a time: node's recursive
 * mkdirSync never returns on some paths (under /proc, say). Returns the topmost one it created,
 * which removes them all again; on failure nothing created is left behind.
 */
export function makeParents(directory: string): string | undefined {
  const missing: string[] = [];
  for (let current = directory; !existsSync(current); current = dirname(current)) {
    missing.unshift(current);
    if (dirname(current) === current) break;
  }
  try {
    for (const created of missing) mkdirSync(created);
  } catch (error) {
    if (missing[0] !== undefined) rmSync(missing[0], { recursive: true, force: true });
    throw error;
  }
  return missing[0];
}

/** Removes a SQLite database file with the journal, WAL and shared-memory files beside it. */
export function removeDatabaseFiles(file: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) rmSync(`${file}${suffix}`, { force: true });
}
