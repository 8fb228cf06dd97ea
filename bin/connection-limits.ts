import type { Server } from 'node:http';
import { logLine } from './command-line.js';

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
  /**
   * How long an idle keep-alive connection stays open (node: 5 s; `--keep-alive-timeout`).
   * Longer than the default idle timeouts of the proxies that keep connections to it (Caddy
   * 2 min, Traefik 90 s, nginx's upstream keepalive_timeout and AWS's Application Load Balancer
   * 60 s), so such a proxy closes first. A server that closes first races the proxy's next
   * request on that connection, and nginx does not resend a PATCH or POST lost that way: its
   * agent gets a 502.
   */
  keepAliveTimeoutMs: 125_000,
} as const;

/** What the bounds are set on: an http.Server or https.Server. */
export type LimitedServer = Pick<Server, 'headersTimeout' | 'requestTimeout' | 'maxConnections' | 'keepAliveTimeout'> & {
  on(event: 'drop', listener: () => void): unknown;
};

/** At most one log line a minute about refused connections, however many there are. */
const DROP_LOG_INTERVAL_MS = 60_000;

/**
 * Applies CONNECTION_LIMITS, with the keep-alive timeout given. node enforces the two request
 * timeouts on a 30 s sweep, so a silent connection is closed (408) between 20 and 50 s after it
 * opened; they do not run while a keep-alive connection waits for its next request. Connections
 * refused at the cap are logged (level error: agents are being turned away), at most once a
 * minute with a count.
 */
export function limitConnections(server: LimitedServer, keepAliveTimeoutMs: number = CONNECTION_LIMITS.keepAliveTimeoutMs): void {
  server.headersTimeout = CONNECTION_LIMITS.headersTimeoutMs;
  server.requestTimeout = CONNECTION_LIMITS.requestTimeoutMs;
  server.maxConnections = CONNECTION_LIMITS.maxConnections;
  server.keepAliveTimeout = keepAliveTimeoutMs;
  let refused = 0;
  let loggedAt = Number.NEGATIVE_INFINITY;
  let pending: NodeJS.Timeout | undefined;
  const report = (): void => {
    pending = undefined;
    loggedAt = Date.now();
    logLine('error', `connection limit reached: ${CONNECTION_LIMITS.maxConnections} connections are open, new ones are closed as they arrive`, { refused });
    refused = 0;
  };
  server.on('drop', () => {
    refused += 1;
    const wait = loggedAt + DROP_LOG_INTERVAL_MS - Date.now();
    if (wait <= 0) report();
    // Refusals within the minute after a line are counted in one more line at its end, so a
    // burst's last refusals are reported even when none follow. Unref'd: it never holds a stop.
    else pending ??= setTimeout(report, wait).unref();
  });
}
