import { spawnSync } from 'node:child_process';
import { join } from 'node:path';

/** Tests that need a certificate skip with this reason where openssl is missing (false: it is there). */
export const OPENSSL_MISSING: string | false = spawnSync('openssl', ['version'], { encoding: 'utf8' }).status === 0 ? false : 'openssl is not installed';

/**
 * A self-signed P-256 certificate for 127.0.0.1 and its key, valid for a day, written as
 * `NAME-cert.pem` and `NAME-key.pem` in `dir`. Throws with openssl's message if it fails.
 */
export function selfSignedPair(dir: string, name: string): { cert: string; key: string } {
  const files = { cert: join(dir, `${name}-cert.pem`), key: join(dir, `${name}-key.pem`) };
  const made = spawnSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', files.key, '-out', files.cert,
    '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
  ], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`openssl: ${made.stderr}`);
  return files;
}
