import type { Lifecycle, ResourceMode, TaskStatus } from '../schemas/common.js';
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
  return elapsedUntilChange(calendar, startedAt, now).minutes;
}

/**
 * `elapsedPlannedMinutes`, and the instant before which it certainly stays the same. Working
 * time grows at most as fast as wall time times the most intervals a day has (they never overlap
 * in a valid calendar, so normally at wall speed): the answer cannot reach the next whole minute
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
  let rate = 1;
  if (startedAtMs === null) return { minutes: 0, until: Number.POSITIVE_INFINITY, minutesPerMinute: rate };
  const exact = workingMinutesBetween(calendar, startedAtMs, now, ELAPSED_MINUTES_LIMIT);
  const minutes = Math.floor(exact);
  if (minutes >= ELAPSED_MINUTES_LIMIT) return { minutes, until: Number.POSITIVE_INFINITY, minutesPerMinute: rate };
  for (const intervals of calendar.values()) rate = Math.max(rate, intervals.length);
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

/**
 * Remaining minutes for one reader at one instant: the task's on the calling worker's calendar
 * (max(0, estimate - elapsed planned duration), 0 when Done), each assignee's on that assignee's
 * own calendar, so it matches what the assignee's plan uses, and each human request's on its
 * recipient's calendar, as the recipient's plan reserves it.
 */
export function remainingMinutesFor(calendars: CalendarStatements, resourceId: number, now: number): RemainingMinutes {
  // Calendars are read only when something started needs elapsed time: most reads need none.
  const calendarByStaff = new Map<number, WeeklyCalendar>();
  let pending: readonly number[] = [];
  const elapsed = new Map<string, number>();
  let validUntil = Number.POSITIVE_INFINITY;
  const calendarOf = (staffId: number): WeeklyCalendar => {
    if (!calendarByStaff.has(staffId) && pending.length > 0) {
      // Load every calendar announced by prepare() at once, not one query per assignee.
      for (const [id, calendar] of calendars.calendarsOf([...new Set([...pending, resourceId])])) calendarByStaff.set(id, calendar);
      pending = [];
    }
    let calendar = calendarByStaff.get(staffId);
    if (calendar === undefined) {
      calendar = calendars.calendarOf(staffId);
      calendarByStaff.set(staffId, calendar);
    }
    return calendar;
  };
  // `startedAt` is a task's London wall time or a request's instant, converted only on a miss.
  const elapsedSince = (key: string, staffId: number, startedAt: string | number | null): number => {
    let minutes = elapsed.get(key);
    if (minutes === undefined) {
      minutes = 0;
      if (startedAt !== null) {
        const startedAtMs = typeof startedAt === 'string' ? localToEpochMs(startedAt) : startedAt;
        const timed = elapsedSinceUntilChange(calendarOf(staffId), startedAtMs, now);
        minutes = timed.minutes;
        validUntil = Math.min(validUntil, timed.until);
      }
      elapsed.set(key, minutes);
    }
    return minutes;
  };
  const elapsedOf = (row: TaskRow, staffId: number): number => elapsedSince(`${row.id}:${staffId}`, staffId, row.startedAt);
  return {
    task: (row) => (row.status === 'Done' ? 0 : Math.max(0, row.estimatedMinutes - elapsedOf(row, resourceId))),
    assignee: (row, staffMemberId, assigneeEstimate, assigneeCount) =>
      assigneeRemaining(row, assigneeEstimate, assigneeCount, row.status === 'Done' ? 0 : elapsedOf(row, staffMemberId)),
    humanRequest: (request) =>
      incomingRemaining(request, (startedAtMs) => elapsedSince(`request ${request.stageId}`, request.assignedHumanId, startedAtMs)),
    prepare(staffMemberIds) {
      pending = staffMemberIds.filter((staffId) => !calendarByStaff.has(staffId));
    },
    validUntil: () => validUntil,
  };
}
