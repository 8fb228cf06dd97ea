import type { Db } from './open.js';

/** Runs writes in shared transactions and answers them once their transaction is on disk. */
export interface GroupCommit {
  /**
   * Runs `work` (itself a better-sqlite3 transaction function, which becomes a savepoint inside
   * the shared transaction) and resolves with its result after the batch commits. A throw from
   * `work` has already rolled back its own savepoint and is answered at once.
   */
  run<T>(work: () => T): Promise<T>;
}

interface Waiting {
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Group commit: the first write opens `BEGIN IMMEDIATE` and schedules the commit for the end of
 * the current turn of the event loop (`setImmediate`); writes arriving in the meantime join the
 * same transaction. With synchronous = FULL one fsync then covers the whole batch, and no write
 * is acknowledged before the commit that makes it durable.
 */
export function groupCommit(db: Db): GroupCommit {
  let waiting: Waiting[] = [];

  function flush(): void {
    const batch = waiting;
    waiting = [];
    try {
      db.exec('COMMIT');
    } catch (error) {
      try {
        if (db.inTransaction) db.exec('ROLLBACK');
      } catch {
        // The connection is beyond saving; every write of the batch is refused below.
      }
      for (const write of batch) write.reject(error);
      return;
    }
    for (const write of batch) write.resolve();
  }

  return {
    run<T>(work: () => T): Promise<T> {
      if (!db.inTransaction) {
        db.exec('BEGIN IMMEDIATE');
        setImmediate(flush);
      }
      let value: T;
      try {
        value = work();
      } catch (error) {
        return Promise.reject(error);
      }
      return new Promise<T>((resolve, reject) => {
        waiting.push({ resolve: () => resolve(value), reject });
      });
    },
  };
}
