import { MAX_BODY_BYTES } from '../lib/http/body.js';
import type { ServiceResponse } from '../lib/http/types.js';
import { bodyAlreadyReadReporter, checkAdapterOptions, handleSafely, mountedResponse, mountedUrl, observe, sendsBody, type Handler } from './shared.js';

export type { Handler } from './shared.js';

/** Options of `toFetchHandler`. */
export interface FetchHandlerOptions {
  /** Mount path such as `/app`: `/app/api/v1/...` reaches the service as `/api/v1/...`. */
  readonly prefix?: string;
  /**
   * Called with each answer before it becomes a `Response`, for the host's request log:
   * `response.meta` holds the route template and client id, which are never sent. A throw is
   * ignored.
   */
  readonly onResponse?: (response: ServiceResponse, request: Request) => void;
}

/**
 * Reads at most one byte over the limit. Returns undefined for no body; past the limit it stops
 * reading (the rest is left to the host) and returns what it has, so the core answers 413.
 */
async function readLimited(request: Request): Promise<{ body: Uint8Array | undefined; complete: boolean }> {
  if (request.body === null) return { body: undefined, complete: true };
  // fetch types its body as a stream of anything; it yields bytes.
  const body: ReadableStream<Uint8Array> = request.body;
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
      total += value.byteLength;
      if (total > MAX_BODY_BYTES) {
        return { body: concat(chunks, total).subarray(0, MAX_BODY_BYTES + 1), complete: false };
      }
    }
  } finally {
    reader.releaseLock();
  }
  return { body: total === 0 ? undefined : concat(chunks, total), complete: true };
}

function concat(chunks: readonly Uint8Array[], total: number): Uint8Array {
  if (chunks.length === 1 && chunks[0] !== undefined) return chunks[0];
  const joined = new Uint8Array(total);
  let offset = 0;
  for (const chunk of chunks) {
    joined.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return joined;
}

/** Headers as a record with lowercase names; repeated fields arrive joined with ", " by `Headers`. */
function headerRecord(headers: Headers): Record<string, string> {
  const record: Record<string, string> = {};
  headers.forEach((value, name) => {
    record[name] = value;
  });
  return record;
}

// Status, headers and body only: `meta` is for the host, never for the client.
function toResponse(response: ServiceResponse, unreadBody: boolean): Response {
  const headers = new Headers(response.headers);
  // Like the node adapter: an HTTP/1.1 host closes the connection rather than drain a body nobody reads.
  if (unreadBody) headers.set('connection', 'close');
  const body = sendsBody(response.status) ? response.body ?? null : null;
  return new Response(body, { status: response.status, headers });
}

/**
 * A WHATWG fetch handler for the service, `(request: Request) => Promise<Response>`, for hosts
 * built on the fetch API and running on Node (Hono on Node, say: the service needs
 * better-sqlite3). It enforces the 131072-byte body limit while reading: a declared
 * `Content-Length` over the limit is never read, a streamed body is read to one byte over the
 * limit at most; both are answered 413 by the core. It rejects only when reading the request
 * body fails (the client went away).
 */
export function toFetchHandler(service: Handler, options: FetchHandlerOptions = {}): (request: Request) => Promise<Response> {
  const prefix = checkAdapterOptions(service, options, 'toFetchHandler', ['prefix', 'onResponse']);
  const { onResponse } = options;
  const bodyAlreadyRead = bodyAlreadyReadReporter('toFetchHandler');

  return async (request) => {
    // Middleware before us read the body: it can never arrive. A host mistake, answered as the
    // node adapter answers it (a problem+json 500 the host's onResponse sees), not a rejection.
    if (request.bodyUsed || request.body?.locked === true) {
      const refused = bodyAlreadyRead();
      observe(onResponse, refused, request);
      return toResponse(refused, false);
    }
    const url = new URL(request.url);
    const headers = headerRecord(request.headers);
    const declared = Number(headers['content-length'] ?? 0);
    const { body, complete } =
      declared > MAX_BODY_BYTES ? { body: undefined, complete: request.body === null } : await readLimited(request);
    const response = mountedResponse(await handleSafely(service, {
      method: request.method,
      url: mountedUrl(`${url.pathname}${url.search}`, prefix),
      headers,
      body,
    }), prefix);
    observe(onResponse, response, request);
    return toResponse(response, !complete);
  };
}
