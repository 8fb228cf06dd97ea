import { createServer as createHttpServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import { MAX_BODY_BYTES } from '../lib/http/body.js';
import type { ServiceResponse } from '../lib/http/types.js';
import { ConnectionAnswers } from './node-connections.js';
import { drainRest, endAfterAnswer } from './node-drain.js';
import { hasRepeatedField, write } from './node-response.js';
import { tlsPairProblem, type TlsPair } from './tls-pair.js';
import { bodyAlreadyReadReporter, checkAdapterOptions, handleSafely, mountedResponse, mountedUrl, observe, originForm, type Handler } from './shared.js';

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
  readonly tls?: TlsPair;
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

/**
 * Requests over the limit that `createNodeServer` kept from getting `100 Continue`: their client
 * sends no body, so there is none to drain. (A bare node:http server sends the 100 itself, before
 * the handler runs, and the body comes.)
 */
const continueWithheld = new WeakSet<IncomingMessage>();

/**
 * Whether node:http closes the connection after this answer: the client asked for it (or speaks
 * HTTP/1.0), or the host said so (`serve` does while stopping).
 */
function closesAfter(res: ServerResponse): boolean {
  return !res.shouldKeepAlive || /(^|,)\s*close\s*(,|$)/i.test(String(res.getHeader('connection') ?? ''));
}

/**
 * The request's headers with every value of a repeated field. node:http keeps only the first
 * `Authorization`, `Content-Type` or `Host` in `req.headers` (and joins other repeated fields);
 * the service must see the repetition, so two credentials fail authentication instead of the
 * first being picked silently.
 */
function headersOf(req: IncomingMessage): IncomingHttpHeaders | NodeJS.Dict<string[]> {
  return hasRepeatedField(req) ? req.headersDistinct : req.headers;
}

/**
 * Where a host mounted the handler, when it has already taken that path off `req.url`: Express's
 * `req.baseUrl` (`app.use('/tasks-api', handler)`). A Location answer needs it to stay inside the
 * mount. Only a plain path is used, so nothing a client sent can make the header invalid.
 */
function hostMount(req: IncomingMessage): string {
  const baseUrl: unknown = (req as IncomingMessage & { baseUrl?: unknown }).baseUrl;
  return typeof baseUrl === 'string' && /^(?:\/[A-Za-z0-9._~!$&'()*+,;=:@%-]+)+$/.test(baseUrl) ? baseUrl : '';
}

/**
 * A node:http request listener for the service. Bodies over 131072 bytes are not buffered: a
 * declared length over the limit is answered 413 before any of it is read, a streamed one once it
 * is one byte over, and the rest is drained (`OVERSIZED_BODY_DRAIN`). On a connection that stays
 * open the 413 goes out at once; on one that closes after it, once the body has been drained,
 * as closing with unread bytes would reset the connection under the answer.
 */
export function toNodeHandler(service: Handler, options: NodeHandlerOptions = {}): (req: IncomingMessage, res: ServerResponse) => void {
  const prefix = checkAdapterOptions(service, options, 'toNodeHandler', ['prefix', 'onResponse']);
  const { onResponse } = options;
  const bodyAlreadyRead = bodyAlreadyReadReporter('toNodeHandler');

  return (req, res) => {
    // A client that goes away mid-request must not take the process with it.
    req.on('error', () => req.destroy());
    res.on('error', () => res.destroy());

    let draining: Promise<'ended' | 'cut'> | undefined;
    const drain = (): void => {
      draining = drainRest(req);
      void draining.then((outcome) => outcome === 'cut' && endAfterAnswer(req, res));
    };
    const answer = (response: ServiceResponse): void => {
      // A response already under way (another answer: a 413, a 400 for bytes after the request) is
      // left alone. One whose client has gone is still the answer to a request that was carried
      // out (a claim taken, a note added): the host's log hears of it, though it cannot be sent.
      const send = (): void => {
        if (res.headersSent) return;
        observe(onResponse, response, req);
        write(res, response);
      };
      if (draining !== undefined && closesAfter(res)) void draining.then(send);
      else send();
    };

    const dispatch = (body: Buffer | undefined): void => {
      const result = handleSafely(service, {
        method: req.method ?? 'GET',
        url: mountedUrl(originForm(req.url ?? '/'), prefix),
        headers: headersOf(req),
        body,
      });
      // The host's mount is looked up only for the rare answer with a Location.
      const mounted = (response: ServiceResponse): ServiceResponse =>
        response.headers['location'] === undefined ? response : mountedResponse(response, `${hostMount(req)}${prefix}`);
      if (result instanceof Promise) void result.then((response) => answer(mounted(response)));
      else answer(mounted(result));
    };

    if (declaredLength(req) > MAX_BODY_BYTES) {
      if (continueWithheld.has(req)) res.setHeader('connection', 'close');
      else drain();
      dispatch(undefined);
      return;
    }
    // Without Content-Length or Transfer-Encoding a request has no body (RFC 9112, 6.3): most
    // reads are answered at once instead of waiting for the stream's end event.
    if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
      dispatch(undefined);
      return;
    }

    // Something before us (a body parser such as express.json()) has read the body: it can never
    // arrive, and waiting for it would leave the client hanging. A host mistake, so a 500.
    if (req.readableEnded) {
      answer(bodyAlreadyRead());
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
        drain();
        dispatch(Buffer.concat(chunks, total).subarray(0, MAX_BODY_BYTES + 1));
      }
    };
    const onEnd = (): void => dispatch(total === 0 ? undefined : Buffer.concat(chunks, total));
    req.on('data', onData);
    req.on('end', onEnd);
  };
}

/** A TypeError in words, as for every other option, where node would throw an OpenSSL error code. */
function checkTlsPair(pair: TlsPair): void {
  const problem = tlsPairProblem(pair);
  if (problem === 'cert') throw new TypeError('createNodeServer: options.tls.cert is not a PEM certificate');
  if (problem === 'key') throw new TypeError('createNodeServer: options.tls.key is not a PEM private key (without a passphrase)');
  if (problem === 'mismatch') throw new TypeError('createNodeServer: options.tls.key is not the private key of options.tls.cert');
}

/**
 * An `http.Server` (or, with `options.tls`, an `https.Server`) answering with the service. It
 * does not listen yet. `Expect: 100-continue` with a body over the limit gets the 413 at once;
 * other expectations are ignored.
 */
export function createNodeServer(service: Handler, options: NodeServerOptions & Required<Pick<NodeServerOptions, 'tls'>>): HttpsServer;
export function createNodeServer(service: Handler, options?: NodeServerOptions): Server;
export function createNodeServer(service: Handler, options: NodeServerOptions = {}): Server {
  const prefix = checkAdapterOptions(service, options, 'createNodeServer', ['prefix', 'onResponse', 'onClientError', 'tls']);
  if (options.tls !== undefined) checkTlsPair(options.tls);
  const handler = toNodeHandler(service, { prefix, ...(options.onResponse === undefined ? {} : { onResponse: options.onResponse }) });
  const connections = new ConnectionAnswers(options);
  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    connections.track(req, res);
    if (connections.refuseHost(req, res)) return;
    handler(req, res);
  };
  // Host is checked by `refuseHost`, which answers in the API's error shape.
  const settings = { requireHostHeader: false };
  const server: Server =
    options.tls === undefined
      ? createHttpServer(settings, listener)
      : createHttpsServer({ ...settings, cert: options.tls.cert, key: options.tls.key }, listener);
  // node:http sends any Expect naming 100-continue (beside others too) here.
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => {
    if (declaredLength(req) <= MAX_BODY_BYTES) res.writeContinue();
    else continueWithheld.add(req);
    listener(req, res);
  });
  // RFC 9110 (10.1.1) lets a server ignore an expectation it does not know: node's own answer
  // would be a bare 417, outside the API's error shape and with no error code of the API.
  server.on('checkExpectation', listener);
  server.on('clientError', (error: Error, socket: Duplex) => connections.clientError(error, socket, service, prefix));
  server.on('connect', (req: IncomingMessage, socket: Duplex) => connections.connect(service, req, socket, prefix));
  return server;
}
