import type { CalendarStatements } from '../../store/calendars.js';
import type { HumanRequestRow, TaskRow } from '../../store/task-reads.js';
import { localToEpochMs } from '../../time/london.js';
import type { WeeklyCalendar } from '../../plan/calendar.js';
import { assigneeRemaining, elapsedSinceUntilChange, incomingRemaining } from '../../plan/remaining.js';

/** Remaining minutes of a task and of each assignee; for one reader at one instant. */
export interface RemainingMinutes {
  task(row: TaskRow): number;
  /** Elapsed time counts on the assignee's own calendar. */
  assignee(row: TaskRow, staffMemberId: number, assigneeEstimate: number | null, assigneeCount: number): number;
  /** Elapsed time since an in-progress request started counts on its recipient's calendar. */
  humanRequest(row: HumanRequestRow): number;
  /** Loads, in one go, what `assignee` needs for these staff members (no read per task). */
  prepare(staffMemberIds: readonly number[]): void;
  /** The earliest instant at which an answer given so far may change (elapsed time grows). */
  validUntil(): number;
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
