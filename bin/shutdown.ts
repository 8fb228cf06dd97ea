import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Service } from '../lib/service.js';
import type { Db } from '../lib/store/open.js';
import { err } from './command-line.js';
import { ANSWERED_ON } from './request-log.js';

/**
 * SIGTERM and SIGINT stop the server cleanly: answers still to be sent say `Connection: close`,
 * idle keep-alive connections close, work in flight finishes (`service.idle()`), then the
 * database closes. A second signal cuts slow clients off; busy ones get 10 s. Returns whether
 * the server is stopping (the health check answers 503 from then on).
 */
export function stopOnSignals(server: Server, service: Service, db: Db): () => boolean {
  let stopping = false;
  // Prepended: the adapter may answer synchronously, and headers must be set before it writes them.
  const unanswered = new Set<ServerResponse>();
  const trackAnswer = (_req: IncomingMessage, res: ServerResponse): void => {
    if (stopping) {
      res.setHeader('connection', 'close');
      return;
    }
    unanswered.add(res);
    res.once('close', () => unanswered.delete(res));
  };
  for (const event of ANSWERED_ON) server.prependListener(event, trackAnswer);

  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) {
      // A second signal: stop waiting for slow clients.
      server.closeAllConnections();
      return;
    }
    stopping = true;
    for (const res of unanswered) if (!res.headersSent) res.setHeader('connection', 'close');
    err(JSON.stringify({ time: new Date().toISOString(), level: 'info', message: 'stopping', signal }));
    server.close(() => {
      // Publications to linked sources in flight finish first (each is bounded by its deadline).
      void service.idle().finally(() => {
        service.close();
        if (db.open) db.close();
        process.exitCode = 0;
      });
    });
    server.closeIdleConnections();
    // Keep-alive connections that stay busy get 10 s to finish before they are cut.
    setTimeout(() => server.closeAllConnections(), 10_000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  return () => stopping;
}
