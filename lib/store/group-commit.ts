import { DatabaseFileGone, TransactionLost, type Db } from './open.js';

/** Runs writes in shared transactions and answers them once their transaction is on disk. */
export interface GroupCommit {
  /**
   * Runs `work` (itself a better-sqlite3 transaction function, which becomes a savepoint inside
   * the shared transaction) and resolves with its result after the batch commits. A throw from
   * `work` has already rolled back its own savepoint; the refusal may still rest on the batch's
   * uncommitted rows (a 412 naming a version not yet committed), so it rejects once the batch has
   * ended: with the refusal if the batch committed, with RefusalWithdrawn if it was rolled back.
   */
  run<T>(work: () => T): Promise<T>;
  /** Whether a batch is open: reads made now would see its uncommitted rows. */
  readonly open: boolean;
  /**
   * Resolves, never rejects, once the batch open now has ended: true when it committed, false
   * when it was rolled back. With no batch open, true at once.
   */
  settled(): Promise<boolean>;
  /**
   * Rolls back the batch open now, if any, and rejects every write that joined it with `error`
   * (a service being closed: its connection may go to another service at once).
   */
  abandonOpen(error: unknown): void;
}

/**
 * The rejection of a refusal decided inside a batch that was then rolled back: what it rested on
 * never happened, and the client is asked to retry. `refusal` is what the write threw; `failure`
 * what ended the batch, `unreported` when no write of the batch was told of it (a batch of
 * refusals alone), so that it is logged once all the same.
 */
export class RefusalWithdrawn extends Error {
  constructor(
    readonly refusal: unknown,
    readonly failure: unknown,
    readonly unreported: boolean,
  ) {
    super('the write batch this refusal was decided in was rolled back');
  }
}

interface Waiting {
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

interface Batch {
  readonly waiting: Waiting[];
  /** What ended the batch, if it was rolled back. */
  failure?: unknown;
  /** Whether anyone has been told of `failure` (a write that joined, or a withdrawn refusal). */
  failureReported: boolean;
  readonly ended: Promise<boolean>;
  readonly end: (committed: boolean) => void;
  /** Set once the batch is over, committed or not: its scheduled flush then does nothing. */
  over: boolean;
}

/**
 * Group commit: the first write opens `BEGIN IMMEDIATE` and schedules the commit for the end of
 * the current turn of the event loop (`setImmediate`); writes arriving in the meantime join the
 * same transaction. With synchronous = FULL one fsync then covers the whole batch, and no write
 * is acknowledged before the commit that makes it durable.
 */
export function groupCommit(db: Db, fileInPlace: () => boolean = () => true): GroupCommit {
  let batch: Batch | null = null;
  // Prepared once: exec would compile the statement again for every batch.
  const begin = db.prepare('BEGIN IMMEDIATE');
  const commit = db.prepare('COMMIT');
  const rollback = db.prepare('ROLLBACK');

  function openBatch(): Batch {
    begin.run();
    let end: (committed: boolean) => void = () => undefined;
    const ended = new Promise<boolean>((resolve) => {
      end = resolve;
    });
    const opened: Batch = { waiting: [], ended, end, over: false, failureReported: false };
    setImmediate(() => flush(opened));
    return opened;
  }

  /** Ends a batch that is no more, telling every write that joined it: nothing of it was kept. */
  function abandon(ending: Batch, error: unknown): void {
    // Closed before anyone is told: what they run next must not join (or wait for) this batch.
    if (batch === ending) batch = null;
    ending.over = true;
    try {
      if (db.inTransaction) rollback.run();
    } catch {
      // The connection is beyond saving; every write of the batch is refused below.
    }
    ending.failure = error;
    ending.failureReported = ending.waiting.length > 0;
    for (const write of ending.waiting) write.reject(error);
    ending.end(false);
  }

  function flush(ending: Batch): void {
    if (ending.over) return;
    try {
      // Ended by SQLite in a statement run beside the batch's writes (a read's I/O error, say).
      if (!db.inTransaction) throw new TransactionLost();
      // Committed into a file no longer at its path, the batch would be lost when the service stops.
      if (!fileInPlace()) throw new DatabaseFileGone();
      commit.run();
    } catch (error) {
      abandon(ending, error);
      return;
    }
    if (batch === ending) batch = null;
    ending.over = true;
    for (const write of ending.waiting) write.resolve();
    ending.end(true);
  }

  return {
    run<T>(work: () => T): Promise<T> {
      // A statement outside any write (authentication, a target check) may have met such a
      // failure while the batch was open: the batch is gone, and this write must not run outside it.
      if (batch !== null && !db.inTransaction) abandon(batch, new TransactionLost());
      let current: Batch | undefined;
      let value: T;
      try {
        current = batch ?? (batch = openBatch());
        value = work();
      } catch (error) {
        // Some failures (a full disk, an I/O error) make SQLite roll back the whole transaction,
        // not just this write's savepoint: the batch is gone with every write that joined it, and
        // a write run now would commit on its own, outside any batch.
        if (batch !== null && !db.inTransaction) {
          const lost = batch;
          abandon(lost, error);
          // This write reports the failure itself: its batch's refusals need not again.
          lost.failureReported = true;
          return Promise.reject(error);
        }
        if (current === undefined) return Promise.reject(error);
        const decidedIn = current;
        return decidedIn.ended.then((committed) => {
          if (committed) throw error;
          const unreported = !decidedIn.failureReported;
          decidedIn.failureReported = true;
          throw new RefusalWithdrawn(error, decidedIn.failure, unreported);
        });
      }
      return new Promise<T>((resolve, reject) => {
        current.waiting.push({ resolve: () => resolve(value), reject });
      });
    },
    get open(): boolean {
      return batch !== null;
    },
    settled(): Promise<boolean> {
      return batch === null ? Promise.resolve(true) : batch.ended;
    },
    abandonOpen(error: unknown): void {
      if (batch !== null) abandon(batch, error);
    },
  };
}

/**
 * Runs `work` (a transaction of its own) once no batch is open, so that it joins none: one rolled
 * back would take the work with it, unannounced. The last look at `open` and the call are one
 * synchronous step, so no batch can open in between.
 */
export async function outsideBatch<T>(batches: Pick<GroupCommit, 'open' | 'settled'>, work: () => T): Promise<T> {
  while (batches.open) await batches.settled();
  return work();
}
