/**
 * Runs provider code with a deadline. The provider gets an AbortSignal, but one that ignores it
 * still cannot hold the request: the deadline rejects regardless.
 */
export function withDeadline<T>(work: (signal: AbortSignal) => Promise<T>, timeoutMs: number): Promise<T> {
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
  return Promise.race([started, deadline]).finally(() => clearTimeout(timer));
}
