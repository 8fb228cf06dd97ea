import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { fileIdentity } from './files.js';
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
 * an eighth of the server's CPU time under load. SQLite's other processes and versions read this
 * header too, so its layout is part of what WAL mode keeps stable.
 */
export interface CommitWatch {
  /** Reads the header now: whether it is byte for byte what `remember()` last kept (never before the first). */
  unchanged(): boolean;
  /**
   * Keeps the header the last `unchanged()` read. Call it once the epoch that header stands for
   * has been read in full (data_version after the header, and whatever goes with it): if that
   * read throws, nothing is kept, and the next look checks again.
   */
  remember(): void;
  /**
   * Whether the file watched is still there. It goes when the connection leaves WAL mode (SQLite
   * removes the -shm file; back in WAL mode it makes a new one), and a watch on a removed file
   * would never see a commit again.
   */
  alive(): boolean;
  /** Stops watching; the descriptor is closed once that is safe (see `ShmDescriptor`). */
  close(): void;
}

const HEADER_BYTES = 48;
/** `WALINDEX_MAX_VERSION`: the only wal-index format since SQLite 3.7.0. */
const WAL_INDEX_VERSION = 3_007_000;
const IS_INIT_OFFSET = 12;

/**
 * Descriptors on -shm files, one per file, shared by the watches of this thread.
 *
 * SQLite's locks on the -shm file are POSIX record locks, which belong to the process: closing
 * any descriptor of the file drops every one of them, SQLite's included, and with them what keeps
 * another process from rebuilding the wal-index or checkpointing under a reader (corruption). So
 * a descriptor is closed only once no watch uses it and its file has no name left (`nlink` 0):
 * SQLite removes the -shm file only when no connection of any process has it open, and a file
 * renamed or behind a directory that cannot be read any more still counts as in use. (A -shm
 * file removed by hand while in use counts as gone; SQLite's coordination is broken then anyway.)
 * Until then it stays open, for the next watch on the same file.
 */
interface ShmDescriptor {
  readonly fd: number;
  readonly identity: string;
  users: number;
}

const descriptors: ShmDescriptor[] = [];

/** Whether the descriptor's file still has a name: false once it was removed (or cannot be told). */
function named(fd: number): boolean {
  try {
    return fstatSync(fd).nlink > 0;
  } catch {
    return false;
  }
}

/** A descriptor on the file at `path`, counted as used; undefined when it cannot be had. */
function acquire(path: string): ShmDescriptor | undefined {
  sweep();
  const identity = fileIdentity(path);
  if (identity === undefined) return undefined;
  let held = descriptors.find((descriptor) => descriptor.identity === identity);
  if (held === undefined) {
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch {
      return undefined;
    }
    let opened: string;
    try {
      const stats = fstatSync(fd, { bigint: true });
      opened = `${stats.dev}:${stats.ino}`;
    } catch {
      // Not known to be SQLite's file, and not closed either: swept once it has no name left.
      opened = '';
    }
    held = { fd, identity: opened, users: 0 };
    descriptors.push(held);
    // The name moved to another file between the two looks: not the one SQLite uses.
    if (held.identity !== identity) return undefined;
  }
  held.users += 1;
  return held;
}

function release(held: ShmDescriptor): void {
  held.users -= 1;
  sweep();
}

/** Closes the descriptors no watch uses whose file was removed. */
function sweep(): void {
  for (let index = descriptors.length - 1; index >= 0; index -= 1) {
    const descriptor = descriptors[index] as ShmDescriptor;
    if (descriptor.users > 0 || named(descriptor.fd)) continue;
    descriptors.splice(index, 1);
    try {
      closeSync(descriptor.fd);
    } catch {
      // Already unusable: nothing more to let go of.
    }
  }
}

/**
 * A `file:` name with parameters, which SQLite reads as a URI when URIs are on (better-sqlite3
 * turns them on with SQLITE_USE_URI=1): `vfs=unix-excl` keeps the wal-index in memory and never
 * opens the -shm file, so a -shm file a crashed process left there would never change;
 * `nolock`, `immutable` and the rest change locking in ways the watch does not follow.
 */
function hasUriParameters(name: string): boolean {
  return /^file:/i.test(name) && name.includes('?');
}

/**
 * A watch on `file`'s -shm file, or undefined when there is nothing to watch that every commit
 * writes: a database in memory, opened by a URI with parameters, not in WAL mode, in exclusive
 * locking mode (no other connection can commit then), or a header that does not read as an
 * initialised wal-index. The caller checks the epoch the slow way then, as before.
 */
export function watchCommits(db: Db, file: string): CommitWatch | undefined {
  if (file === '' || db.memory || hasUriParameters(db.name)) return undefined;
  if (String(db.pragma('journal_mode', { simple: true })).toLowerCase() !== 'wal') return undefined;
  if (String(db.pragma('locking_mode', { simple: true })).toLowerCase() !== 'normal') return undefined;
  const held = acquire(`${file}-shm`);
  if (held === undefined) return undefined;
  const current = Buffer.alloc(HEADER_BYTES);
  const kept = Buffer.alloc(HEADER_BYTES);
  let hasKept = false;
  let lastReadWhole = false;
  let watching = true;
  const close = (): void => {
    if (!watching) return;
    watching = false;
    hasKept = false;
    lastReadWhole = false;
    release(held);
  };
  const read = (): boolean => {
    lastReadWhole = false;
    if (!watching) return false;
    try {
      lastReadWhole = readSync(held.fd, current, 0, HEADER_BYTES, 0) === HEADER_BYTES;
    } catch {
      // A read that failed once is not trusted again: this watch stops, and the epoch makes a
      // new one at its next check of the file (a second later at most).
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
    alive: () => watching && named(held.fd),
    close,
  };
}
