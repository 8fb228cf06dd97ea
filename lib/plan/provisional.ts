import type { RemainingMinutes } from '../domain/tasks/view.js';
import type { TaskRow } from '../store/task-reads.js';

/**
 * Remaining time before the planning engine exists: the whole estimate until the task is Done.
 * Independent assignees carry their own estimate (or the task's); Collaboration assignees share
 * the task's. The scheduler replaces this with elapsed working time from the plan.
 */
export const provisionalRemaining: RemainingMinutes = {
  task: (row: TaskRow) => (row.status === 'Done' ? 0 : row.estimatedMinutes),
  assignee(row: TaskRow, assigneeEstimate: number | null, assigneeCount: number) {
    if (row.status === 'Done') return 0;
    if (row.resourceMode === 'Collaboration') return Math.ceil(row.estimatedMinutes / Math.max(1, assigneeCount));
    return assigneeEstimate ?? row.estimatedMinutes;
  },
};

/** Until the scheduler lands, every task with time left counts as allocated. */
export const provisionalAllocation = (_row: TaskRow): boolean => true;
