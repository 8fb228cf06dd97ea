import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { ServiceResponse } from '../lib/http/types.js';
import { sendsBody } from './shared.js';

/**
 * Status, headers and body only: `meta` is for the host, never for the client. One writeHead
 * with a flat list is node's cheapest way to send a response's headers.
 */
export function write(res: ServerResponse, response: ServiceResponse): void {
  if (res.destroyed) return;
  const body = sendsBody(response.status) ? response.body : undefined;
  const headers: string[] = [];
  for (const name of Object.keys(response.headers)) headers.push(name, response.headers[name] as string);
  if (body !== undefined && response.headers['content-length'] === undefined && !res.hasHeader('content-length')) {
    headers.push('content-length', String(Buffer.byteLength(body, 'utf8')));
  }
  res.writeHead(response.status, headers);
  res.end(body);
}

/** A complete HTTP/1.1 message for a socket no ServerResponse owns; the connection closes after it. */
export function rawResponse(response: ServiceResponse): string {
  const body = sendsBody(response.status) ? response.body ?? '' : '';
  const lines = [`HTTP/1.1 ${response.status} ${STATUS_CODES[response.status] ?? ''}`];
  for (const [name, value] of Object.entries(response.headers)) {
    if (name !== 'content-length' && name !== 'connection') lines.push(`${name}: ${value}`);
  }
  lines.push(`content-length: ${Buffer.byteLength(body, 'utf8')}`, 'connection: close');
  return `${lines.join('\r\n')}\r\n\r\n${body}`;
}

/**
 * Whether a header field was repeated: node:http joins most repeated fields in `req.headers`
 * and keeps only the first `Authorization`, `Content-Type` or `Host`, so only then are there more
 * raw name-value pairs than keys.
 */
export function hasRepeatedField(req: IncomingMessage): boolean {
  return req.rawHeaders.length !== 2 * Object.keys(req.headers).length;
}
