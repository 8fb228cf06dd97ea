import type { HeaderValue } from './types.js';

/** Case-insensitive, single-valued view of request headers. */
export interface RequestHeaders {
  get(name: string): string | undefined;
}

/**
 * Normalises header names once per request. A repeated header is joined with ", " as HTTP list
 * syntax says, so a doubled `Authorization` or `If-Match` fails its own parser instead of one
 * value being silently chosen.
 */
export function requestHeaders(raw: Readonly<Record<string, HeaderValue>>): RequestHeaders {
  const values = new Map<string, string>();
  for (const name of Object.keys(raw)) {
    // Typed hosts send strings or string lists; an untyped one may send null (absent) or numbers,
    // which must fail their header's parser, not crash the pipeline with a 500.
    const value = raw[name] as unknown;
    if (value === undefined || value === null) continue;
    const text = typeof value === 'string' ? value : Array.isArray(value) ? value.map(String).join(', ') : String(value);
    const key = name.toLowerCase();
    const previous = values.get(key);
    values.set(key, previous === undefined ? text : `${previous}, ${text}`);
  }
  // Names are case-insensitive on both sides: a caller asking for `Content-Type` must not get
  // undefined just because the names were stored lower-cased.
  return { get: (name) => values.get(name.toLowerCase()) };
}
