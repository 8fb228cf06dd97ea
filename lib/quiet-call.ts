/**
 * Calls code of the embedder's (a logger, a response observer) whose failure must change
 * nothing: a throw is swallowed, and so is the rejection of a promise (or other thenable) it
 * returns, which left unhandled would end the host's process.
 */
export function callQuietly(call: () => unknown): void {
  try {
    const result = call();
    // Promise.resolve adopts any thenable, and turns a `then` that throws into a rejection too.
    if ((typeof result === 'object' && result !== null) || typeof result === 'function') Promise.resolve(result).catch(() => undefined);
  } catch {
    // Nothing sensible is left to report to.
  }
}
