/**
 * What HTTP caches may keep (RFC 9111). A task read may stay in the caller's own cache, which must
 * revalidate it with `If-None-Match` before each use; it varies with the credential, as readers
 * with other scopes get another body (no assistance content without human-requests:read) under
 * the same ETag, which names only the task and the workspace version. No other answer is kept
 * anywhere: lists, identities and refusals are per client and change without a validator, and a
 * proxy caching by URL (nginx's proxy_cache, Varnish) would hand them to other clients.
 */
export const REVALIDATED_PER_CLIENT = { 'cache-control': 'private, no-cache', vary: 'Authorization' } as const;
export const NOT_STORED = 'no-store';

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
