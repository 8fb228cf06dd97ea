import { createSecureContext, type SecureContextOptions } from 'node:tls';

/** A certificate and its private key, PEM. */
export interface TlsPair {
  readonly cert: string | Buffer;
  readonly key: string | Buffer;
}

/**
 * What is wrong with a certificate and key, or null: each is tried alone and then together, as
 * node would load them, so a wrong, swapped or mismatched one can be named in words rather than
 * by an OpenSSL error code. `'key'` also covers a key that needs a passphrase.
 */
export function tlsPairProblem(pair: TlsPair): 'cert' | 'key' | 'mismatch' | null {
  const refused = (options: SecureContextOptions): boolean => {
    try {
      createSecureContext(options);
      return false;
    } catch {
      return true;
    }
  };
  // node takes an empty string for no certificate at all, and every handshake would then fail.
  if (pair.cert.length === 0 || refused({ cert: pair.cert })) return 'cert';
  if (pair.key.length === 0 || refused({ key: pair.key })) return 'key';
  return refused({ cert: pair.cert, key: pair.key }) ? 'mismatch' : null;
}
