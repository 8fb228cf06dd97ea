import type { RemainingMinutes } from '../domain/tasks/view.js';
import type { CalendarStatements } from '../store/calendars.js';
import type { TaskRow } from '../store/task-reads.js';
import { localToEpochMs } from '../time/london.js';
import { workingMinutesBetween, type WeeklyCalendar } from './calendar.js';

/**
 * Beyond this much elapsed time every answer is settled: estimates are at most 1000000 minutes,
 * so the remaining time is 0, and `remainingMinutes` input would push the estimate past its bound.
 */
export const ELAPSED_MINUTES_LIMIT = 1_000_001;

/**
 * Elapsed planned duration (contract 5): the resource's working time from `startedAt` to now,
 * in whole minutes, at most ELAPSED_MINUTES_LIMIT; 0 when the task has not started.
 */
export function elapsedPlannedMinutes(calendar: WeeklyCalendar, startedAt: string | null, now: number): number {
  if (startedAt === null) return 0;
  return Math.floor(workingMinutesBetween(calendar, localToEpochMs(startedAt), now, ELAPSED_MINUTES_LIMIT));
}

/** The fields of a task that remaining time depends on. */
export interface RemainingBasis {
  readonly status: 'Ready' | 'InProgress' | 'Done';
  readonly estimatedMinutes: number;
  readonly resourceMode: 'Independent' | 'Collaboration';
}

/**
 * One assignee's remaining minutes: Independent assignees carry their own estimate (or the
 * task's) less elapsed time; Collaboration assignees share the task's remaining time.
 */
export function assigneeRemaining(task: RemainingBasis, ownEstimate: number | null, assigneeCount: number, elapsed: number): number {
  if (task.status === 'Done') return 0;
  if (task.resourceMode === 'Collaboration') {
    return Math.ceil(Math.max(0, task.estimatedMinutes - elapsed) / Math.max(1, assigneeCount));
  }
  return Math.max(0, (ownEstimate ?? task.estimatedMinutes) - elapsed);
}

/**
 * Remaining minutes as the caller's resource sees them: max(0, estimate - elapsed planned
 * duration), 0 when Done. Independent assignees carry their own estimate (or the task's);
 * Collaboration assignees share the task's remaining time.
 */
export function remainingMinutesFor(calendars: CalendarStatements, resourceId: number, now: number): RemainingMinutes {
  const calendar = calendars.calendarOf(resourceId);
  const elapsed = new Map<number, number>();
  const elapsedOf = (row: TaskRow): number => {
    let minutes = elapsed.get(row.id);
    if (minutes === undefined) {
      minutes = elapsedPlannedMinutes(calendar, row.startedAt, now);
      elapsed.set(row.id, minutes);
    }
    return minutes;
  };
  const taskRemaining = (row: TaskRow): number =>
    row.status === 'Done' ? 0 : Math.max(0, row.estimatedMinutes - elapsedOf(row));
  return {
    task: taskRemaining,
    assignee: (row, assigneeEstimate, assigneeCount) =>
      assigneeRemaining(row, assigneeEstimate, assigneeCount, row.status === 'Done' ? 0 : elapsedOf(row)),
  };
}
