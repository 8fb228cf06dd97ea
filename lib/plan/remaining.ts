import type { Lifecycle, ResourceMode, TaskStatus } from '../domain/enumerations.js';
import { MAX_MINUTES } from '../domain/limits.js';
import { localToEpochMs } from '../time/london.js';
import { workingMinutesBetween, type WeeklyCalendar } from './calendar.js';

/**
 * Beyond this much elapsed time every answer is settled: estimates are at most MAX_MINUTES, so
 * the remaining time is 0, and `remainingMinutes` input would push the estimate past its bound.
 */
export const ELAPSED_MINUTES_LIMIT = MAX_MINUTES + 1;

/**
 * Elapsed planned duration (contract 5): the resource's working time from `startedAt` to now,
 * in whole minutes, at most ELAPSED_MINUTES_LIMIT; 0 when the task has not started.
 */
export function elapsedPlannedMinutes(calendar: WeeklyCalendar, startedAt: string | null, now: number): number {
  return elapsedUntilChange(calendar, startedAt, now).minutes;
}

/**
 * How many times faster than real time working time can grow: the most working intervals of one
 * day that cover the same minute. 1 for any calendar the fixture loader accepts (it refuses
 * overlaps); one written with SQL may overlap, and its overlaps count twice.
 */
function workingRate(calendar: WeeklyCalendar): number {
  let rate = 1;
  for (const intervals of calendar.values()) {
    // At the same minute an interval's end comes before another's start: touching is no overlap.
    const edges = intervals.flatMap(([start, end]) => [[start, 1], [end, -1]] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let depth = 0;
    for (const [, step] of edges) rate = Math.max(rate, (depth += step));
  }
  return rate;
}

/**
 * `elapsedPlannedMinutes`, and the instant before which it certainly stays the same. Working
 * time grows at most `workingRate` times as fast as real time (disjoint wall intervals are
 * disjoint in real time, clock changes or not): the answer cannot reach the next whole minute
 * sooner than that. Past the limit it never changes.
 */
export function elapsedUntilChange(
  calendar: WeeklyCalendar, startedAt: string | null, now: number,
): { minutes: number; until: number; minutesPerMinute: number } {
  return elapsedSinceUntilChange(calendar, startedAt === null ? null : localToEpochMs(startedAt), now);
}

/** `elapsedUntilChange` from an instant (an Incoming item's `actualStartUtc`). */
export function elapsedSinceUntilChange(
  calendar: WeeklyCalendar, startedAtMs: number | null, now: number,
): { minutes: number; until: number; minutesPerMinute: number } {
  if (startedAtMs === null) return { minutes: 0, until: Number.POSITIVE_INFINITY, minutesPerMinute: 1 };
  const exact = workingMinutesBetween(calendar, startedAtMs, now, ELAPSED_MINUTES_LIMIT);
  const minutes = Math.floor(exact);
  if (minutes >= ELAPSED_MINUTES_LIMIT) return { minutes, until: Number.POSITIVE_INFINITY, minutesPerMinute: 1 };
  const rate = workingRate(calendar);
  return { minutes, until: now + Math.max(1, Math.floor(((minutes + 1 - exact) * 60_000) / rate)), minutesPerMinute: rate };
}

/** The fields of a task that remaining time depends on. */
export interface RemainingBasis {
  readonly status: TaskStatus;
  readonly estimatedMinutes: number;
  readonly resourceMode: ResourceMode;
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

/** The fields of an Incoming item that its remaining time depends on. */
export interface IncomingRemainingBasis {
  readonly lifecycle: Lifecycle;
  readonly estimatedMinutes: number;
  readonly actualStartUtc: number | null;
}

/**
 * An Incoming item's remaining minutes, as its recipient's plan reserves them: in progress, the
 * estimate less the recipient's working time since it started; 0 once completed; otherwise all.
 */
export function incomingRemaining(item: IncomingRemainingBasis, elapsedSinceStart: (startedAtMs: number) => number): number {
  if (item.lifecycle === 'completed') return 0;
  if (item.lifecycle !== 'inprogress' || item.actualStartUtc === null) return item.estimatedMinutes;
  return Math.max(0, item.estimatedMinutes - elapsedSinceStart(item.actualStartUtc));
}
