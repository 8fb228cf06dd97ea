import { connect } from 'node:net';
import type { ServiceRequest, ServiceResponse } from '../../lib/http/types.js';

interface Handler {
  handle(request: ServiceRequest): ServiceResponse | Promise<ServiceResponse>;
}

/** Records what reached handle() and answers from `inner`. */
export function recording(inner: Handler): Handler & { seen: ServiceRequest[] } {
  const seen: ServiceRequest[] = [];
  return {
    seen,
    handle(request) {
      seen.push(request);
      return inner.handle(request);
    },
  };
}

/**
 * Writes raw bytes and returns everything the server sent until it closed the connection. A
 * reset after the answer (the server stops reading an oversized body) still counts as closed.
 */
export function raw(port: number, chunks: readonly (string | Buffer)[]): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    socket.on('error', () => undefined);
    socket.on('close', () => resolve(Buffer.concat(received).toString('latin1')));
    for (const chunk of chunks) socket.write(chunk);
  });
}
