export interface RateDecision {
  readonly allowed: boolean;
  /** Requests left in the window after this one. */
  readonly remaining: number;
  /** Whole seconds to the end of the window, at least 1. */
  readonly resetSeconds: number;
}

interface Window {
  start: number;
  count: number;
}

/**
 * Process-local fixed windows per client, each started by the client's first request. Expired
 * windows are swept when the map has doubled since the last sweep, and at least once per window
 * length, so memory is bounded by the clients active in the last two windows rather than by every
 * client ever seen (or by an old burst: a size trigger alone would keep a burst's dead windows
 * until the map doubled again).
 */
export class FixedWindowRateLimiter {
  readonly limit: number;
  readonly windowMs: number;
  readonly #windows = new Map<number, Window>();
  #nextSweepAt = 1024;
  #lastSweep = Number.NEGATIVE_INFINITY;

  constructor(limit: number, windowMs = 60_000) {
    this.limit = limit;
    this.windowMs = windowMs;
  }

  /** Counts a request of `clientId` at `now` if the window has room. Refused requests do not count. */
  take(clientId: number, now: number): RateDecision {
    let window = this.#openWindow(clientId, now);
    if (window === undefined) {
      window = { start: now, count: 0 };
      this.#windows.set(clientId, window);
      // A clock set back (before the last sweep) sweeps at once: the windows it left in the future
      // are brought back to now there, so they end within a window length and go.
      if (this.#windows.size >= this.#nextSweepAt || now >= this.#lastSweep + this.windowMs || now < this.#lastSweep) this.#sweep(now);
    }
    const resetSeconds = this.#resetSeconds(window, now);
    if (window.count >= this.limit) return { allowed: false, remaining: 0, resetSeconds };
    window.count += 1;
    return { allowed: true, remaining: this.limit - window.count, resetSeconds };
  }

  /**
   * The client's quota at `now` without counting anything: for an answer made after its request
   * was counted (one that waited on a source or a commit), whose window may have moved on or ended.
   * With no window open the next request starts a full one. (After a clock set back it moves the
   * window's start back, as `take` would: that changes no count.)
   */
  current(clientId: number, now: number): Omit<RateDecision, 'allowed'> {
    const window = this.#openWindow(clientId, now);
    if (window === undefined) return { remaining: this.limit, resetSeconds: Math.ceil(this.windowMs / 1000) };
    return { remaining: Math.max(0, this.limit - window.count), resetSeconds: this.#resetSeconds(window, now) };
  }

  /**
   * The client's window if `now` is inside it. A clock set back before the window's start moves
   * the start back to `now` with the count kept: the step neither hands out a fresh quota nor
   * stretches the window past its length (a step of an hour would otherwise refuse for an hour).
   */
  #openWindow(clientId: number, now: number): Window | undefined {
    const window = this.#windows.get(clientId);
    if (window === undefined || now >= window.start + this.windowMs) return undefined;
    if (now < window.start) window.start = now;
    return window;
  }

  /** Whole seconds to the window's end, at least 1. */
  #resetSeconds(window: Window, now: number): number {
    return Math.max(1, Math.ceil((window.start + this.windowMs - now) / 1000));
  }

  /** Number of windows held (for tests of the memory bound). */
  get size(): number {
    return this.#windows.size;
  }

  #sweep(now: number): void {
    for (const [clientId, window] of this.#windows) {
      if (now >= window.start + this.windowMs) this.#windows.delete(clientId);
      else if (now < window.start) window.start = now;
    }
    this.#nextSweepAt = Math.max(1024, this.#windows.size * 2);
    this.#lastSweep = now;
  }
}
