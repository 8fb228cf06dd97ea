import type { Db } from './open.js';

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
export function sameData(a: ReadEpoch, b: ReadEpoch): boolean {
  return a.changes === b.changes && a.dataVersion === b.dataVersion;
}

/** Read transactions and the epoch of what they see. */
export function snapshotStatements(db: Db) {
  const epoch = db.prepare<[], [number, number, number | null]>(`
    SELECT total_changes(),
           (SELECT data_version FROM pragma_data_version),
           (SELECT generation FROM credential_generation WHERE id = 1)`).raw();
  const begin = db.prepare('BEGIN');
  const commit = db.prepare('COMMIT');
  let reading = false;

  return {
    /**
     * The current epoch. Only meaningful for caching outside a write transaction: inside one,
     * uncommitted rows are visible and a rollback would not move `changes` back.
     */
    epoch(): ReadEpoch {
      const row = epoch.get();
      return { changes: row?.[0] ?? 0, dataVersion: row?.[1] ?? 0, credentials: row?.[2] ?? 0 };
    },

    /**
     * False while a write transaction (a group commit batch, say) is open on the connection: what
     * is read then may include uncommitted rows, which a rollback would take back without moving
     * the epoch.
     */
    get committedOnly(): boolean {
      return reading || !db.inTransaction;
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
