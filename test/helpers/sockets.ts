import { connect, type Socket } from 'node:net';
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

/** What `answers` saw: the bytes received, and whether the server ended the connection first. */
export interface Answers {
  readonly text: string;
  readonly closedByServer: boolean;
}

/** Whole answers (head and a Content-Length body) at the start of `text`. */
function countAnswers(text: string): number {
  let count = 0;
  let at = 0;
  for (;;) {
    const headEnd = text.indexOf('\r\n\r\n', at);
    if (headEnd === -1) return count;
    const head = text.slice(at, headEnd);
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    const end = headEnd + 4 + length;
    if (text.length < end) return count;
    if (!/^HTTP\/1\.1 1\d\d /.test(head)) count += 1;
    at = end;
  }
}

/**
 * Connects, runs `send` (which may write for as long as it likes, and should stop once the socket
 * is destroyed), and resolves once `wanted` final answers have arrived, or the server ended the
 * connection; then closes its side. Unlike `raw`, it does not wait for a server that keeps the
 * connection open.
 */
export function answers(port: number, wanted: number, send: (socket: Socket) => void | Promise<void>): Promise<Answers> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    let settled = false;
    const settle = (closedByServer: boolean): void => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve({ text: Buffer.concat(received).toString('latin1'), closedByServer });
    };
    socket.on('data', (chunk: Buffer) => {
      received.push(chunk);
      if (countAnswers(Buffer.concat(received).toString('latin1')) >= wanted) settle(false);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => settle(true));
    socket.on('connect', () => void send(socket));
  });
}
