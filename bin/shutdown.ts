import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { whenSocketCloses } from '../adapters/socket-close.js';
import type { Service } from '../lib/service.js';
import type { Db } from '../lib/store/open.js';
import { logLine } from './command-line.js';
import { ANSWERED_ON } from './request-log.js';

/** How each signal that stops the server ends the process. */
const EXIT_CODES: Readonly<Record<'SIGTERM' | 'SIGINT' | 'SIGHUP', number>> = {
  SIGTERM: 0,
  SIGINT: 0,
  // A hangup (a closed terminal, a `kill -HUP` from a certificate renewal hook) is no request to
  // stay down: a non-zero status makes the systemd unit (Restart=on-failure) start it again.
  SIGHUP: 129,
};

/**
 * Folds the write-ahead log into the database file, then closes it, so that the file alone holds
 * every write. When that cannot be done (a full disk, another process reading the file), the
 * latest writes stay in FILE-wal, which SQLite applies at the next open: said in the log, as the
 * file must not be moved without it.
 */
export function closeDatabase(db: Db): void {
  if (!db.open) return;
  let folded = false;
  try {
    // PASSIVE: a reader in another process (a backup) must not hold the stop up; what it keeps
    // from being folded is reported like a full disk.
    const [result] = db.pragma('wal_checkpoint(PASSIVE)') as { busy: number; log: number; checkpointed: number }[];
    folded = result !== undefined && result.busy === 0 && result.checkpointed === result.log;
  } catch {
    // A full disk can make the checkpoint throw: reported below like any other incomplete one.
  }
  if (!folded) {
    logLine('error', 'the write-ahead log could not be folded into the database file (full disk, or another process reading it); its latest writes are in the -wal file beside it, which SQLite applies at the next start: keep the two together', { file: db.name });
  }
  db.close();
}

/**
 * The responses of `server` still to be sent, so that a stop can make them say
 * `Connection: close`; once `stopping()` is true, every new one says it at once instead.
 */
export function trackUnanswered(server: Server, stopping: () => boolean): ReadonlySet<ServerResponse> {
  const unanswered = new Set<ServerResponse>();
  const whenClosed = whenSocketCloses();
  // Prepended: the adapter may answer synchronously, and headers must be set before it writes them.
  const trackAnswer = (req: IncomingMessage, res: ServerResponse): void => {
    if (stopping()) {
      res.setHeader('connection', 'close');
      return;
    }
    unanswered.add(res);
    // A response pipelined behind a slow one never closes if the client goes: its socket does.
    const forget = whenClosed(req.socket, () => unanswered.delete(res));
    res.once('close', () => {
      forget();
      unanswered.delete(res);
    });
  };
  for (const event of ANSWERED_ON) server.prependListener(event, trackAnswer);
  return unanswered;
}

/**
 * SIGTERM, SIGINT and SIGHUP stop the server cleanly: answers still to be sent say
 * `Connection: close`, idle keep-alive connections close, work in flight finishes
 * (`service.idle()`), then the database closes. A second signal cuts slow clients off; busy ones
 * get 10 s. Returns whether the server is stopping (the health check answers 503 from then on).
 */
export function stopOnSignals(server: Server, service: Service, db: Db): () => boolean {
  let stopping = false;
  const unanswered = trackUnanswered(server, () => stopping);

  const stop = (signal: keyof typeof EXIT_CODES): void => {
    if (stopping) {
      // A second signal: stop waiting for slow clients.
      server.closeAllConnections();
      return;
    }
    stopping = true;
    for (const res of unanswered) if (!res.headersSent) res.setHeader('connection', 'close');
    logLine('info', 'stopping', { signal });
    server.close(() => {
      // Publications to linked sources in flight finish first (each is bounded by its deadline).
      void service.idle().finally(() => {
        service.close();
        closeDatabase(db);
        process.exitCode = EXIT_CODES[signal];
      });
    });
    server.closeIdleConnections();
    // Keep-alive connections that stay busy get 10 s to finish before they are cut.
    setTimeout(() => server.closeAllConnections(), 10_000).unref();
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => stop(signal));
  return () => stopping;
}
