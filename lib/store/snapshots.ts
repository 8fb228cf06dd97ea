import { watchCommits, type CommitWatch } from './commit-watch.js';
import { mainFile, type Db } from './open.js';

/**
 * What in-memory copies of database reads are checked against. Any committed change by another
 * connection moves `dataVersion`; any row this connection inserts, updates or deletes (the
 * service's own writes, an embedder's SQL on the same handle, triggers included) moves `changes`;
 * `credentials` moves only with what authentication reads (see `credential_generation` in
 * schema.sql), so verified credentials outlive ordinary writes.
 */
export interface ReadEpoch {
  readonly changes: number;
  readonly dataVersion: number;
  readonly credentials: number;
}

/** Whether two epochs saw the same data (credentials aside: they have their own generation). */
export function sameData(a: Omit<ReadEpoch, 'credentials'>, b: Omit<ReadEpoch, 'credentials'>): boolean {
  return a.changes === b.changes && a.dataVersion === b.dataVersion;
}

export interface SnapshotOptions {
  /** How commits by other connections are watched for (tests give their own). */
  readonly watchCommits?: (db: Db, file: string) => CommitWatch | undefined;
  /**
   * How often, at most, a cached read checks that the watched -shm file is still the one SQLite
   * uses (a connection taken out of WAL mode removes it). Real time, not the service's clock.
   */
  readonly watchCheckMs?: number;
}

/** Read transactions and the epoch of what they see. */
export function snapshotStatements(db: Db, options: SnapshotOptions = {}) {
  // Separate statements: the pragma_data_version table function would be parsed on every call.
  const dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
  const changes = db.prepare<[], number>('SELECT total_changes()').pluck();
  const credentials = db.prepare<[], number>('SELECT generation FROM credential_generation WHERE id = 1').pluck();
  const begin = db.prepare('BEGIN');
  const commit = db.prepare('COMMIT');
  let last: ReadEpoch = { changes: -1, dataVersion: -1, credentials: -1 };
  // After a read, so that a database just switched to WAL has its wal-index set up.
  dataVersion.get();
  const file = mainFile(db);
  const watch = options.watchCommits ?? watchCommits;
  const watchCheckMs = options.watchCheckMs ?? 1000;
  let commits = watch(db, file);
  let watchCheckedAt = performance.now();
  let closed = false;
  // True while `within` holds its own read transaction, which sees committed rows only.
  let reading = false;

  /**
   * The watch, checked at most every `watchCheckMs` to still watch the file SQLite uses: SQL on
   * this connection that leaves WAL mode (SQLite allows it only while no other connection has
   * the file open) removes the -shm file. Then a new watch, if the connection is back in WAL
   * mode, or none.
   */
  const currentWatch = (): CommitWatch | undefined => {
    // Once closed, never watched again: nothing would release a new watch.
    if (commits === undefined || closed) return undefined;
    const now = performance.now();
    if (now - watchCheckedAt < watchCheckMs) return commits;
    watchCheckedAt = now;
    if (commits.alive()) return commits;
    commits.close();
    commits = watch(db, file);
    return commits;
  };

  return {
    /**
     * The current epoch: this connection's change counter and, when the wal-index header shows
     * a commit since the last call (or cannot be watched), `PRAGMA data_version`; the credential
     * generation only when something changed. Only meaningful for caching outside a write
     * transaction: inside one, uncommitted rows are visible and a rollback would not move
     * `changes` back.
     */
    epoch(): ReadEpoch {
      const ownChanges = changes.get() ?? 0;
      // An uncommitted generation is never remembered: a rollback would not move `changes`.
      if (db.inTransaction) return { changes: ownChanges, dataVersion: dataVersion.get() ?? 0, credentials: credentials.get() ?? 0 };
      // The header is read before data_version: a commit between the two shows as a change next
      // time, never as seen.
      const watching = currentWatch();
      if (watching?.unchanged() === true && ownChanges === last.changes) return last;
      const now = { changes: ownChanges, dataVersion: dataVersion.get() ?? 0 };
      if (!sameData(now, last)) last = { ...now, credentials: credentials.get() ?? 0 };
      watching?.remember();
      return last;
    },

    /**
     * Whether credentials verified at this generation may be remembered. Inside a write
     * transaction only when the generation is the last one seen committed: generations only grow,
     * so an equal one means the transaction has not touched what authentication reads.
     */
    credentialsCommitted(generation: number): boolean {
      return !db.inTransaction || generation === last.credentials;
    },

    /**
     * False while a write transaction (a group commit batch, say) is open on the connection: what
     * is read then may include uncommitted rows, which a rollback would take back without moving
     * the epoch (nor the workspace version: the next commit may reach the same number).
     */
    get committedOnly(): boolean {
      return !db.inTransaction || reading;
    },

    /** Stops watching the -shm file (its descriptor is closed once SQLite has removed the file). */
    close(): void {
      closed = true;
      commits?.close();
    },

    /**
     * Runs synchronous reads in one read transaction: one consistent snapshot, and one round of
     * WAL locking instead of one per statement. Inside an open transaction it just runs them.
     * `read` must not write: a deferred transaction that starts writing can meet SQLITE_BUSY.
     */
    within<T>(read: () => T): T {
      if (db.inTransaction) return read();
      begin.run();
      reading = true;
      try {
        return read();
      } finally {
        reading = false;
        if (db.inTransaction) commit.run();
      }
    },
  };
}

export type SnapshotStatements = ReturnType<typeof snapshotStatements>;

/**
 * Small values read from the database (a task's organisation and assignment, say), kept while
 * the data epoch they were read at is current. At most `maxEntries`; a full memo starts over.
 */
export class EpochMemo<V> {
  readonly #entries = new Map<string, { readonly epoch: ReadEpoch; readonly value: V }>();
  readonly #maxEntries: number;

  constructor(maxEntries = 10_000) {
    this.#maxEntries = maxEntries;
  }

  /** The value under `key` if it was read at this epoch's data. */
  get(key: string, epoch: ReadEpoch): V | undefined {
    const entry = this.#entries.get(key);
    return entry !== undefined && sameData(entry.epoch, epoch) ? entry.value : undefined;
  }

  set(key: string, epoch: ReadEpoch, value: V): void {
    if (this.#entries.size >= this.#maxEntries) this.#entries.clear();
    this.#entries.set(key, { epoch, value });
  }
}
