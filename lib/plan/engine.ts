import { epochMsToLocal } from '../time/london.js';
import { isoWeekday, nextDate, wallInstant, type WeeklyCalendar } from './calendar.js';

/**
 * The scheduler: pure functions over plain data (no SQL, no HTTP). A resource's working time
 * from now to the horizon is a timeline of segments, each free or busy; reservations and then
 * tasks are placed into the earliest free time they may use, splitting segments as they go.
 */

export const HORIZON_DAYS = 365;
const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;

interface Segment {
  start: number;
  end: number;
  busy: boolean;
}

/** Work to place: `minutes` of working time, no earlier than `notBefore`. */
export interface PlanItem {
  readonly id: number;
  readonly minutes: number;
  readonly notBefore: number;
}

export interface Placement {
  /** First planned working instant. */
  readonly start: number;
  /** End of the last planned working minute; when the work does not fit, of the last free working time before the horizon. */
  readonly finish: number;
  /** False when the horizon ran out before all the minutes were placed. */
  readonly complete: boolean;
}

export interface ResourcePlan {
  readonly computedAt: number;
  /** Length of the planning horizon in days, and its end (`computedAt` + that many days). */
  readonly horizonDays: number;
  readonly horizonEnd: number;
  /** Tasks that got working time within the horizon: their "current scheduler allocation". */
  readonly placements: ReadonlyMap<number, Placement>;
  /** Where `minutes` of new work could start without interruption, reserving nothing. */
  suggest(minutes: number, notBefore?: number): number | null;
  /**
   * What the plan holds in memory, in entries of roughly 100 bytes: its placements and the
   * segments of its timeline, which `suggest` keeps (a day's working intervals over the whole
   * horizon, even with nothing planned).
   */
  readonly size: number;
}

/**
 * The calendar's working time between two instants, as free segments in time order (touching ones
 * merged). A day's intervals may be given in any order.
 */
export function workingTimeline(calendar: WeeklyCalendar, from: number, to: number): Segment[] {
  const segments: Segment[] = [];
  if (calendar.size === 0 || !(to > from)) return segments;
  const days = new Map<number, (readonly [number, number])[]>();
  for (const [weekday, intervals] of calendar) days.set(weekday, [...intervals].sort((a, b) => a[0] - b[0]));
  let date = epochMsToLocal(from).slice(0, 10);
  const lastDate = epochMsToLocal(to).slice(0, 10);
  for (;;) {
    for (const [startMinute, endMinute] of days.get(isoWeekday(date)) ?? []) {
      const start = Math.max(from, wallInstant(date, startMinute));
      const end = Math.min(to, wallInstant(date, endMinute));
      if (end <= start) continue;
      const last = segments[segments.length - 1];
      if (last !== undefined && last.end >= start) last.end = Math.max(last.end, end);
      else segments.push({ start, end, busy: false });
    }
    if (date >= lastDate) break;
    date = nextDate(date);
  }
  return segments;
}

/** Index of the first segment that ends after `instant` (binary search; segments are sorted). */
function firstEndingAfter(segments: readonly Segment[], instant: number): number {
  let low = 0;
  let high = segments.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    if ((segments[middle] as Segment).end <= instant) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * Marks [from, to) of the free segment at `index` busy. The busy piece joins a busy neighbour it
 * follows or precedes in the array (whatever non-working time lies between: a busy segment's
 * times only order the timeline), so planned work stays one segment however many tasks fill it
 * and a later task skips it in one step, not one step per task placed before it. Returns the
 * index just past the busy piece.
 */
function markBusy(segments: Segment[], index: number, from: number, to: number): number {
  const segment = segments[index] as Segment;
  const previous = segments[index - 1];
  const next = segments[index + 1];
  const keepsFreeBefore = segment.start < from;
  const keepsFreeAfter = to < segment.end;
  const joinsPrevious = !keepsFreeBefore && previous?.busy === true;
  const joinsNext = !keepsFreeAfter && next?.busy === true;
  const busy: Segment = { start: joinsPrevious ? (previous as Segment).start : from, end: joinsNext ? (next as Segment).end : to, busy: true };
  const pieces: Segment[] = [];
  if (keepsFreeBefore) pieces.push({ start: segment.start, end: from, busy: false });
  pieces.push(busy);
  if (keepsFreeAfter) pieces.push({ start: to, end: segment.end, busy: false });
  const first = joinsPrevious ? index - 1 : index;
  segments.splice(first, (joinsPrevious ? 1 : 0) + 1 + (joinsNext ? 1 : 0), ...pieces);
  return first + pieces.length - (keepsFreeAfter ? 1 : 0);
}

/** Marks `minutes` of free time from `notBefore` on as busy; null when nothing was free. */
function occupy(segments: Segment[], notBefore: number, minutes: number): Placement | null {
  let needed = minutes * MINUTE_MS;
  let start: number | null = null;
  let finish = notBefore;
  let index = firstEndingAfter(segments, notBefore);
  while (needed > 0 && index < segments.length) {
    const segment = segments[index] as Segment;
    if (segment.busy) {
      index += 1;
      continue;
    }
    const from = Math.max(segment.start, notBefore);
    const to = Math.min(segment.end, from + needed);
    start ??= from;
    finish = to;
    needed -= to - from;
    index = markBusy(segments, index, from, to);
  }
  return start === null ? null : { start, finish, complete: needed <= 0 };
}

export interface PlanInput {
  readonly now: number;
  readonly calendar: WeeklyCalendar;
  /** Accepted Incoming work: takes capacity first, in the order given. */
  readonly reservations: readonly PlanItem[];
  /** The resource's plannable tasks in offer order. */
  readonly tasks: readonly PlanItem[];
  readonly horizonDays?: number;
}

/**
 * Plans one resource: reservations first, then each task in offer order into the earliest free
 * working time at or after its `notBefore`. A task is allocated when it gets any working time
 * before the horizon (contract 5: "gives the task working time within 365 days from now").
 */
export function planResource(input: PlanInput): ResourcePlan {
  const horizonDays = input.horizonDays ?? HORIZON_DAYS;
  const horizonEnd = input.now + horizonDays * DAY_MS;
  const segments = workingTimeline(input.calendar, input.now, horizonEnd);
  for (const reservation of input.reservations) {
    if (reservation.minutes > 0) occupy(segments, Math.max(input.now, reservation.notBefore), reservation.minutes);
  }
  const placements = new Map<number, Placement>();
  for (const task of input.tasks) {
    if (task.minutes <= 0) continue;
    const placement = occupy(segments, Math.max(input.now, task.notBefore), task.minutes);
    if (placement !== null) placements.set(task.id, placement);
  }
  return {
    computedAt: input.now,
    horizonDays,
    horizonEnd,
    placements,
    size: placements.size + segments.length,
    suggest: (minutes, notBefore = input.now) => earliestUninterruptedStart(segments, minutes, Math.max(input.now, notBefore)),
  };
}

/**
 * The start of the earliest run of free working time that holds `minutes` without planned work
 * in between (time outside the calendar does not interrupt a run: work simply pauses overnight).
 */
function earliestUninterruptedStart(segments: readonly Segment[], minutes: number, notBefore: number): number | null {
  const needed = minutes * MINUTE_MS;
  let runStart: number | null = null;
  let runLength = 0;
  for (let index = firstEndingAfter(segments, notBefore); index < segments.length; index += 1) {
    const segment = segments[index] as Segment;
    if (segment.busy) {
      runStart = null;
      runLength = 0;
      continue;
    }
    const from = Math.max(segment.start, notBefore);
    runStart ??= from;
    runLength += segment.end - from;
    if (runLength >= needed) return runStart;
  }
  return null;
}
