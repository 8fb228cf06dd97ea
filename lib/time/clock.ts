import { parseInstant } from './london.js';

/** Source of the current instant; injected so tests never wait for time to pass. */
export interface Clock {
  /** Current instant in epoch milliseconds. */
  now(): number;
  /**
   * Calls `callback` once `ms` milliseconds have passed on this clock; returns a function that
   * cancels the call. The service times linked sources out with it. Optional: a clock without it
   * (the system clock) leaves those deadlines to real time (`setTimeout`, `performance.now()`).
   */
  after?(ms: number, callback: () => void): () => void;
}

/** The real clock (`Date.now()`); deadlines on it run on real (monotonic) time. */
export const systemClock: Clock = Object.freeze({ now: (): number => Date.now() });

/** A settable clock for tests and tools. */
export interface ManualClock extends Clock {
  /** Jumps to an instant: epoch ms, a Date, or an ISO instant string with `Z` or `±HH:MM`. Throws TypeError on an invalid one. */
  set(instant: number | string | Date): void;
  /** Moves the clock by `ms` milliseconds (negative moves it back). Throws TypeError unless `ms` is finite. */
  advance(ms: number): void;
  /** Calls `callback` when `set` or `advance` reach `ms` from now; returns a function that cancels it. */
  after(ms: number, callback: () => void): () => void;
}

function toInstant(instant: number | string | Date): number {
  if (instant instanceof Date) return toInstant(instant.getTime());
  if (typeof instant === 'number') {
    if (Number.isFinite(instant)) return instant;
    throw new TypeError(`invalid instant: ${instant}`);
  }
  const parsed = parseInstant(instant);
  if (parsed === null) throw new TypeError(`invalid ISO instant: ${JSON.stringify(instant)}`);
  return parsed;
}

/**
 * A clock that only moves when told to. `start` is epoch ms, a Date, or an ISO instant string with `Z` or
 * `±HH:MM` (e.g. `2026-03-29T00:30:00Z`); throws TypeError on an invalid one. Its timers fire, in
 * the order they fall due, when the clock is moved to or past them: a test moves time on instead
 * of waiting for it.
 */
export function manualClock(start: number | string | Date): ManualClock {
  let current = toInstant(start);
  const timers = new Set<{ readonly due: number; readonly callback: () => void }>();

  /** Fires every timer now due, earliest first; one that throws stops none of the others. */
  function moveTo(instant: number): void {
    current = instant;
    const failures: unknown[] = [];
    for (;;) {
      let next: { readonly due: number; readonly callback: () => void } | undefined;
      for (const timer of timers) if (timer.due <= current && (next === undefined || timer.due < next.due)) next = timer;
      if (next === undefined) break;
      timers.delete(next);
      try {
        next.callback();
      } catch (error) {
        failures.push(error);
      }
    }
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, 'timer callbacks threw');
  }

  return {
    now: () => current,
    set(instant: number | string | Date): void {
      moveTo(toInstant(instant));
    },
    advance(ms: number): void {
      if (!Number.isFinite(ms)) throw new TypeError(`invalid advance: ${ms}`);
      moveTo(current + ms);
    },
    after(ms: number, callback: () => void): () => void {
      const timer = { due: current + Math.max(0, ms), callback };
      timers.add(timer);
      return () => {
        timers.delete(timer);
      };
    },
  };
}
