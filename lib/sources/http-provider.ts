import { knownOptions } from '../option-names.js';
import type { ProviderItem, ProviderPublication, PublishRequest, SourceProvider } from './provider.js';

const HTTP_SOURCE_TIMEOUT_MS = 5000;
/** Decoded bytes (after any Content-Encoding): facts and replies fit easily; a runaway body does not. */
const HTTP_SOURCE_MAX_BODY_BYTES = 4 * 1024 * 1024;

/**
 * The body as JSON, refused once it grows past `limit` bytes, before it is all in memory. The read
 * ends when `signal` aborts: fetch follows its signal only weakly once it has answered, so after a
 * garbage collection a body that stalls would otherwise hold the call until undici's own 300 s.
 */
async function readJson(response: Response, limit: number, signal: AbortSignal): Promise<unknown> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  // fetch types its body as a stream of anything; it yields bytes.
  const body: ReadableStream<Uint8Array> | null = response.body;
  if (body !== null) {
    const reader = body.getReader();
    const cancel = (): void => {
      const reason: unknown = signal.reason;
      reader.cancel(reason).catch(() => undefined);
    };
    signal.addEventListener('abort', cancel, { once: true });
    let finished = false;
    try {
      for (;;) {
        signal.throwIfAborted();
        const { done, value } = await reader.read();
        // A cancelled read ends as if the body had: the abort's reason is the failure.
        signal.throwIfAborted();
        if (done) break;
        size += value.byteLength;
        if (size > limit) throw new Error(`source answer over ${limit} bytes`);
        chunks.push(value);
      }
      finished = true;
    } finally {
      signal.removeEventListener('abort', cancel);
      // A body not read to its end is cancelled, so its connection is not left holding it.
      if (!finished) cancel();
    }
  }
  // TextDecoder drops a byte-order mark, as response.json() would.
  const text = new TextDecoder().decode(Buffer.concat(chunks));
  try {
    return JSON.parse(text);
  } catch {
    // JSON.parse's message quotes the text, which would put what the source sent (a login page,
    // a secret) into the service's log with the failure.
    throw new Error(`source answer is not JSON (${size} bytes)`);
  }
}

/** The Basic `Authorization` value for a base URL's percent-encoded user and password (RFC 7617). */
function basicCredentials(encodedUser: string, encodedPassword: string): string {
  let user: string;
  let password: string;
  try {
    user = decodeURIComponent(encodedUser);
    password = decodeURIComponent(encodedPassword);
  } catch {
    throw new TypeError('httpSourceProvider: the user and password in baseUrl must be percent-encoded');
  }
  if (user.includes(':')) throw new TypeError('httpSourceProvider: the user in baseUrl must not contain ":" (RFC 7617)');
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}

/** The built-in provider: always asynchronous. */
export interface HttpSourceProvider extends SourceProvider {
  refresh(itemId: string, signal: AbortSignal): Promise<ProviderItem>;
  publish(itemId: string, request: PublishRequest, signal: AbortSignal): Promise<ProviderPublication>;
}

/**
 * The built-in `http` provider (contract 9): `refresh` is `GET {base}{encodeURIComponent(itemId)}`
 * expecting 200 JSON; `publish` is `POST {base}{encodeURIComponent(itemId)}/requests` expecting
 * 2xx JSON `{ref}`. Anything else, no answer within `timeoutMs` (default 5 s), or a body over
 * `maxBodyBytes` (default 4 MiB), is a failure. Uses Node's own fetch, so no connection settings
 * or credentials of the source ever pass through the service's data: they stay in the base URL
 * the operator configured, whose user and password are sent as HTTP Basic authentication (fetch
 * refuses a URL holding them, and would log it whole).
 */
export function httpSourceProvider(baseUrl: string, options: { timeoutMs?: number; maxBodyBytes?: number } = {}): HttpSourceProvider {
  const given = knownOptions(options, 'httpSourceProvider', ['timeoutMs', 'maxBodyBytes']);
  const url = URL.canParse(String(baseUrl)) ? new URL(String(baseUrl)) : null;
  if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new TypeError('httpSourceProvider: baseUrl must be an http: or https: URL');
  }
  const authorization = url.username === '' && url.password === '' ? undefined : basicCredentials(url.username, url.password);
  url.username = '';
  url.password = '';
  const base = url.toString();
  const positive = (name: string, fallback: number): number => {
    const value = given[name];
    if (value === undefined) return fallback;
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
      throw new TypeError(`httpSourceProvider: options.${name} must be a positive integer`);
    }
    return value;
  };
  const timeoutMs = positive('timeoutMs', HTTP_SOURCE_TIMEOUT_MS);
  const maxBodyBytes = positive('maxBodyBytes', HTTP_SOURCE_MAX_BODY_BYTES);

  async function call(url: string, init: RequestInit, signal: AbortSignal, accept: (status: number) => boolean): Promise<unknown> {
    // Not AbortSignal.timeout(): on Node 20 a garbage collection can drop a time-out signal that
    // only AbortSignal.any() holds, and the call then waits on the source until undici's own
    // limits (nodejs/node#57736). The timer holds this controller until it fires or is cleared.
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(new DOMException('The operation was aborted due to timeout', 'TimeoutError')), timeoutMs);
    // Like AbortSignal.timeout's, it keeps no process alive (the call's own socket does).
    timer.unref();
    // Held here, and passed on to the body read, which fetch no longer follows once it has answered.
    const combined = AbortSignal.any([signal, deadline.signal]);
    try {
      const response = await fetch(url, {
        ...init,
        headers: {
          accept: 'application/json',
          ...(init.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...(authorization === undefined ? {} : { authorization }),
        },
        signal: combined,
        redirect: 'error',
      });
      if (!accept(response.status)) {
        await response.body?.cancel();
        throw new Error(`source answered ${response.status}`);
      }
      return await readJson(response, maxBodyBytes, combined);
    } finally {
      clearTimeout(timer);
    }
  }

  // An id of `.` or `..` as a whole path segment would be resolved away by the URL parser (as
  // would its percent-encoded form), sending the call to another resource of the source.
  const itemUrl = (itemId: string): string => {
    const inPath = url.search === '' && url.hash === '' && base.endsWith('/');
    if (inPath && (itemId === '.' || itemId === '..')) {
      throw new Error(`item id "${itemId}" cannot be a path segment of the base URL`);
    }
    return `${base}${encodeURIComponent(itemId)}`;
  };

  // The source's JSON is passed on unchecked: the service checks every value of a provider's answer.
  return {
    refresh: async (itemId, signal) =>
      call(itemUrl(itemId), { method: 'GET' }, signal, (status) => status === 200) as Promise<ProviderItem>,
    publish: async (itemId, request: PublishRequest, signal) =>
      call(
        `${itemUrl(itemId)}/requests`,
        { method: 'POST', body: JSON.stringify(request) },
        signal,
        (status) => status >= 200 && status < 300,
      ) as Promise<ProviderPublication>,
  };
}
