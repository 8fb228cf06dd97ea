/**
 * Runs provider code with a deadline. The provider gets an AbortSignal, but one that ignores it
 * still cannot hold the request: the deadline rejects regardless. A result that settles late
 * counts as no answer too: work that blocks the event loop (parsing a huge body, say) can finish
 * past the deadline before the timer gets its turn.
 */
export function withDeadline<T>(
  work: (signal: AbortSignal) => Promise<T> | T,
  timeoutMs: number,
  now: () => number = () => performance.now(),
): Promise<T> {
  const startedAt = now();
  const controller = new AbortController();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      controller.abort();
      reject(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  let started: Promise<T>;
  try {
    started = Promise.resolve(work(controller.signal));
  } catch (error) {
    started = Promise.reject(error);
  }
  const inTime = started.then((value) => {
    if (now() - startedAt > timeoutMs) throw new Error(`no answer within ${timeoutMs} ms`);
    return value;
  });
  return Promise.race([inTime, deadline]).finally(() => clearTimeout(timer));
}
