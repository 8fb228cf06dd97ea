import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import type { ResponseMeta, ServiceResponse } from '../lib/http/types.js';
import { err } from './command-line.js';

/** Every event the adapter answers a request on. */
export const ANSWERED_ON = ['request', 'checkContinue', 'checkExpectation'] as const;

/** What one request-log line says about an answer. */
interface Answered {
  readonly method: string | null;
  readonly meta: ResponseMeta | undefined;
  readonly status: number;
  readonly durationMs: number | null;
  readonly traceId: string | undefined;
}

/**
 * One JSON line per answered request on stderr: never the path as sent, a token or a body. The
 * adapter's hooks hand over what the service knew (route template, client id, trace id); `attach`
 * times every request the server answers.
 */
export function requestLog() {
  // What the service knows of each request for its log line; never sent.
  const metaOf = new WeakMap<IncomingMessage, ResponseMeta & { traceId?: string }>();
  // A CONNECT is answered on its socket, without a ServerResponse to wait for.
  const connectStarted = new WeakMap<IncomingMessage, number>();
  const logLine = ({ method, meta, status, durationMs, traceId }: Answered): void => {
    err(JSON.stringify({
      time: new Date().toISOString(),
      level: 'info',
      method,
      route: meta?.route ?? null,
      status,
      durationMs: durationMs === null ? null : Math.round(durationMs * 100) / 100,
      clientId: meta?.clientId ?? null,
      traceId: traceId ?? null,
    }));
  };
  return {
    // The adapter sends headers with one writeHead (res.getHeader cannot see them): the trace id
    // is taken from the answer itself.
    onResponse(response: ServiceResponse, req: IncomingMessage): void {
      const traceId = response.headers['x-trace-id'];
      const started = connectStarted.get(req);
      if (started !== undefined) {
        logLine({ method: req.method ?? null, meta: response.meta, status: response.status, durationMs: performance.now() - started, traceId });
      }
      else metaOf.set(req, { ...response.meta, ...(traceId === undefined ? {} : { traceId }) });
    },
    // Bytes node:http cannot parse never become a request; their answer gets a line all the same.
    onClientError(response: ServiceResponse): void {
      logLine({ method: response.meta?.method ?? null, meta: response.meta, status: response.status, durationMs: null, traceId: response.headers['x-trace-id'] });
    },
    attach(server: Server): void {
      server.prependListener('connect', (req: IncomingMessage) => connectStarted.set(req, performance.now()));
      const logRequest = (req: IncomingMessage, res: ServerResponse): void => {
        const started = performance.now();
        res.once('finish', () => {
          const meta = metaOf.get(req);
          logLine({ method: req.method ?? null, meta, status: res.statusCode, durationMs: performance.now() - started, traceId: meta?.traceId });
        });
      };
      for (const event of ANSWERED_ON) server.on(event, logRequest);
    },
  };
}
