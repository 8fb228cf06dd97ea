import { newTraceId, problemResponse } from '../lib/http/problem.js';
import type { ServiceRequest, ServiceResponse } from '../lib/http/types.js';
import { knownOptions } from '../lib/option-names.js';
import { callQuietly } from '../lib/quiet-call.js';

/** Anything with the service's `handle`. */
export interface Handler {
  handle(request: ServiceRequest): ServiceResponse | Promise<ServiceResponse>;
}

/**
 * What a path can hold as it arrives, through node:http and through the URL parser of a fetch
 * host alike: printable ASCII without the characters the URL parser percent-encodes in a path
 * (space " # < > ? ` { }) or reads as a separator (\), and no `.` or `..` segment, which it
 * resolves away.
 */
const URL_PATH = /^(?!.*\/\.\.?(?:\/|$))[!$-;=@-[\]-_a-z|~]*$/;

/** Checks and normalises a mount prefix (`/app/` becomes `/app`, `''` mounts at the root). */
function normalisePrefix(prefix: unknown, caller: string): string {
  if (prefix !== undefined && typeof prefix !== 'string') throw new TypeError(`${caller}: options.prefix must be a string starting with "/"`);
  // Trailing slashes counted off, not matched by /\/+$/: that regex is quadratic on a long run of
  // slashes that does not end the string.
  const given = prefix ?? '';
  let end = given.length;
  while (end > 0 && given.charCodeAt(end - 1) === 0x2f) end -= 1;
  const normalised = given.slice(0, end);
  if (normalised !== '' && !normalised.startsWith('/')) throw new TypeError(`${caller}: options.prefix must start with "/"`);
  // It is compared with the path as sent, so a character a client must percent-encode (a space,
  // a non-ASCII letter) or one that ends the path (? #) could never match.
  if (!URL_PATH.test(normalised)) {
    throw new TypeError(`${caller}: options.prefix must hold only characters a URL path carries as they are (percent-encode others)`);
  }
  return normalised;
}

const isPem = (value: unknown): boolean => typeof value === 'string' || Buffer.isBuffer(value);

/**
 * Checks an adapter's service and options once, when it is made, as createService does its own: a
 * misspelt name or a wrong type would otherwise show up as a puzzling failure on some later
 * request (or on every TLS handshake). Returns the normalised mount prefix.
 */
export function checkAdapterOptions(service: unknown, options: unknown, caller: string, known: readonly string[]): string {
  // Checked here rather than on the first request, which would otherwise be a 500 for every client.
  if (typeof service !== 'object' || service === null || typeof (service as Partial<Handler>).handle !== 'function') {
    throw new TypeError(`${caller}: service must be a service from createService (an object with a handle() method)`);
  }
  if (options === undefined) return '';
  const given = knownOptions(options, caller, known);
  for (const name of ['onResponse', 'onClientError']) {
    if (given[name] !== undefined && typeof given[name] !== 'function') throw new TypeError(`${caller}: options.${name} must be a function`);
  }
  const tls = given['tls'] as Record<string, unknown> | undefined;
  if (tls !== undefined && !(typeof tls === 'object' && tls !== null && isPem(tls['cert']) && isPem(tls['key']))) {
    throw new TypeError(`${caller}: options.tls must be { cert, key }, each a PEM string or Buffer`);
  }
  return normalisePrefix(given['prefix'], caller);
}

/**
 * The origin form (`/path?query`) of a request target. RFC 9112 (3.2.2) has servers accept the
 * absolute form too (`http://host/path?query`), which proxies send; its host part is dropped.
 */
export function originForm(target: string): string {
  if (target.startsWith('/')) return target;
  const authority = /^https?:\/\/[^/?#]*/i.exec(target);
  if (authority === null) return target;
  const rest = target.slice(authority[0].length);
  return rest.startsWith('/') ? rest : `/${rest}`;
}

/** The path and query as the service sees them: the prefix stripped, `/` for anything outside it. */
export function mountedUrl(url: string, prefix: string): string {
  if (prefix === '') return url;
  if (url === prefix) return '/';
  const next = url.charAt(prefix.length);
  if (url.startsWith(prefix) && (next === '/' || next === '?')) {
    return next === '/' ? url.slice(prefix.length) : `/${url.slice(prefix.length)}`;
  }
  // Nothing outside the mount is routable; '/' lets the core answer its own 404.
  return '/';
}

/**
 * The answer as seen from outside the mount: a `Location` the core gives as a path
 * (`/api/v1/human-requests/8`) gets the prefix, so a client following it stays inside the mount.
 */
export function mountedResponse(response: ServiceResponse, prefix: string): ServiceResponse {
  const location = response.headers['location'];
  if (prefix === '' || location === undefined || !location.startsWith('/')) return response;
  return { ...response, headers: { ...response.headers, location: `${prefix}${location}` } };
}

/** A 204 or 304 carries no body, whatever the response object says. */
export function sendsBody(status: number): boolean {
  return status !== 204 && status !== 304;
}

/** The adapters' own 500 when handle() broke its promise never to throw. */
function internalErrorResponse(): ServiceResponse {
  return problemResponse('internal_error', newTraceId());
}

/** The `code` of the process warning a host's body parser mounted before an adapter causes. */
export const BODY_ALREADY_READ_WARNING = 'WTA_BODY_ALREADY_READ';

/**
 * The 500 for a request whose body the host read first. That is a wiring mistake that fails every
 * write through the mount, so the first one also becomes a process warning (printed on stderr by
 * default): an embedder without `onResponse` would otherwise see only clients' 500s.
 */
export function bodyAlreadyReadReporter(adapter: 'toNodeHandler' | 'toFetchHandler'): () => ServiceResponse {
  let warned = false;
  return () => {
    const traceId = newTraceId();
    if (!warned) {
      warned = true;
      process.emitWarning(
        `worker-task-api: ${adapter} got a request whose body the host had already read (a body parser mounted before it?); ` +
          `it was answered 500 internal_error (traceId ${traceId}), as every such request will be`,
        { code: BODY_ALREADY_READ_WARNING },
      );
    }
    return problemResponse('internal_error', traceId);
  };
}

/** Calls `handle()`, turning a throw or a rejection into the core's 500. */
export function handleSafely(service: Handler, request: ServiceRequest): ServiceResponse | Promise<ServiceResponse> {
  let result: ServiceResponse | Promise<ServiceResponse>;
  try {
    result = service.handle(request);
  } catch {
    return internalErrorResponse();
  }
  return result instanceof Promise ? result.catch(() => internalErrorResponse()) : result;
}

/**
 * Runs an embedder's observer; its failure must never cost the client its answer, nor the process
 * its life: an async observer's rejection is swallowed too, not left unhandled.
 */
export function observe<T>(callback: ((response: ServiceResponse, request: T) => unknown) | undefined, response: ServiceResponse, request: T): void {
  if (callback !== undefined) callQuietly(() => callback(response, request));
}
