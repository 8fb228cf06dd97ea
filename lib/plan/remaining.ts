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
    assignee(row, assigneeEstimate, assigneeCount) {
      if (row.status === 'Done') return 0;
      if (row.resourceMode === 'Collaboration') return Math.ceil(taskRemaining(row) / Math.max(1, assigneeCount));
      return Math.max(0, (assigneeEstimate ?? row.estimatedMinutes) - elapsedOf(row));
    },
  };
}

/**
 * Whether the scheduler has given the task working time. Until the planning engine places work
 * into calendars, every unfinished, unblocked task with time left counts as allocated.
 */
export const provisionalAllocation = (_row: TaskRow): boolean => true;
