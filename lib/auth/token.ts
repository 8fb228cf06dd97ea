import { createHash, randomBytes } from 'node:crypto';

/**
 * What an API token may be, in a fixture and in `Authorization: Bearer`: visible ASCII, no spaces.
 * Wider than RFC 6750's b64token, so a test fixture's `acme:ada` works as written; a token is only
 * ever looked up by its hash, so its characters carry no meaning. A space or a non-ASCII character
 * could not travel in the header unambiguously.
 */
export const TOKEN_CHARACTERS = '[\\x21-\\x7E]+';
export const MAX_TOKEN_LENGTH = 512;

/**
 * Tokens are stored only as this hash. Generated ones are long random strings, so a fast hash
 * suffices; short tokens come only from fixtures, which are for tests and demos.
 */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A new API token: recognisable by its `wta_` prefix if it ever leaks. */
export function generateToken(): string {
  return `wta_${randomBytes(32).toString('base64url')}`;
}
