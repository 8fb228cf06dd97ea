import { closeSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import type { Db } from './open.js';

/**
 * Tells, with one 48-byte read, whether any connection (in this process or another) may have
 * committed since the last look. In WAL mode every commit rewrites the wal-index header at the
 * start of the -shm file before it returns: its transaction counter `iChange` moves, and so does
 * `mxFrame` or the salt (sqlite.org/walformat.html, "The WAL-Index Header"). Bytes equal to the
 * last look's mean no commit in between; bytes that differ may also mean a WAL restart or a
 * recovery, which only costs a needless full check.
 *
 * `PRAGMA data_version` answers the same question, but it starts a read transaction to do so:
 * two locks on the -shm file and a size check, three system calls that cost a cached read about
 * a sixth of the server's CPU time under load. SQLite's other processes and versions read this
 * header too, so its layout is part of what WAL mode keeps stable.
 */
export interface CommitWatch {
  /** Reads the header now: whether it is byte for byte what `remember()` last kept (never before the first). */
  unchanged(): boolean;
  /**
   * Keeps the header the last `unchanged()` read. Call it only once what that header stands for
   * has been read (`PRAGMA data_version` after it): kept any earlier, a commit in between would
   * pass for seen.
   */
  remember(): void;
  close(): void;
}

const HEADER_BYTES = 48;
/** `WALINDEX_MAX_VERSION`: the only wal-index format since SQLite 3.7.0. */
const WAL_INDEX_VERSION = 3_007_000;
const IS_INIT_OFFSET = 12;

/**
 * A watch on `file`'s -shm file, or undefined when there is nothing to watch that every commit
 * writes: a database in memory, not in WAL mode, in exclusive locking mode (no other connection
 * can commit then), or a header that does not read as an initialised wal-index. The caller
 * checks the epoch the slow way then, as before.
 */
export function watchCommits(db: Db, file: string): CommitWatch | undefined {
  if (file === '' || db.memory) return undefined;
  if (String(db.pragma('journal_mode', { simple: true })).toLowerCase() !== 'wal') return undefined;
  if (String(db.pragma('locking_mode', { simple: true })).toLowerCase() !== 'normal') return undefined;
  let fd: number;
  try {
    fd = openSync(`${file}-shm`, 'r');
  } catch {
    return undefined;
  }
  const current = Buffer.alloc(HEADER_BYTES);
  const kept = Buffer.alloc(HEADER_BYTES);
  let hasKept = false;
  let lastReadWhole = false;
  let open = true;
  function close(): void {
    if (!open) return;
    open = false;
    hasKept = false;
    lastReadWhole = false;
    try {
      closeSync(fd);
    } catch {
      // Nothing to do: the watch is off either way.
    }
  }
  const read = (): boolean => {
    lastReadWhole = false;
    if (!open) return false;
    try {
      lastReadWhole = readSync(fd, current, 0, HEADER_BYTES, 0) === HEADER_BYTES;
    } catch {
      // A read that failed once is not trusted again: the slow check from now on.
      close();
    }
    return lastReadWhole;
  };
  const version = (): number => (endianness() === 'LE' ? current.readUInt32LE(0) : current.readUInt32BE(0));
  if (!read() || version() !== WAL_INDEX_VERSION || current[IS_INIT_OFFSET] !== 1) {
    close();
    return undefined;
  }
  return {
    unchanged: () => read() && hasKept && current.equals(kept),
    remember() {
      if (!lastReadWhole) return;
      current.copy(kept);
      hasKept = true;
    },
    close,
  };
}
