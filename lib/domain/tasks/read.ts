import { type Principal, workerOf } from '../../auth/authenticate.js';
import type { TaskView } from '../../schemas/resources.js';
import type { TaskSourceRow } from '../../store/sources.js';
import type { TaskReadStatements, TaskRow } from '../../store/task-reads.js';
import { ServiceError } from '../errors.js';
import { arrivesAfter, isBlocked, isRunnableOnceArrived } from './state.js';
import type { RemainingMinutes } from '../planning/remaining-minutes.js';
import { buildTaskViews } from './view.js';

/** For a caller at an instant: which tasks the scheduler allocates (contract 5), and until when. */
export type Allocation = (principal: Principal, now: number) => {
  readonly allocated: (row: Pick<TaskRow, 'id'>) => boolean;
  /** The plan behind the answer is replaced at this instant at the latest. */
  readonly validUntil: number;
};

/** A read answer and the instant from which it may differ even if no data changes. */
export interface Timed<T> {
  readonly value: T;
  readonly validUntil: number;
}

/** Linked sources as the offer list needs them (contract 9). */
export interface OfferSources {
  /** The source items linked to these tasks. */
  itemsOf(taskIds: readonly number[]): readonly TaskSourceRow[];
  /** The items the resource's published, still open assistance requests await a reply from. */
  expectingReplies(resourceId: number): readonly TaskSourceRow[];
  /**
   * Refreshes the items now, then runs `read` once the results are recorded and no write batch
   * is open, in one read transaction: a list read after waiting sees committed rows only, as a
   * list read on arrival does (a batch opened meanwhile may still be rolled back).
   */
  refreshThenRead<T>(items: readonly TaskSourceRow[], read: () => T): Promise<T>;
  /** How old a refresh (successful or not) may be and still count when offering. */
  readonly maxAgeMs: number;
}

export interface TaskReadDependencies {
  readonly sources: OfferSources;
  readonly reads: TaskReadStatements;
  /** Remaining-time rules as seen by one resource at one instant. */
  readonly remaining: (resourceId: number, now: number) => RemainingMinutes;
  /** Whether the caller's plan gives a task working time within the horizon. */
  readonly allocation: Allocation;
}

/** The read use cases: one task, the offer list and the waiting list. */
export function taskReads(deps: TaskReadDependencies) {
  const { reads } = deps;

  /** Views of `rows`, valid until `until` or until elapsed time changes a remaining figure. */
  function views(principal: Principal, rows: readonly TaskRow[], includeNotes: boolean, now: number, until: number): Timed<TaskView[]> {
    const remaining = deps.remaining(resourceId(principal), now);
    const value = buildTaskViews(rows, reads, { principal, includeNotes, remaining });
    return { value, validUntil: Math.min(until, remaining.validUntil()) };
  }

  /**
   * When a stored answer must be read afresh for the oldest of these items. At exactly that age
   * an item still counts as fresh (see `isStale`): the answer read then is the same, only not
   * reused.
   */
  function freshUntil(items: readonly TaskSourceRow[]): number {
    let until = Number.POSITIVE_INFINITY;
    for (const item of items) if (item.lastAttemptUtc !== null) until = Math.min(until, item.lastAttemptUtc + deps.sources.maxAgeMs);
    return until;
  }

  // "At most 15 s old" (contract 9): an item refreshed exactly `maxAgeMs` ago is still fresh.
  // 0 turns reuse off: every list refreshes, even in the millisecond of the last refresh. An
  // attempt after `now` means the clock was set back: its age is unknown, so it is refreshed
  // rather than trusted (or its failure remembered) until the clock catches up.
  const isStale = (now: number) => (item: TaskSourceRow) =>
    item.lastAttemptUtc === null || deps.sources.maxAgeMs === 0 || item.lastAttemptUtc > now ||
    now - item.lastAttemptUtc > deps.sources.maxAgeMs;

  const resourceId = (principal: Principal): number => workerOf(principal).id;

  return {
    /** The full task with notes; ownership was checked by the pipeline. */
    getTask(principal: Principal, taskId: number, now: number): Timed<TaskView> {
      const row = reads.task(taskId, now);
      if (row === undefined) throw new ServiceError('task_not_found');
      const { value: [view], validUntil } = views(principal, [row], true, now, Number.POSITIVE_INFINITY);
      // One view per row.
      return { value: view as TaskView, validUntil };
    },

    /**
     * Contract 5 and 9: runnable, assigned to the caller, no live lease, and every linked source
     * refreshed successfully within the last `maxAgeMs` (refreshing the stale ones first, which
     * is the only time this read waits for I/O). A source that fails omits its task.
     */
    listAvailable(principal: Principal, now: number): Timed<TaskView[]> | Promise<Timed<TaskView[]>> {
      /** `asked`: after a refresh, the items it asked about. */
      const offer = (asked?: ReadonlySet<number>): { rows: TaskRow[]; stale: TaskSourceRow[]; until: number } => {
        const plan = deps.allocation(principal, now);
        let until = plan.validUntil;
        const offered = reads.unfinishedForResource(resourceId(principal), now).filter((row) => {
          // Time alone changes the offer when a lease expires or a start or release date arrives.
          if (row.liveClaimExpiresUtc !== null) until = Math.min(until, row.liveClaimExpiresUtc);
          const arrives = Math.min(arrivesAfter(row.earliestStart, now), arrivesAfter(row.releaseDate, now));
          until = Math.min(until, arrives);
          return row.liveClaimExpiresUtc === null && arrives === Number.POSITIVE_INFINITY && isRunnableOnceArrived(row, plan.allocated);
        });
        const items = offered.length === 0 ? [] : deps.sources.itemsOf(offered.map((row) => row.id));
        const stale = items.filter(isStale(now));
        const unavailable = new Set(items.filter((item) => item.isAvailable !== 1).map((item) => item.taskId));
        // A task that became offerable while the refresh was under way (its lease released, say)
        // may have items it did not ask about: not refreshed, they leave the task to the next list.
        if (asked !== undefined) for (const item of stale) if (!asked.has(item.id)) unavailable.add(item.taskId);
        until = Math.min(until, freshUntil(items));
        const ids = offered.flatMap((row) => (unavailable.has(row.id) ? [] : [row.id]));
        return { rows: reads.inOfferOrder(ids, now), stale, until };
      };
      const first = offer();
      if (first.stale.length === 0) return views(principal, first.rows, false, now, first.until);
      // An answer that waited for a refresh is not reused (the refresh moved the data epoch).
      const asked = new Set(first.stale.map((item) => item.id));
      return deps.sources.refreshThenRead(first.stale, () => views(principal, offer(asked).rows, false, now, now));
    },

    /**
     * Contract 5: assigned, not Done, blocked. Workers poll this list for replies (the spec's
     * Events), so stale linked sources are refreshed first (as for offers): those of the listed
     * tasks, and those awaiting a reply to a published request from any of the caller's tasks,
     * listed or not (a non-blocking question on a leased task, say). A failing source hides
     * nothing here.
     */
    listWaiting(principal: Principal, now: number): Timed<TaskView[]> | Promise<Timed<TaskView[]>> {
      const resource = resourceId(principal);
      const waiting = () => reads.inOfferOrder(reads.unfinishedForResource(resource, now).flatMap((row) => (isBlocked(row) ? [row.id] : [])), now);
      const rows = waiting();
      const listed = rows.length === 0 ? [] : deps.sources.itemsOf(rows.map((row) => row.id));
      const items = [...listed, ...deps.sources.expectingReplies(resource)];
      const stale = items.filter(isStale(now));
      if (stale.length === 0) return views(principal, rows, false, now, freshUntil(items));
      // An answer that waited for a refresh is not reused (the refresh moved the data epoch).
      return deps.sources.refreshThenRead(stale, () => views(principal, waiting(), false, now, now));
    },
  };
}

export type TaskReads = ReturnType<typeof taskReads>;
