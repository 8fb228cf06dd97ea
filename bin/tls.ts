import { readFileSync } from 'node:fs';
import { tlsPairProblem } from '../adapters/tls-pair.js';
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
  switch (tlsPairProblem({ cert, key })) {
    case 'cert':
      throw new CommandError(`${certFile.name} ${certFile.path} is not a PEM certificate`);
    case 'key':
      throw new CommandError(`${keyFile.name} ${keyFile.path} is not a PEM private key (without a passphrase)`);
    case 'mismatch':
      throw new CommandError(`${keyFile.name} ${keyFile.path} is not the private key of the certificate in ${certFile.name} ${certFile.path}`);
    case null:
      return { cert, key };
  }
}
