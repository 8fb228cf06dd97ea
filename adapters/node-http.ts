import { randomUUID } from 'node:crypto';
import { createServer as createHttpServer, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { MAX_BODY_BYTES } from '../lib/http/body.js';
import { problemResponse } from '../lib/http/problem.js';
import type { ServiceResponse } from '../lib/http/types.js';
import { handleSafely, mountedUrl, normalisePrefix, observe, originForm, sendsBody, type Handler } from './shared.js';

export type { Handler } from './shared.js';

/** Options of `toNodeHandler`. */
export interface NodeHandlerOptions {
  /** Mount path such as `/app`: `/app/api/v1/...` reaches the service as `/api/v1/...`. */
  readonly prefix?: string;
  /**
   * Called with each answer just before it is written, for the host's request log: `response.meta`
   * holds the route template and client id, which are never sent. A throw is ignored.
   */
  readonly onResponse?: (response: ServiceResponse, req: IncomingMessage) => void;
}

/** Options of `createNodeServer`; with `tls` (PEM texts) it serves HTTPS. */
export interface NodeServerOptions extends NodeHandlerOptions {
  readonly tls?: { readonly cert: string | Buffer; readonly key: string | Buffer };
  /**
   * Called with the answer to bytes node:http could not parse as a request (they never reach
   * the service), just before it is written, for the host's log. A throw is ignored.
   */
  readonly onClientError?: (response: ServiceResponse, error: Error) => void;
}

function declaredLength(req: IncomingMessage): number {
  const value = req.headers['content-length'];
  return value === undefined ? 0 : Number(value);
}

// Status, headers and body only: `meta` is for the host, never for the client. One writeHead
// with a flat list is node's cheapest way to send a response's headers.
function write(res: ServerResponse, response: ServiceResponse): void {
  if (res.destroyed) return;
  const body = sendsBody(response.status) ? response.body : undefined;
  const headers: string[] = [];
  for (const name of Object.keys(response.headers)) headers.push(name, response.headers[name] as string);
  if (body !== undefined && response.headers['content-length'] === undefined && !res.hasHeader('content-length')) {
    headers.push('content-length', String(Buffer.byteLength(body, 'utf8')));
  }
  res.writeHead(response.status, headers);
  res.end(body);
}

/**
 * A node:http request listener for the service. Bodies over 131072 bytes are not buffered: a
 * declared length over the limit is never read, a streamed one stops at one byte over, and the
 * connection is closed after the 413.
 */
export function toNodeHandler(service: Handler, options: NodeHandlerOptions = {}): (req: IncomingMessage, res: ServerResponse) => void {
  const prefix = normalisePrefix(options.prefix, 'toNodeHandler');
  const { onResponse } = options;

  return (req, res) => {
    // A client that goes away mid-request must not take the process with it.
    req.on('error', () => req.destroy());
    res.on('error', () => res.destroy());

    const answer = (response: ServiceResponse): void => {
      observe(onResponse, response, req);
      // A response already under way (or gone) is left alone.
      if (res.headersSent) return;
      write(res, response);
    };

    const dispatch = (body: Buffer | undefined): void => {
      const result = handleSafely(service, {
        method: req.method ?? 'GET',
        url: mountedUrl(originForm(req.url ?? '/'), prefix),
        headers: req.headers,
        body,
      });
      if (result instanceof Promise) void result.then(answer);
      else answer(result);
    };

    if (declaredLength(req) > MAX_BODY_BYTES) {
      res.setHeader('connection', 'close');
      dispatch(undefined);
      return;
    }
    // Without Content-Length or Transfer-Encoding a request has no body (RFC 9112, 6.3): most
    // reads are answered at once instead of waiting for the stream's end event.
    if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
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
  const handler = toNodeHandler(service, options);
  // Connections with an answer still to come: an error answer written there could land in the
  // middle of it, so such a connection is only closed.
  const answering = new Map<Socket, number>();
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    const socket = req.socket;
    answering.set(socket, (answering.get(socket) ?? 0) + 1);
    res.once('close', () => {
      const left = (answering.get(socket) ?? 1) - 1;
      if (left === 0) answering.delete(socket);
      else answering.set(socket, left);
    });
    handler(req, res);
  };
  const server: Server =
    options.tls === undefined
      ? createHttpServer(listener)
      : createHttpsServer({ cert: options.tls.cert, key: options.tls.key }, listener);
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (declaredLength(req) <= MAX_BODY_BYTES) res.writeContinue();
    listener(req, res);
  });
  server.on('clientError', (error: Error, socket: Duplex) => {
    const answer = clientErrorAnswer(error);
    if (answer === null || !socket.writable || answering.has(socket as Socket)) {
      socket.destroy();
      return;
    }
    if (typeof answer !== 'string') observe(options.onClientError, answer, error);
    socket.end(typeof answer === 'string' ? answer : rawResponse(answer), () => socket.destroy());
  });
  return server;
}

/**
 * What to answer bytes node:http could not parse (its own answer would be a bare status line):
 * the API's error shape with a trace id, so a client can quote it. A malformed request (bad
 * syntax, invalid characters, a header block over node's size limit) is 400 validation_failed,
 * oversized chunk extensions are 413; a client too slow to send its request gets node's own 408,
 * as no error code of the API fits. Null: the peer is gone.
 */
function clientErrorAnswer(error: Error): ServiceResponse | string | null {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ECONNRESET' || code === 'EPIPE') return null;
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n';
  const traceId = randomUUID().replaceAll('-', '');
  return problemResponse(code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW' ? 'request_too_large' : 'validation_failed', traceId);
}

/** A complete HTTP/1.1 message for a socket no ServerResponse owns; the connection closes after it. */
function rawResponse(response: ServiceResponse): string {
  const body = response.body ?? '';
  const lines = [`HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ''}`];
  for (const [name, value] of Object.entries(response.headers)) lines.push(`${name}: ${value}`);
  lines.push(`content-length: ${Buffer.byteLength(body, 'utf8')}`, 'connection: close');
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}
