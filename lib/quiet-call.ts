/**
 * Calls code of the embedder's (a logger, a response observer) whose failure must change
 * nothing: a throw is swallowed, and so is the rejection of a promise it returns, which left
 * unhandled would end the host's process. Other thenables are left alone: nobody awaits them, so
 * none can reject unhandled, and calling their `then` could start work (a lazy query).
 */
export function callQuietly(call: () => unknown): void {
  try {
    const result = call();
    if (result instanceof Promise) result.catch(() => undefined);
  } catch {
    // Nothing sensible is left to report to.
  }
}
