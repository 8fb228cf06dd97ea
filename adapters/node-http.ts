import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { MAX_BODY_BYTES } from '../lib/http/body.js';
import { problemResponse } from '../lib/http/problem.js';
import type { ServiceRequest, ServiceResponse } from '../lib/http/types.js';

/** Anything with the service's `handle`. */
export interface Handler {
  handle(request: ServiceRequest): ServiceResponse | Promise<ServiceResponse>;
}

/** Options of `toNodeHandler`. */
export interface NodeHandlerOptions {
  /** Mount path such as `/app`: `/app/api/v1/...` reaches the service as `/api/v1/...`. */
  readonly prefix?: string;
}

/** Options of `createNodeServer`; with `tls` (PEM texts) it serves HTTPS. */
export interface NodeServerOptions extends NodeHandlerOptions {
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
}

function declaredLength(req: IncomingMessage): number {
  const value = req.headers['content-length'];
  return value === undefined ? 0 : Number(value);
}

function mountedUrl(url: string, prefix: string): string {
  if (prefix === '') return url;
  if (url === prefix) return '/';
  const next = url.charAt(prefix.length);
  if (url.startsWith(prefix) && (next === '/' || next === '?')) {
    return next === '/' ? url.slice(prefix.length) : `/${url.slice(prefix.length)}`;
  }
  // Nothing outside the mount is routable; '/' lets the core answer its own 404.
  return '/';
}

function write(res: ServerResponse, response: ServiceResponse): void {
  if (res.destroyed) return;
  res.statusCode = response.status;
  for (const [name, value] of Object.entries(response.headers)) res.setHeader(name, value);
  const body = response.status === 204 || response.status === 304 ? undefined : response.body;
  if (body === undefined) {
    res.end();
    return;
  }
  if (!res.hasHeader('content-length')) res.setHeader('content-length', Buffer.byteLength(body, 'utf8'));
  res.end(body);
}

// Only reached if handle() itself breaks its promise never to throw; the answer is the core's own 500.
function internalError(res: ServerResponse): void {
  if (res.headersSent || res.destroyed) return;
  write(res, problemResponse('internal_error', randomUUID().replaceAll('-', '')));
}

/**
 * A node:http request listener for the service. Bodies over 131072 bytes are not buffered: a
 * declared length over the limit is never read, a streamed one stops at one byte over, and the
 * connection is closed after the 413.
 */
export function toNodeHandler(service: Handler, options: NodeHandlerOptions = {}): (req: IncomingMessage, res: ServerResponse) => void {
  const prefix = (options.prefix ?? '').replace(/\/+$/, '');
  if (prefix !== '' && !prefix.startsWith('/')) throw new TypeError('toNodeHandler: options.prefix must start with "/"');

  return (req, res) => {
    // A client that goes away mid-request must not take the process with it.
    req.on('error', () => req.destroy());
    res.on('error', () => res.destroy());

    const dispatch = (body: Buffer | undefined): void => {
      let result: ServiceResponse | Promise<ServiceResponse>;
      try {
        result = service.handle({
          method: req.method ?? 'GET',
          url: mountedUrl(req.url ?? '/', prefix),
          headers: req.headers,
          body,
        });
      } catch {
        internalError(res);
        return;
      }
      if (result instanceof Promise) {
        result.then((response) => write(res, response), () => internalError(res));
      } else {
        write(res, result);
      }
    };

    if (declaredLength(req) > MAX_BODY_BYTES) {
      res.setHeader('connection', 'close');
      dispatch(undefined);
      return;
    }

    const chunks: Buffer[] = [];
    let total = 0;
    const onData = (chunk: Buffer): void => {
      chunks.push(chunk);
      total += chunk.length;
      if (total > MAX_BODY_BYTES) {
        req.off('data', onData);
        req.off('end', onEnd);
        req.pause();
        res.setHeader('connection', 'close');
        dispatch(Buffer.concat(chunks, total).subarray(0, MAX_BODY_BYTES + 1));
      }
    };
    const onEnd = (): void => dispatch(total === 0 ? undefined : Buffer.concat(chunks, total));
    req.on('data', onData);
    req.on('end', onEnd);
  };
}

/**
 * An `http.Server` (or, with `options.tls`, an `https.Server`) answering with the service. It
 * does not listen yet. `Expect: 100-continue` with a body over the limit gets the 413 at once.
 */
export function createNodeServer(service: Handler, options: NodeServerOptions = {}): Server {
  const listener = toNodeHandler(service, options);
  const server: Server =
    options.tls === undefined
      ? createHttpServer(listener)
      : createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, listener);
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (declaredLength(req) <= MAX_BODY_BYTES) res.writeContinue();
    listener(req, res);
  });
  return server;
}
