import type { Principal } from '../../auth/authenticate.js';
import type { TaskView } from '../../schemas/resources.js';
import type { OrganisationStatements } from '../../store/organisations.js';
import type { TaskSourceRow } from '../../store/sources.js';
import type { TaskReadStatements, TaskRow } from '../../store/task-reads.js';
import { ServiceError } from '../errors.js';
import { isBlocked, isRunnable } from './state.js';
import { buildTaskViews, type RemainingMinutes } from './view.js';

/** For a caller at an instant: does the scheduler allocate this task (contract 5)? */
export type Allocation = (principal: Principal, now: number) => (row: TaskRow) => boolean;

/** Linked sources as the offer list needs them (contract 9). */
export interface OfferSources {
  /** The source items linked to these tasks. */
  itemsOf(taskIds: readonly number[]): readonly TaskSourceRow[];
  /** Refreshes the items now; resolves once the results are recorded. */
  refresh(items: readonly TaskSourceRow[]): Promise<unknown>;
  /** How old a refresh (successful or not) may be and still count when offering. */
  readonly maxAgeMs: number;
}

export interface TaskReadDependencies {
  readonly sources: OfferSources;
  readonly reads: TaskReadStatements;
  readonly organisations: OrganisationStatements;
  /** Remaining-time rules as seen by one resource at one instant. */
  readonly remaining: (resourceId: number, now: number) => RemainingMinutes;
  /** Whether the caller's plan gives a task working time within the horizon. */
  readonly allocation: Allocation;
}

/** The read use cases: one task, the offer list and the waiting list. */
export function taskReads(deps: TaskReadDependencies) {
  const { reads, organisations } = deps;

  function views(principal: Principal, rows: readonly TaskRow[], includeNotes: boolean, now: number): TaskView[] {
    return buildTaskViews(rows, reads, {
      principal,
      workspaceVersion: rows[0]?.workspaceVersion ?? organisations.workspaceVersion(principal.organisationId),
      includeNotes,
      remaining: deps.remaining(resourceId(principal), now),
    });
  }

  function resourceId(principal: Principal): number {
    if (principal.resource === null) throw new ServiceError('permission_denied', 'identity-only client');
    return principal.resource.id;
  }

  return {
    /** The full task with notes; ownership was checked by the pipeline. */
    getTask(principal: Principal, taskId: number, now: number): TaskView {
      const row = reads.task(taskId, now);
      if (row === undefined) throw new ServiceError('task_not_found');
      const [view] = views(principal, [row], true, now);
      if (view === undefined) throw new ServiceError('task_not_found');
      return view;
    },

    /**
     * Contract 5 and 9: runnable, assigned to the caller, no live lease, and every linked source
     * refreshed successfully within the last `maxAgeMs` (refreshing the stale ones first, which
     * is the only time this read waits for I/O). A source that fails omits its task.
     */
    listAvailable(principal: Principal, now: number): TaskView[] | Promise<TaskView[]> {
      const offer = (): { rows: TaskRow[]; stale: TaskSourceRow[] } => {
        const allocated = deps.allocation(principal, now);
        const candidates = reads.unfinishedForResource(resourceId(principal), now)
          .filter((row) => row.liveClaim !== 1 && isRunnable(row, now, allocated));
        const items = candidates.length === 0 ? [] : deps.sources.itemsOf(candidates.map((row) => row.id));
        const stale = items.filter((item) => item.lastAttemptUtc === null || now - item.lastAttemptUtc >= deps.sources.maxAgeMs);
        const unavailable = new Set(items.filter((item) => item.isAvailable !== 1).map((item) => item.taskId));
        return { rows: candidates.filter((row) => !unavailable.has(row.id)), stale };
      };
      const first = offer();
      if (first.stale.length === 0) return views(principal, first.rows, false, now);
      return deps.sources.refresh(first.stale).then(() => views(principal, offer().rows, false, now));
    },

    /**
     * Contract 5: assigned, not Done, blocked. Workers poll this list for replies, so stale
     * linked sources are refreshed first (as for offers); a failing source hides nothing here.
     */
    listWaiting(principal: Principal, now: number): TaskView[] | Promise<TaskView[]> {
      const waiting = () => reads.unfinishedForResource(resourceId(principal), now).filter(isBlocked);
      const rows = waiting();
      const items = rows.length === 0 ? [] : deps.sources.itemsOf(rows.map((row) => row.id));
      const stale = items.filter((item) => item.lastAttemptUtc === null || now - item.lastAttemptUtc >= deps.sources.maxAgeMs);
      if (stale.length === 0) return views(principal, rows, false, now);
      return deps.sources.refresh(stale).then(() => views(principal, waiting(), false, now));
    },
  };
}

export type TaskReads = ReturnType<typeof taskReads>;
