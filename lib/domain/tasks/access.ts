import { type Principal, workerOf } from '../../auth/authenticate.js';
import type { TaskReadStatements } from '../../store/task-reads.js';
import { ServiceError } from '../errors.js';
import type { EpochMemo, ReadEpoch } from '../../store/snapshots.js';

/** Access rows already read at the request's epoch (null: no such task). */
export interface SeenAccess {
  readonly memo: EpochMemo<TaskAccess | null>;
  readonly epoch: ReadEpoch;
  /** False inside a write transaction: nothing read then is remembered. */
  readonly cacheable: boolean;
}

/** A task's organisation and whether the caller's resource is assigned to it. */
export type TaskAccess = NonNullable<ReturnType<TaskReadStatements['access']>>;

/**
 * Step 7 for task paths: a task of another organisation is indistinguishable from a missing one
 * (404), while one of the caller's organisation assigned only to others is 403.
 */
export function assertTaskOwned(principal: Principal, taskId: number, reads: TaskReadStatements, seen?: SeenAccess): void {
  const resource = workerOf(principal);
  const key = `${taskId}:${resource.id}`;
  let access = seen?.memo.get(key, seen.epoch);
  if (access === undefined) {
    access = reads.access(taskId, resource.id) ?? null;
    if (seen?.cacheable === true) seen.memo.set(key, seen.epoch, access);
  }
  if (access === null || access.organisationId !== principal.organisationId) {
    throw new ServiceError('task_not_found');
  }
  if (access.assigned !== 1) throw new ServiceError('task_not_owned');
}
