import { answers, raw } from '../helpers/sockets.js';

export { raw };
import { adaWorld, type TapTest } from '../helpers/api.js';
import { TOKENS } from '../helpers/fixture.js';
import type { Service } from '../../lib/service.js';

/**
 * What the embedding examples share: a service over the shared test world (ada-bot, Monday
 * 16 November 2026 10:00 London), the agent's normal flow over real sockets, and raw-socket
 * requests for the body limit.
 */

export const LIMIT = 131072;

/** The service an embedding test mounts; closed with the test. */
export function embeddedService(tt: TapTest): Service {
  const { service } = adaWorld();
  tt.teardown(() => service.close());
  return service;
}

/**
 * Identity, the offer, a read with its ETag, a PATCH with If-Match, and a conditional re-read,
 * through whatever app serves the API at `base` (e.g. `http://127.0.0.1:PORT/tasks-api/api/v1`).
 */
export async function agentFlow(tt: TapTest, base: string): Promise<void> {
  const auth = { authorization: `Bearer ${TOKENS.ada}` };

  const identity = await fetch(`${base}/identity`, { headers: auth });
  tt.equal(identity.status, 200, 'identity');
  tt.match(await identity.json(), { clientId: 100, clientName: 'ada-bot', resource: { id: 10 } });
  tt.match(identity.headers.get('x-trace-id') ?? '', /^[0-9a-f]{32}$/, 'X-Trace-Id passes through');
  tt.match(identity.headers.get('ratelimit') ?? '', /^"default";r=\d+;t=\d+$/, 'RateLimit passes through');

  const available = await fetch(`${base}/tasks/available`, { headers: auth });
  tt.equal(available.status, 200, 'tasks/available');
  tt.same(((await available.json()) as { id: number }[]).map((task) => task.id), [4, 1, 8, 3], 'the offer, in order');

  const read = await fetch(`${base}/tasks/1`, { headers: auth });
  tt.equal(read.status, 200, 'GET /tasks/1');
  const etag = read.headers.get('etag') ?? '';
  tt.match(etag, /^"task-1-plan-\d+"$/);

  const patched = await fetch(`${base}/tasks/1`, {
    method: 'PATCH',
    headers: { ...auth, 'content-type': 'application/json', 'if-match': etag },
    body: JSON.stringify({ status: 'InProgress' }),
  });
  tt.equal(patched.status, 204, 'PATCH with If-Match');
  tt.equal(await patched.text(), '', 'a 204 has no body');
  const next = patched.headers.get('etag') ?? '';
  tt.not(next, etag, 'the write answers with the new ETag');

  const stale = await fetch(`${base}/tasks/1`, {
    method: 'PATCH',
    headers: { ...auth, 'content-type': 'application/json', 'if-match': etag },
    body: JSON.stringify({ status: 'Ready' }),
  });
  tt.equal(stale.status, 412, 'the old ETag is stale');
  tt.equal(stale.headers.get('content-type'), 'application/problem+json');
  tt.match(await stale.json(), { code: 'stale_update', status: 412 });

  const unchanged = await fetch(`${base}/tasks/1`, { headers: { ...auth, 'if-none-match': next } });
  tt.equal(unchanged.status, 304, 'conditional re-read');
  tt.equal(await unchanged.text(), '', 'a 304 has no body');

  const after = await fetch(`${base}/tasks/1`, { headers: auth });
  tt.match(await after.json(), { id: 1, status: 'InProgress' });
}


export function statusOf(response: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1] ?? 0);
}

/**
 * The two oversized bodies at `path` on `port`: a declared Content-Length over the limit with
 * only the head and a few bytes sent (the answer cannot wait for the rest), and a chunked body
 * of 147456 bytes. Both must be 413 request_too_large. `drains`: the node adapter reads the rest
 * of the body and keeps the connection for the next request (`openApiPath`); the fetch adapter
 * leaves the body to its host and asks for the connection to be closed.
 */
export async function oversizedBodies(tt: TapTest, port: number, path: string, drains: { readonly openApiPath: string } | null): Promise<void> {
  const declared = await answers(port, 1, (socket) => {
    socket.write(`PATCH ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${LIMIT + 68928}\r\n\r\n{"a":`);
  });
  tt.equal(statusOf(declared.text), 413, 'declared Content-Length over the limit: 413 without reading it');
  tt.match(declared.text, /"code":"request_too_large"/);
  if (drains === null) tt.match(declared.text, /\r\nconnection: close\r\n/i, 'the connection is closed after the 413');
  else tt.notMatch(declared.text, /\r\nconnection: close\r\n/i, 'the body is drained, not cut off');

  const piece = Buffer.alloc(16384, 0x20);
  const streamed = await answers(port, drains === null ? 1 : 2, (socket) => {
    socket.write(`PATCH ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`);
    for (let index = 0; index < 9; index += 1) socket.write(Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]));
    socket.write('0\r\n\r\n');
    if (drains !== null) socket.write(`GET ${drains.openApiPath} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
  });
  tt.equal(statusOf(streamed.text), 413, 'chunked body over the limit: 413');
  tt.match(streamed.text, /"code":"request_too_large"/);
  if (drains !== null) {
    tt.equal(statusOf(streamed.text.slice(streamed.text.indexOf('HTTP/1.1', 1))), 200, 'the connection then serves the next request');
  }
}

/** Listens on 127.0.0.1 (a free port), closes at teardown, and answers the port and origin. */
export async function listenOnLoopback(tt: TapTest, server: import('node:http').Server): Promise<{ port: number; origin: string }> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  tt.teardown(() => new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  }));
  const { port } = server.address() as import('node:net').AddressInfo;
  return { port, origin: `http://127.0.0.1:${port}` };
}
