import { METHODS, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { newTraceId, problemResponse } from '../lib/http/problem.js';
import { NOT_STORED } from '../lib/http/conditional.js';
import type { ServiceResponse } from '../lib/http/types.js';
import { drainRest } from './node-drain.js';
import { hasRepeatedField, rawResponse, write } from './node-response.js';
import { whenSocketCloses } from './socket-close.js';
import { handleSafely, mountedUrl, observe, originForm, type Handler } from './shared.js';

/** The observers of `createNodeServer` that these answers report to. */
export interface ConnectionObservers {
  readonly onResponse?: (response: ServiceResponse, req: IncomingMessage) => void;
  readonly onClientError?: (response: ServiceResponse, error: Error) => void;
}

interface Exchange {
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
}

/**
 * What node:http would otherwise answer itself, with a bare status line and no trace id, or not
 * at all: bytes it cannot parse as a request, a missing or repeated Host, a CONNECT. These get
 * the API's error shape instead, and never land in the middle of an answer still to be sent on
 * the same connection.
 */
export class ConnectionAnswers {
  /** Requests of each connection still to be answered, oldest first. */
  readonly #pending = new Map<Duplex, Exchange[]>();
  /** What to send once a connection's pending answers are out. */
  readonly #after = new Map<Duplex, () => void>();
  readonly #whenClosed = whenSocketCloses();
  readonly #observers: ConnectionObservers;

  constructor(observers: ConnectionObservers) {
    this.#observers = observers;
  }

  /** Notes a request until its answer is out. */
  track(req: IncomingMessage, res: ServerResponse): void {
    const socket = req.socket;
    const exchange: Exchange = { req, res };
    const pending = this.#pending.get(socket);
    if (pending === undefined) this.#pending.set(socket, [exchange]);
    else pending.push(exchange);
    // A client gone with requests pipelined behind a slow answer: theirs never close. What was to
    // follow them still runs (a CONNECT's answer reaches onResponse), writing nothing.
    const forgetConnection = this.#whenClosed(socket, () => {
      this.#pending.delete(socket);
      const after = this.#after.get(socket);
      this.#after.delete(socket);
      after?.();
    });
    res.once('close', () => {
      forgetConnection();
      const left = (this.#pending.get(socket) ?? []).filter((other) => other !== exchange);
      if (left.length > 0) {
        this.#pending.set(socket, left);
        return;
      }
      this.#pending.delete(socket);
      const after = this.#after.get(socket);
      this.#after.delete(socket);
      after?.();
    });
  }

  /**
   * RFC 9112 (3.2): an HTTP/1.1 request without a Host, or any request with two, is 400. True
   * when it is refused (the answer follows once the body is drained).
   */
  refuseHost(req: IncomingMessage, res: ServerResponse): boolean {
    if (!hostInvalid(req)) return false;
    const response = problemResponse('validation_failed', newTraceId(), { connection: 'close' });
    // The connection closes after the answer, so the body still coming is drained first (as
    // before a 413 that closes it): closing under it would reset the connection, answer and all.
    void drainRest(req).then(() => {
      // Bytes that broke the body's framing meanwhile were answered (with their 400) instead.
      if (res.headersSent) return;
      observe(this.#observers.onResponse, response, req);
      write(res, response);
    });
    return true;
  }

  /**
   * Bytes node:http could not parse. A request on the connection whose body can no longer arrive
   * gets the answer; otherwise it follows the answers still pending, and the connection closes.
   * A request refused only for its method (`get`, `FOO`) is answered by the service's router.
   */
  clientError(error: Error, socket: Duplex, service: Handler, prefix: string): void {
    const line = refusedMethodLine(error);
    if (line === null) {
      this.#answerClientError(clientErrorAnswer(error), error, socket);
      return;
    }
    // Contract 1, step 1 comes before everything else, so the request line alone decides it.
    const routed = handleSafely(service, { method: line.method, url: mountedUrl(line.target, prefix), headers: {} });
    const answer = (response: ServiceResponse): void =>
      this.#answerClientError({ ...response, meta: { ...response.meta, method: line.method } }, error, socket);
    if (routed instanceof Promise) void routed.then(answer);
    else answer(routed);
  }

  #answerClientError(answer: ServiceResponse | null, error: Error, socket: Duplex): void {
    const pending = this.#pending.get(socket) ?? [];
    // The client ended its side in the middle of a message no request waits on: typically the
    // upload it gave up after its 413. That was the answer; another would only confuse it.
    const abandoned = (error as NodeJS.ErrnoException).code === 'HPE_INVALID_EOF_STATE' && pending.length === 0;
    if (answer === null || abandoned || !socket.writable) {
      socket.destroy();
      return;
    }
    const cutOff = pending.find((exchange) => !exchange.req.complete);
    if (cutOff !== undefined) {
      if (cutOff.res.headersSent) {
        socket.destroy();
        return;
      }
      cutOff.res.once('finish', () => socket.destroy());
      // An answer to a request node:http delivered: the host's request log sees it as such.
      observe(this.#observers.onResponse, answer, cutOff.req);
      write(cutOff.res, { ...answer, headers: { ...answer.headers, connection: 'close' } });
      return;
    }
    observe(this.#observers.onClientError, answer, error);
    const bytes = rawResponse(answer);
    const send = (): void => {
      if (socket.writable) socket.end(bytes, () => socket.destroy());
      else socket.destroy();
    };
    if (pending.length === 0) send();
    else this.#after.set(socket, send);
  }

  /**
   * node:http hands a CONNECT to the `connect` event and, with no listener, drops the connection.
   * The service answers it like any other method (405 on an operation's path, 404 elsewhere).
   */
  connect(service: Handler, req: IncomingMessage, socket: Duplex, prefix: string): void {
    socket.on('error', () => socket.destroy());
    // Sent once the answers still due to earlier requests on the connection (pipelined before the
    // CONNECT, a write waiting for its commit, say) are out: the connection closes after it.
    const reply = (response: ServiceResponse): void => {
      const send = (): void => {
        observe(this.#observers.onResponse, response, req);
        if (socket.writable) socket.end(rawResponse(response), () => socket.destroy());
      };
      if ((this.#pending.get(socket)?.length ?? 0) === 0) send();
      else this.#after.set(socket, send);
    };
    if (hostInvalid(req)) {
      reply(problemResponse('validation_failed', newTraceId()));
      return;
    }
    const target = req.url ?? '';
    const result = handleSafely(service, {
      method: 'CONNECT',
      url: target.startsWith('/') ? mountedUrl(target, prefix) : '/',
      headers: req.headers,
    });
    if (result instanceof Promise) void result.then(reply);
    else reply(result);
  }
}

/** RFC 9112 (3.2): an HTTP/1.1 request without a Host, or any request with two. */
function hostInvalid(req: IncomingMessage): boolean {
  const missing = req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor >= 1;
  return missing || (hasRepeatedField(req) && (req.headersDistinct.host?.length ?? 0) > 1);
}

/** RFC 9110 (5.6.2) token characters, which a method is made of. */
const TOKEN_CHAR = /^[!#$%&'*+.^_`|~0-9A-Za-z-]$/;
const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) ([\x21-\x7e]+) HTTP\/1\.[01]\r?\n/;
const PARSED_METHODS = new Set(METHODS);

/**
 * The method and origin-form target of a request node:http refused only because its parser knows
 * no such method (methods are case-sensitive, so `get` is one of them). Null for anything else,
 * or when the line cannot be told for sure: the packet may hold earlier pipelined requests, so
 * the line is taken from the run of token characters that ends where parsing failed, and a
 * method node:http does parse means that run began inside an earlier request's body.
 */
function refusedMethodLine(error: Error): { method: string; target: string } | null {
  const { code, rawPacket, bytesParsed } = error as Error & { code?: unknown; rawPacket?: unknown; bytesParsed?: unknown };
  if (code !== 'HPE_INVALID_METHOD' || !Buffer.isBuffer(rawPacket) || typeof bytesParsed !== 'number') return null;
  let start = Math.min(bytesParsed, rawPacket.length);
  while (start > 0 && TOKEN_CHAR.test(String.fromCharCode(rawPacket[start - 1] as number))) start -= 1;
  // node:http's header size limit bounds the request line too.
  const line = REQUEST_LINE.exec(rawPacket.subarray(start, start + 16_384).toString('latin1'));
  if (line === null) return null;
  const [, method = '', target = ''] = line;
  const path = originForm(target);
  if (PARSED_METHODS.has(method) || !path.startsWith('/')) return null;
  return { method, target: path };
}

/**
 * The answer to unparseable bytes: a malformed request (bad syntax, invalid characters, a header
 * block over node's size limit) is 400 validation_failed, oversized chunk extensions are 413; a
 * client too slow to send its request gets a bare 408 with only its X-Trace-Id (contract 1: every
 * response carries one) and no-store, as no error code of the API fits. Null: the peer is gone.
 */
function clientErrorAnswer(error: Error): ServiceResponse | null {
  const code = (error as NodeJS.ErrnoException).code;
  if (code === 'ECONNRESET' || code === 'EPIPE') return null;
  if (code === 'ERR_HTTP_REQUEST_TIMEOUT') return { status: 408, headers: { 'cache-control': NOT_STORED, 'x-trace-id': newTraceId() }, body: '' };
  return problemResponse(code === 'HPE_CHUNK_EXTENSIONS_OVERFLOW' ? 'request_too_large' : 'validation_failed', newTraceId());
}
