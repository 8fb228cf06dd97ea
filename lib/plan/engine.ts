import { epochMsToLocal, offsetMsAt } from '../time/london.js';
import { daysNearChanges, isoWeekday, nextDate, wallInstant, type WeeklyCalendar } from './calendar.js';

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
  // Away from clock changes a day's wall minutes are its midnight plus that many real minutes:
  // only the few days around a change need each wall time resolved.
  const nearChanges = daysNearChanges(date, nextDate(lastDate));
  for (;;) {
    const wallMidnight = Date.parse(`${date}T00:00:00Z`);
    const midnight = nearChanges.has(date) ? null : wallMidnight - offsetMsAt(wallMidnight);
    const instant = (minute: number): number => (midnight === null ? wallInstant(date, minute) : midnight + minute * MINUTE_MS);
    for (const [startMinute, endMinute] of days.get(isoWeekday(date)) ?? []) {
      const start = Math.max(from, instant(startMinute));
      const end = Math.min(to, instant(endMinute));
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
 * The timeline kept in buckets of consecutive segments, none empty, so that splitting a segment
 * moves the segments of its bucket only. In one array, every task placed among scattered planned
 * work (tasks held apart by their earliest starts) moved every later segment, so the cost grew
 * with the square of the tasks: 40,000 such tasks on a calendar of 48 slots a day took 1.5 s to
 * plan, against 0.1 s in buckets.
 */
type Timeline = Segment[][];

/** A bucket is halved once it holds more segments than this. */
const BUCKET_LIMIT = 128;

function bucketed(segments: Segment[]): Timeline {
  const timeline: Timeline = [];
  for (let index = 0; index < segments.length; index += BUCKET_LIMIT / 2) timeline.push(segments.slice(index, index + BUCKET_LIMIT / 2));
  return timeline;
}

/** Index of the first bucket whose last segment ends after `instant`. */
function firstBucketEndingAfter(timeline: Timeline, instant: number): number {
  let low = 0;
  let high = timeline.length;
  while (low < high) {
    const middle = (low + high) >>> 1;
    const bucket = timeline[middle] as Segment[];
    if ((bucket[bucket.length - 1] as Segment).end <= instant) low = middle + 1;
    else high = middle;
  }
  return low;
}

/**
 * Marks `minutes` of free time from `notBefore` on as busy; null when nothing was free. The
 * segments it fills, and the planned work between them, become one busy segment, joined with a
 * busy neighbour it follows or precedes in its bucket (whatever non-working time lies between: a
 * busy segment's times only order the timeline). So planned work stays one segment however many
 * tasks fill it, a later task skips it in one step, and a task spread over thousands of short
 * working intervals changes the timeline once, not once per interval.
 */
function occupy(timeline: Timeline, notBefore: number, minutes: number): Placement | null {
  let firstBucket = firstBucketEndingAfter(timeline, notBefore);
  if (firstBucket === timeline.length) return null;
  let first = firstEndingAfter(timeline[firstBucket] as Segment[], notBefore);
  for (;;) {
    const bucket = timeline[firstBucket] as Segment[];
    while (first < bucket.length && (bucket[first] as Segment).busy) first += 1;
    if (first < bucket.length) break;
    firstBucket += 1;
    first = 0;
    if (firstBucket === timeline.length) return null;
  }
  const head = timeline[firstBucket] as Segment[];
  const firstSegment = head[first] as Segment;
  const start = Math.max(firstSegment.start, notBefore);
  let needed = minutes * MINUTE_MS;
  let lastBucket = firstBucket;
  let last = first;
  let finish = start;
  for (let bucketIndex = firstBucket, index = first; bucketIndex < timeline.length && needed > 0; bucketIndex += 1, index = 0) {
    const bucket = timeline[bucketIndex] as Segment[];
    for (; index < bucket.length && needed > 0; index += 1) {
      const segment = bucket[index] as Segment;
      if (segment.busy) continue;
      const from = segment === firstSegment ? start : segment.start;
      finish = Math.min(segment.end, from + needed);
      needed -= finish - from;
      lastBucket = bucketIndex;
      last = index;
    }
  }
  const tail = timeline[lastBucket] as Segment[];
  const lastSegment = tail[last] as Segment;
  const previous = head[first - 1];
  const next = tail[last + 1];
  const freeBefore = firstSegment.start < start;
  const freeAfter = finish < lastSegment.end;
  const joinsPrevious = !freeBefore && previous?.busy === true;
  const joinsNext = !freeAfter && next?.busy === true;
  const pieces: Segment[] = [];
  if (freeBefore) pieces.push({ start: firstSegment.start, end: start, busy: false });
  pieces.push({ start: joinsPrevious ? (previous as Segment).start : start, end: joinsNext ? (next as Segment).end : finish, busy: true });
  if (freeAfter) pieces.push({ start: finish, end: lastSegment.end, busy: false });
  const from = joinsPrevious ? first - 1 : first;
  const through = last + 1 + (joinsNext ? 1 : 0);
  if (lastBucket === firstBucket) {
    head.splice(from, through - from, ...pieces);
  } else {
    // The pieces end the first bucket; the buckets between go, and the last loses what was filled.
    head.splice(from, head.length - from, ...pieces);
    tail.splice(0, through);
    timeline.splice(firstBucket + 1, lastBucket - firstBucket - (tail.length === 0 ? 0 : 1));
  }
  if (head.length > BUCKET_LIMIT) timeline.splice(firstBucket + 1, 0, head.splice(head.length >>> 1));
  return { start, finish, complete: needed <= 0 };
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
  const timeline = bucketed(workingTimeline(input.calendar, input.now, horizonEnd));
  for (const reservation of input.reservations) {
    if (reservation.minutes > 0) occupy(timeline, Math.max(input.now, reservation.notBefore), reservation.minutes);
  }
  const placements = new Map<number, Placement>();
  let starts: ((minutes: number, notBefore: number) => number | null) | undefined;
  for (const task of input.tasks) {
    if (task.minutes <= 0) continue;
    const placement = occupy(timeline, Math.max(input.now, task.notBefore), task.minutes);
    if (placement !== null) placements.set(task.id, placement);
  }
  const segments = joined(timeline);
  return {
    computedAt: input.now,
    horizonDays,
    horizonEnd,
    placements,
    size: placements.size + segments.length,
    suggest(minutes, notBefore = input.now) {
      starts ??= uninterruptedStarts(segments);
      return starts(minutes, Math.max(input.now, notBefore));
    },
  };
}

/** The timeline in one array, planned work that ran across buckets joined into one segment again. */
function joined(timeline: Timeline): Segment[] {
  const segments: Segment[] = [];
  for (const bucket of timeline) {
    for (const segment of bucket) {
      const previous = segments[segments.length - 1];
      if (segment.busy && previous?.busy === true) previous.end = segment.end;
      else segments.push(segment);
    }
  }
  return segments;
}

/**
 * Answers "the start of the earliest run of free working time that holds `minutes` without planned
 * work in between, from `notBefore` on" (time outside the calendar does not interrupt a run: work
 * simply pauses overnight). The runs and the longest run from each on are found once per plan, so
 * work longer than every run left is answered at once rather than by a walk to the horizon, once
 * per Incoming item.
 */
function uninterruptedStarts(segments: readonly Segment[]): (minutes: number, notBefore: number) => number | null {
  /** Free time (ms) of the segments before each index. */
  const freeBefore = new Float64Array(segments.length + 1);
  /** The run each free segment belongs to (-1: busy). */
  const runOf = new Int32Array(segments.length);
  const runs: { first: number; last: number; length: number }[] = [];
  segments.forEach((segment, index) => {
    freeBefore[index + 1] = (freeBefore[index] as number) + (segment.busy ? 0 : segment.end - segment.start);
    if (segment.busy) {
      runOf[index] = -1;
      return;
    }
    const run = runs[runs.length - 1];
    if (run !== undefined && run.last === index - 1) {
      run.last = index;
      run.length += segment.end - segment.start;
    } else {
      runs.push({ first: index, last: index, length: segment.end - segment.start });
    }
    runOf[index] = runs.length - 1;
  });
  const longestFrom = new Float64Array(runs.length + 1);
  for (let run = runs.length - 1; run >= 0; run -= 1) longestFrom[run] = Math.max(longestFrom[run + 1] as number, (runs[run] as { length: number }).length);

  return (minutes, notBefore) => {
    const needed = minutes * MINUTE_MS;
    let index = firstEndingAfter(segments, notBefore);
    while (index < segments.length && (segments[index] as Segment).busy) index += 1;
    if (index === segments.length) return null;
    const segment = segments[index] as Segment;
    const from = Math.max(segment.start, notBefore);
    let run = runOf[index] as number;
    const rest = (freeBefore[(runs[run] as { last: number }).last + 1] as number) - (freeBefore[index] as number) - (from - segment.start);
    if (rest >= needed) return from;
    for (run += 1; run < runs.length && (longestFrom[run] as number) >= needed; run += 1) {
      const candidate = runs[run] as { first: number; length: number };
      if (candidate.length >= needed) return (segments[candidate.first] as Segment).start;
    }
    return null;
  };
}
