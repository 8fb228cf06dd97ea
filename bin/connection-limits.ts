import type { Server } from 'node:http';
import { err } from './command-line.js';

/**
 * What `serve` allows each client connection. node's defaults suit a server behind a proxy that
 * already bounds its clients; `serve` may face agents directly (with --tls-cert), where a client
 * that opens connections and sends nothing, or sends a byte a minute, would otherwise hold a
 * socket and its memory for minutes, and without number.
 */
export const CONNECTION_LIMITS = {
  /** Request line and headers must have arrived by then (node: 60 s). */
  headersTimeoutMs: 20_000,
  /** The whole request, body included (node: 300 s): a 128 KiB body in a minute is 2 KiB/s. */
  requestTimeoutMs: 60_000,
  /** Connections open at once; one more is closed as soon as it is accepted (node: no limit). */
  maxConnections: 1_000,
} as const;

/** At most one log line a minute about refused connections, however many there are. */
const DROP_LOG_INTERVAL_MS = 60_000;

/**
 * Applies CONNECTION_LIMITS. node enforces the two timeouts on a 30 s sweep, so a silent
 * connection is closed (408) between 20 and 50 s after it opened. Connections refused at the cap
 * are logged (level error: agents are being turned away), at most once a minute with a count.
 */
export function limitConnections(server: Pick<Server, 'headersTimeout' | 'requestTimeout' | 'maxConnections' | 'on'>): void {
  server.headersTimeout = CONNECTION_LIMITS.headersTimeoutMs;
  server.requestTimeout = CONNECTION_LIMITS.requestTimeoutMs;
  server.maxConnections = CONNECTION_LIMITS.maxConnections;
  let refused = 0;
  let loggedAt = Number.NEGATIVE_INFINITY;
  server.on('drop', () => {
    refused += 1;
    const now = Date.now();
    if (now - loggedAt < DROP_LOG_INTERVAL_MS) return;
    loggedAt = now;
    err(JSON.stringify({
      time: new Date(now).toISOString(),
      level: 'error',
      message: `connection limit reached: ${CONNECTION_LIMITS.maxConnections} connections are open, new ones are closed as they arrive`,
      refused,
    }));
    refused = 0;
  });
}
