import { createHash, randomBytes } from 'node:crypto';

/** Tokens are stored only as this hash. They are long random strings, so a fast hash suffices. */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** A new API token: recognisable by its `wta_` prefix if it ever leaks. */
export function generateToken(): string {
  return `wta_${randomBytes(32).toString('base64url')}`;
}
