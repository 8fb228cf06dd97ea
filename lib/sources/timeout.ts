import type { Clock } from '../time/clock.js';

/** Real time, for a clock without timers of its own. */
const realTime: Required<Clock> = {
  now: () => performance.now(),
  after(ms, callback) {
    const timer = setTimeout(callback, ms);
    return () => clearTimeout(timer);
  },
};

/**
 * Runs provider code with a deadline on `clock` (the service's: a test's manual clock moves it on
 * instead of waiting). The provider gets an AbortSignal, but one that ignores it still cannot hold
 * the request: the deadline rejects regardless. A result that settles late counts as no answer
 * too: work that blocks the event loop (parsing a huge body, say) can finish past the deadline
 * before the timer gets its turn. `stop` (the service being closed) ends the call at once, the
 * same way: a closed service waits for no provider.
 */
export function withDeadline<T>(
  work: (signal: AbortSignal) => Promise<T> | T, timeoutMs: number, clock: Clock = realTime, stop?: AbortSignal,
): Promise<T> {
  const time = clock.after === undefined ? realTime : clock;
  const startedAt = time.now();
  const controller = new AbortController();
  let cancel: (() => void) | undefined;
  const deadline = new Promise<never>((_, reject) => {
    cancel = time.after?.(timeoutMs, () => {
      controller.abort();
      reject(new Error(`no answer within ${timeoutMs} ms`));
    });
  });
  let unlisten = (): void => undefined;
  const stopped = new Promise<never>((_, reject) => {
    if (stop === undefined) return;
    const onStop = () => {
      controller.abort();
      reject(new Error('the service was closed'));
    };
    if (stop.aborted) {
      onStop();
      return;
    }
    stop.addEventListener('abort', onStop, { once: true });
    unlisten = () => stop.removeEventListener('abort', onStop);
  });
  let started: Promise<T>;
  try {
    started = Promise.resolve(work(controller.signal));
  } catch (error) {
    started = Promise.reject(error);
  }
  const inTime = started.then((value) => {
    if (time.now() - startedAt > timeoutMs) throw new Error(`no answer within ${timeoutMs} ms`);
    return value;
  });
  // An embedder's after() that returns no cancel function leaves its timer to fire into nothing.
  return Promise.race([inTime, deadline, stopped]).finally(() => {
    if (typeof cancel === 'function') cancel();
    unlisten();
  });
}
