import { parseUtc } from './london.js';

/** Source of the current instant; injected so tests never wait for time to pass. */
export interface Clock {
  /** Current instant in epoch milliseconds. */
  now(): number;
}

/** The real clock (`Date.now()`). */
export const systemClock: Clock = Object.freeze({ now: (): number => Date.now() });

/** A settable clock for tests and tools. */
export interface ManualClock extends Clock {
  /** Jumps to an instant: epoch ms, or an ISO instant string with `Z` or `±HH:MM`. Throws TypeError on an invalid one. */
  set(instant: number | string): void;
  /** Moves the clock by `ms` milliseconds (negative moves it back). Throws TypeError unless `ms` is finite. */
  advance(ms: number): void;
}

const INSTANT_RE = /^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,9})?)(?:Z|([+-])([01][0-9]|2[0-3]):([0-5][0-9]))$/;

function toInstant(instant: number | string): number {
  if (typeof instant === 'number') {
    if (Number.isFinite(instant)) return instant;
    throw new TypeError(`invalid instant: ${instant}`);
  }
  const m = INSTANT_RE.exec(instant);
  // parseUtc does the field validation (Feb 30, hour 24, ...) on the offset-free part.
  const wall = m === null ? null : parseUtc(`${m[1]}Z`);
  if (m === null || wall === null) throw new TypeError(`invalid ISO instant: ${JSON.stringify(instant)}`);
  if (m[2] === undefined) return wall;
  const offsetMs = (Number(m[3]) * 60 + Number(m[4])) * 60_000;
  return m[2] === '+' ? wall - offsetMs : wall + offsetMs;
}

/**
 * A clock that only moves when told to. `start` is epoch ms or an ISO instant string with `Z` or
 * `±HH:MM` (e.g. `2026-03-29T00:30:00Z`); throws TypeError on an invalid one.
 */
export function manualClock(start: number | string): ManualClock {
  let current = toInstant(start);
  return {
    now: () => current,
    set(instant: number | string): void {
      current = toInstant(instant);
    },
    advance(ms: number): void {
      if (!Number.isFinite(ms)) throw new TypeError(`invalid advance: ${ms}`);
      current += ms;
    },
  };
}
