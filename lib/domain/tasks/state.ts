import type { BlockingReason } from '../enumerations.js';
import type { TaskCandidateRow, TaskRow } from '../../store/task-reads.js';
import { localToEpochMs } from '../../time/london.js';

/** The three facts that block a task (contract 5), as stored or as a write leaves them. */
type BlockingFacts = Pick<TaskRow, 'unmetPrerequisites' | 'humanBlocker' | 'isWaiting'>;

/** Contract 5: exactly the reasons that hold, in this order. */
export function blockingReasons(row: BlockingFacts): BlockingReason[] {
  const reasons: BlockingReason[] = [];
  if (row.unmetPrerequisites === 1) reasons.push('unmet prerequisites');
  if (row.humanBlocker === 1) reasons.push('human assistance');
  if (row.isWaiting === 1) reasons.push('external waiting');
  return reasons;
}

export function isBlocked(row: BlockingFacts): boolean {
  return blockingReasons(row).length > 0;
}

/** A planning wall time that has not yet arrived holds work back. */
function notYet(local: string | null, now: number): boolean {
  return local !== null && localToEpochMs(local) > now;
}

/** The instant a planning wall time arrives, if that is still to come; otherwise never. */
export function arrivesAfter(local: string | null, now: number): number {
  if (local === null) return Number.POSITIVE_INFINITY;
  const at = localToEpochMs(local);
  return at > now ? at : Number.POSITIVE_INFINITY;
}

/**
 * Contract 5, runnable: not Done, not blocked, project active, earliestStart and releaseDate not
 * after now, and a current scheduler allocation or a zero estimate (reconciliation work).
 */
export function isRunnable(row: TaskCandidateRow, now: number, hasAllocation: (row: TaskCandidateRow) => boolean): boolean {
  if (notYet(row.earliestStart, now) || notYet(row.releaseDate, now)) return false;
  return isRunnableOnceArrived(row, hasAllocation);
}

/**
 * `isRunnable` for a task whose earliestStart and releaseDate are known to have arrived (the
 * offer has already turned them into instants, and a wall time costs a parse each time).
 */
export function isRunnableOnceArrived(row: TaskCandidateRow, hasAllocation: (row: TaskCandidateRow) => boolean): boolean {
  if (row.status === 'Done' || isBlocked(row) || row.projectActive !== 1) return false;
  return row.estimatedMinutes === 0 || hasAllocation(row);
}
