import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { TapTest } from './api.js';

/** Tests that need a certificate skip with this reason where openssl is missing (false: it is there). */
export const OPENSSL_MISSING: string | false = spawnSync('openssl', ['version'], { encoding: 'utf8' }).status === 0 ? false : 'openssl is not installed';

/**
 * A self-signed P-256 certificate for 127.0.0.1 and its key, valid for a day, written as
 * `NAME-cert.pem` and `NAME-key.pem` in `dir`; the test asserts that openssl made them.
 */
export function selfSignedPair(tt: TapTest, dir: string, name: string): { cert: string; key: string } {
  const files = { cert: join(dir, `${name}-cert.pem`), key: join(dir, `${name}-key.pem`) };
  const made = spawnSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', files.key, '-out', files.cert,
    '-days', '1', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1',
  ], { encoding: 'utf8' });
  tt.equal(made.status, 0, made.stderr);
  return files;
}
