/**
 * `If-None-Match` uses weak comparison (RFC 9110 13.1.2): `W/` prefixes are ignored and `*`
 * matches any current representation.
 */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  for (const raw of header.split(',')) {
    const candidate = raw.trim();
    if (candidate === '*') return true;
    const opaque = candidate.startsWith('W/') ? candidate.slice(2) : candidate;
    if (opaque === etag) return true;
  }
  return false;
}
