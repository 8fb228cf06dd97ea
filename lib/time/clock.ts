import { parseInstant } from './london.js';

/** Source of the current instant; injected so tests never wait for time to pass. */
export interface Clock {
  /** Current instant in epoch milliseconds. */
  now(): number;
}

/** The real clock (`Date.now()`). */
export const systemClock: Clock = Object.freeze({ now: (): number => Date.now() });

/** A settable clock for tests and tools. */
export interface ManualClock extends Clock {
  /** Jumps to an instant: epoch ms, a Date, or an ISO instant string with `Z` or `±HH:MM`. Throws TypeError on an invalid one. */
  set(instant: number | string | Date): void;
  /** Moves the clock by `ms` milliseconds (negative moves it back). Throws TypeError unless `ms` is finite. */
  advance(ms: number): void;
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
 * `±HH:MM` (e.g. `2026-03-29T00:30:00Z`); throws TypeError on an invalid one.
 */
export function manualClock(start: number | string | Date): ManualClock {
  let current = toInstant(start);
  return {
    now: () => current,
    set(instant: number | string | Date): void {
      current = toInstant(instant);
    },
    advance(ms: number): void {
      if (!Number.isFinite(ms)) throw new TypeError(`invalid advance: ${ms}`);
      current += ms;
    },
  };
}
