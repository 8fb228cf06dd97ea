import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { whenSocketCloses } from '../adapters/socket-close.js';
import type { ResponseMeta, ServiceResponse } from '../lib/http/types.js';
import { logEntry } from './command-line.js';

/** Every event the adapter answers a request on. */
export const ANSWERED_ON = ['request', 'checkContinue', 'checkExpectation'] as const;

/** What one request-log line says about an answer. */
interface Answered {
  readonly method: string | null;
  readonly meta: ResponseMeta | undefined;
  readonly status: number;
  readonly durationMs: number | null;
  readonly traceId: string | undefined;
  /** False when the client went away before the answer reached it. */
  readonly delivered?: false;
}

/** One request on its way through the server, until its line is written. */
interface Exchange {
  readonly started: number;
  /** What the service answered (through the adapter's onResponse), once it has. */
  answer?: { readonly meta: ResponseMeta | undefined; readonly status: number; readonly traceId: string | undefined };
  /** The client went away before the response was finished. */
  gone: boolean;
}

/**
 * One JSON line per answered request on stderr: never the path as sent, a token or a body. The
 * adapter's hooks hand over what the service knew (route template, client id, trace id); `attach`
 * times every request the server answers. A request whose client went away before its answer was
 * sent still gets its line once the service has answered, with `"delivered":false`: it was
 * carried out all the same (a claim taken, a note added).
 */
export function requestLog() {
  const exchanges = new WeakMap<IncomingMessage, Exchange>();
  // A CONNECT is answered on its socket, without a ServerResponse to wait for.
  const connectStarted = new WeakMap<IncomingMessage, number>();
  const requestLine = ({ method, meta, status, durationMs, traceId, delivered }: Answered): void => {
    logEntry('info', {
      method,
      route: meta?.route ?? null,
      status,
      durationMs: durationMs === null ? null : Math.round(durationMs * 100) / 100,
      clientId: meta?.clientId ?? null,
      traceId: traceId ?? null,
      ...(delivered === false ? { delivered } : {}),
    });
  };
  const logUndelivered = (req: IncomingMessage, exchange: Exchange): void => {
    const { answer } = exchange;
    if (answer === undefined) return;
    requestLine({ method: req.method ?? null, ...answer, durationMs: performance.now() - exchange.started, delivered: false });
  };
  return {
    // The adapter sends headers with one writeHead (res.getHeader cannot see them): the trace id
    // is taken from the answer itself.
    onResponse(response: ServiceResponse, req: IncomingMessage): void {
      const traceId = response.headers['x-trace-id'];
      const started = connectStarted.get(req);
      if (started !== undefined) {
        requestLine({ method: req.method ?? null, meta: response.meta, status: response.status, durationMs: performance.now() - started, traceId });
        return;
      }
      const exchange = exchanges.get(req);
      if (exchange === undefined) return;
      exchange.answer = { meta: response.meta, status: response.status, traceId };
      if (exchange.gone) logUndelivered(req, exchange);
    },
    // Bytes node:http cannot parse never become a request; their answer gets a line all the same.
    onClientError(response: ServiceResponse): void {
      requestLine({ method: response.meta?.method ?? null, meta: response.meta, status: response.status, durationMs: null, traceId: response.headers['x-trace-id'] });
    },
    attach(server: Server): void {
      server.prependListener('connect', (req: IncomingMessage) => connectStarted.set(req, performance.now()));
      // A pipelined request's response waits for the one before it and never gets the socket
      // when the client goes: its own 'close' never comes, only the socket's.
      const whenClosed = whenSocketCloses();
      // Prepended: the adapter may answer synchronously, and the time taken counts from here.
      const logRequest = (req: IncomingMessage, res: ServerResponse): void => {
        const exchange: Exchange = { started: performance.now(), gone: false };
        exchanges.set(req, exchange);
        const gone = (): void => {
          forget();
          if (res.writableFinished || exchange.gone) return;
          exchange.gone = true;
          logUndelivered(req, exchange);
        };
        const forget = whenClosed(req.socket, gone);
        res.once('finish', () => {
          forget();
          const { answer } = exchange;
          // The status written: an answer node or the adapter gave without the service has none.
          requestLine({ method: req.method ?? null, meta: answer?.meta, status: res.statusCode, durationMs: performance.now() - exchange.started, traceId: answer?.traceId });
        });
        res.once('close', gone);
      };
      for (const event of ANSWERED_ON) server.prependListener(event, logRequest);
    },
  };
}
