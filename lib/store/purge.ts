/** How often a purge runs at most while there is no backlog. */
const PURGE_INTERVAL_MS = 60_000;

/**
 * Rows one purge deletes at most: a backlog (a day without writes, a restart after one) goes a
 * batch per write, never as one long delete that holds every other write back and leaves the WAL
 * file at its size.
 */
export const PURGE_BATCH = 1000;

/**
 * A purge that writes run in passing, inside their own transaction, so no scheduled job is needed:
 * a batch at most once a minute, or on every write while a backlog lasts. `deleteBatch` deletes
 * at most `batch` rows that are due at `now` and answers how many it deleted.
 */
export function batchedPurge(deleteBatch: (now: number, batch: number) => number): (now: number) => void {
  let last = Number.NEGATIVE_INFINITY;
  return (now) => {
    if (now >= last && now - last < PURGE_INTERVAL_MS) return;
    last = deleteBatch(now, PURGE_BATCH) < PURGE_BATCH ? now : Number.NEGATIVE_INFINITY;
  };
}
