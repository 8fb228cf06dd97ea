import { readFileSync } from 'node:fs';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import { CommandError } from './command-line.js';

function readPem(path: string, flag: string): Buffer {
  try {
    return readFileSync(path);
  } catch {
    throw new CommandError(`cannot read ${flag} ${path}`);
  }
}

export interface TlsFile {
  readonly path: string;
  /** The flag or environment variable that named it, for messages. */
  readonly name: string;
}

/**
 * Reads the certificate and key and checks them together before anything is opened, so a wrong,
 * swapped or mismatched file is named in words rather than by an OpenSSL error code.
 */
export function readTlsPair(certFile: TlsFile, keyFile: TlsFile): { cert: Buffer; key: Buffer } {
  const cert = readPem(certFile.path, certFile.name);
  const key = readPem(keyFile.path, keyFile.name);
  const problem = (options: SecureContextOptions): boolean => {
    try {
      createSecureContext(options);
      return false;
    } catch {
      return true;
    }
  };
  if (problem({ cert })) throw new CommandError(`${certFile.name} ${certFile.path} is not a PEM certificate`);
  if (problem({ key })) throw new CommandError(`${keyFile.name} ${keyFile.path} is not a PEM private key (without a passphrase)`);
  if (problem({ cert, key })) throw new CommandError(`${keyFile.name} ${keyFile.path} is not the private key of the certificate in ${certFile.name} ${certFile.path}`);
  return { cert, key };
}
