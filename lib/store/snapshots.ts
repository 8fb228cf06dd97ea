import { watchCommits } from './commit-watch.js';
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

/** Read transactions and the epoch of what they see. */
export function snapshotStatements(db: Db) {
  // Separate statements: the pragma_data_version table function would be parsed on every call.
  const dataVersion = db.prepare<[], number>('PRAGMA data_version').pluck();
  const changes = db.prepare<[], number>('SELECT total_changes()').pluck();
  const credentials = db.prepare<[], number>('SELECT generation FROM credential_generation WHERE id = 1').pluck();
  const begin = db.prepare('BEGIN');
  const commit = db.prepare('COMMIT');
  let last: ReadEpoch = { changes: -1, dataVersion: -1, credentials: -1 };
  // After a read, so that a database just switched to WAL has its wal-index set up.
  dataVersion.get();
  const commits = watchCommits(db, mainFile(db));

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
      if (commits?.unchanged() === true && ownChanges === last.changes) return last;
      const now = { changes: ownChanges, dataVersion: dataVersion.get() ?? 0 };
      if (!sameData(now, last)) last = { ...now, credentials: credentials.get() ?? 0 };
      commits?.remember();
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
     * the epoch.
     */
    get committedOnly(): boolean {
      return !db.inTransaction;
    },

    /** Stops watching the -shm file (its descriptor is closed once SQLite has removed the file). */
    close(): void {
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
      try {
        return read();
      } finally {
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
