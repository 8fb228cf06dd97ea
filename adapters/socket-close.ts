import type { Duplex } from 'node:stream';

/**
 * Runs `gone` if the connection closes first, never before returning; the returned function
 * cancels that.
 */
export type WhenClosed = (socket: Duplex, gone: () => void) => () => void;

/**
 * Calls to make when a connection closes, for the requests still on it. A pipelined request's
 * response waits for the one before it and never gets the socket when the client goes, so its
 * own 'close' never comes: only the socket's does. Anything kept per request until its response
 * closes must also go then, or a client that gives up with requests pipelined behind a slow
 * answer leaves them (and their socket) reachable for ever. One listener per socket, however
 * many requests a keep-alive connection carries.
 */
export function whenSocketCloses(): WhenClosed {
  const due = new WeakMap<Duplex, Set<() => void>>();
  return (socket, gone) => {
    if (socket.closed) {
      // Gone already: no 'close' is still to come.
      let cancelled = false;
      queueMicrotask(() => {
        if (!cancelled) gone();
      });
      return () => {
        cancelled = true;
      };
    }
    let waiting = due.get(socket);
    if (waiting === undefined) {
      const calls = new Set<() => void>();
      socket.once('close', () => {
        due.delete(socket);
        for (const call of calls) call();
      });
      due.set(socket, calls);
      waiting = calls;
    }
    const calls = waiting;
    calls.add(gone);
    return () => {
      calls.delete(gone);
    };
  };
}
