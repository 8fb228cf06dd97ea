import t from 'tap';
import { answers, raw, recording } from '../helpers/sockets.js';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { mock } from 'node:test';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createNodeServer, toNodeHandler, type Handler, type NodeServerOptions } from '../../adapters/node-http.js';
import type { ServiceResponse } from '../../lib/http/types.js';
import { createService, type Service } from '../../lib/service.js';
import { adaWorld, type TapTest } from '../helpers/api.js';
import { TOKENS } from '../helpers/fixture.js';
import { watchWarnings } from '../helpers/warnings.js';
import { BODY_ALREADY_READ_WARNING } from '../../adapters/shared.js';

const LIMIT = 131072;

/** A service over an empty in-memory database, closed with the test. */
function emptyService(tt: TapTest): Service {
  const service = createService({ db: ':memory:' });
  tt.teardown(() => service.close());
  return service;
}

/** Listens on 127.0.0.1, port 0; the server is torn down with the test. */
async function listen(tt: TapTest, service: Handler, options?: NodeServerOptions): Promise<{ server: Server; base: string; port: number }> {
  const server = createNodeServer(service, options);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  tt.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  );
  const { port } = server.address() as AddressInfo;
  return { server, base: `http://127.0.0.1:${port}`, port };
}



/** A plain node:http server (not createNodeServer) with `listener`, as a host of toNodeHandler. */
async function listenBare(tt: TapTest, listener: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ port: number }> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  tt.teardown(() => new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  }));
  const { port } = server.address() as AddressInfo;
  return { port };
}

function statusOf(response: string): number {
  return Number(/^HTTP\/1\.1 (\d{3})/.exec(response)?.[1] ?? 0);
}

const OPENAPI_GET = 'GET /api/v1/openapi.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n';
const PIECE = Buffer.alloc(16384, 0x20);

/** Writes `bytes` of body in pieces, yielding between them as a streaming client does. */
async function stream(socket: Socket, bytes: number, chunked: boolean): Promise<void> {
  for (let sent = 0; sent < bytes && !socket.destroyed; sent += PIECE.length) {
    const piece = PIECE.subarray(0, Math.min(PIECE.length, bytes - sent));
    socket.write(chunked ? Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]) : piece);
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  if (chunked && !socket.destroyed) socket.write('0\r\n\r\n');
}

t.test('a body declared over 131072 bytes by content-length is answered 413 at once, without waiting for the body', async (tt) => {
  const service = emptyService(tt);
  const recorder = recording(service);
  const { port } = await listen(tt, recorder);

  // Only the head is sent: the server must answer without waiting for the 200000 bytes. (The
  // size check follows routing, so the request uses a route and method that exist.)
  const { text } = await answers(port, 1, (socket) => {
    socket.write(`GET /api/v1/identity HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${LIMIT + 68928}\r\n\r\n{"a":`);
  });
  tt.equal(statusOf(text), 413, '413 request_too_large');
  tt.match(text, /"code":"request_too_large"/);
  tt.notMatch(text, /\r\nconnection: close\r\n/i, 'the body the client is sending is drained, not cut off');
  tt.equal(recorder.seen.length, 1);
  tt.equal(recorder.seen[0]?.body, undefined, 'handle() got no body');
});

t.test('a chunked body over 131072 bytes is answered 413 after at most one byte over the limit', async (tt) => {
  const service = emptyService(tt);
  const recorder = recording(service);
  const { port } = await listen(tt, recorder);

  const { text } = await answers(port, 1, (socket) => {
    socket.write('GET /api/v1/identity HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
    return stream(socket, 9 * PIECE.length, true);
  });
  tt.equal(statusOf(text), 413);
  tt.match(text, /"code":"request_too_large"/);
  const body = recorder.seen[0]?.body;
  tt.ok(body instanceof Uint8Array, 'handle() got the bytes collected so far');
  tt.equal(body instanceof Uint8Array ? body.byteLength : 0, LIMIT + 1, 'collection stopped one byte over the limit');
});

t.test('the rest of an oversized body is drained after its 413 (RFC 9112 9.6): the client reads the answer, no reset, and the connection serves the next request', async (tt) => {
  const service = emptyService(tt);
  const { port } = await listen(tt, service);
  const bytes = 1_600_000;
  for (const chunked of [true, false]) {
    const framing = chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${bytes}`;
    for (let round = 0; round < 5; round += 1) {
      const { text, closedByServer } = await answers(port, 2, async (socket) => {
        socket.write(`POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`);
        await stream(socket, bytes, chunked);
        if (!socket.destroyed) socket.write(OPENAPI_GET);
      });
      const label = `${chunked ? 'chunked' : 'declared'} 1.6 MB, round ${round + 1}`;
      tt.equal(statusOf(text), 413, `${label}: 413 read`);
      tt.equal(closedByServer, false, `${label}: the connection stayed open`);
      tt.equal(statusOf(text.slice(text.indexOf('HTTP/1.1', 1))), 200, `${label}: the next request on it is answered`);
    }
  }
});

/**
 * Freezes setTimeout for the rest of the test (node:test's timer mock), so only `mock.timers.tick`
 * moves the adapter's drain deadline.
 */
function freezeTimers(tt: TapTest): void {
  // The mock warns that it is experimental; these tests are its only users.
  const emitWarning = process.emitWarning;
  process.emitWarning = () => undefined;
  mock.timers.enable({ apis: ['setTimeout'] });
  process.emitWarning = emitWarning;
  tt.teardown(() => mock.timers.reset());
}

t.test('an oversized body going on for more than 64 MiB after its 413 is cut off (by size: the 5 s deadline is frozen)', async (tt) => {
  const service = emptyService(tt);
  const { port } = await listen(tt, service);
  freezeTimers(tt);
  const bytes = 72 * 1024 * 1024;
  const { text, closedByServer } = await answers(port, 2, async (socket) => {
    socket.write(`POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n`);
    await stream(socket, bytes, false);
  });
  tt.equal(statusOf(text), 413, 'the 413 came first');
  tt.equal(closedByServer, true, 'then the server closed the connection');
});

t.test('an oversized body that stalls after its 413 is cut off after 5 seconds', async (tt) => {
  const service = emptyService(tt);
  const { port } = await listen(tt, service);
  freezeTimers(tt);

  let closed = false;
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.on('close', () => (closed = true));
  const received = new Promise<string>((resolve) => socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1'))));
  socket.write(`POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${LIMIT * 2}\r\n\r\n{"a":`);
  tt.equal(statusOf(await received), 413, 'the 413 came at once');
  mock.timers.tick(4_999);
  await new Promise<void>((resolve) => setImmediate(resolve));
  tt.equal(closed, false, 'still open just before 5 s');
  const closing = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  mock.timers.tick(1);
  await closing;
  tt.equal(closed, true, 'closed by the server at 5 s');
});

t.test('on a connection that closes after the 413 (the client asked), the body is drained first: the client sends it all without a reset, then reads the 413', async (tt) => {
  const service = emptyService(tt);
  const { port } = await listen(tt, service);
  const bytes = 1_600_000;
  for (const chunked of [true, false]) {
    let failedWrite: string | undefined;
    let sentAll = false;
    const { text, closedByServer } = await answers(port, 2, async (socket) => {
      socket.on('error', (error: NodeJS.ErrnoException) => (failedWrite = error.code));
      socket.write(`POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n${chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${bytes}`}\r\n\r\n`);
      await stream(socket, bytes, chunked);
      sentAll = !socket.destroyed;
    });
    const label = chunked ? 'chunked' : 'declared';
    tt.equal(statusOf(text), 413, `${label}: 413 read`);
    tt.match(text, /\r\nconnection: close\r\n/i, `${label}: it says the connection closes`);
    tt.equal(closedByServer, true, `${label}: and the server closed it`);
    tt.equal(failedWrite, undefined, `${label}: no write of the client failed (no reset)`);
    tt.ok(sentAll, `${label}: the whole body went out before the answer`);
  }
});

t.test('a host that closes after the answer (as serve does while stopping) gets the body drained before the 413, too', async (tt) => {
  const service = emptyService(tt);
  const { server, port } = await listen(tt, service);
  server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => res.setHeader('connection', 'close'));
  const bytes = 1_600_000;
  let failedWrite: string | undefined;
  let sentAll = false;
  const { text, closedByServer } = await answers(port, 2, async (socket) => {
    socket.on('error', (error: NodeJS.ErrnoException) => (failedWrite = error.code));
    socket.write(`POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n`);
    await stream(socket, bytes, false);
    sentAll = !socket.destroyed;
  });
  tt.equal(statusOf(text), 413);
  tt.match(text, /\r\nconnection: close\r\n/i);
  tt.equal(closedByServer, true);
  tt.equal(failedWrite, undefined, 'no write of the client failed (no reset)');
  tt.ok(sentAll, 'the whole body went out before the answer');
});

t.test('on a connection that closes after the 413, a body going on past the drain bounds still gets its 413, then the connection ends', async (tt) => {
  const service = emptyService(tt);
  const { port } = await listen(tt, service);
  freezeTimers(tt);
  const bytes = 72 * 1024 * 1024;
  for (const version of ['1.1', '1.0']) {
    const close = version === '1.1' ? 'Connection: close\r\n' : '';
    const { text, closedByServer } = await answers(port, 2, async (socket) => {
      socket.write(`POST /api/v1/tasks/1/notes HTTP/${version}\r\nHost: 127.0.0.1\r\n${close}Content-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n`);
      await stream(socket, bytes, false);
    });
    tt.equal(statusOf(text.replace(/^HTTP\/1\.0/, 'HTTP/1.1')), 413, `HTTP/${version}: the 413 was sent`);
    tt.equal(closedByServer, true, `HTTP/${version}: then the connection ended`);
  }
});

t.test('onResponse sees only answers written: a 413 waiting for its drain, overtaken by a broken chunk, is not reported', async (tt) => {
  const service = emptyService(tt);
  const seen: number[] = [];
  const { port } = await listen(tt, service, { onResponse: (response) => seen.push(response.status) });
  const { text } = await answers(port, 2, async (socket) => {
    socket.write('POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
    for (let index = 0; index < 9; index += 1) socket.write(Buffer.concat([Buffer.from(`${PIECE.length.toString(16)}\r\n`), PIECE, Buffer.from('\r\n')]));
    socket.write('zz\r\n');
  });
  tt.equal(statusOf(text), 400, 'the client got the 400 for the broken framing');
  tt.same(seen, [400], 'and only that answer was reported');
});

t.test('onResponse hears of an answer whose client went away before it was ready: its request was carried out', async (tt) => {
  let answer: (response: ServiceResponse) => void = () => undefined;
  const ready = new Promise<ServiceResponse>((resolve) => {
    answer = resolve;
  });
  let arrived: () => void = () => undefined;
  const handled = new Promise<void>((resolve) => {
    arrived = resolve;
  });
  const heard: { status: number; clientGone: boolean }[] = [];
  const { server, port } = await listen(tt, {
    handle: () => {
      arrived();
      return ready;
    },
  }, { onResponse: (response, req) => heard.push({ status: response.status, clientGone: req.socket.destroyed }) });
  const serverSideClosed = new Promise<void>((resolve) => server.once('connection', (serverSide: Socket) => serverSide.once('close', () => resolve())));
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  socket.write('POST /api/v1/tasks/1/claim HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n');
  await handled;
  socket.destroy();
  await serverSideClosed;
  tt.same(heard, [], 'nothing yet: the service has not answered');
  answer({ status: 200, headers: { 'content-type': 'application/json' }, body: '{}' });
  await ready;
  await new Promise<void>((resolve) => setImmediate(resolve));
  tt.same(heard, [{ status: 200, clientGone: true }], 'the answer is reported once, with its client gone');
});

t.test('a client that gives up its upload after the 413 (ends its side mid-body) gets no second answer', async (tt) => {
  const service = emptyService(tt);
  const clientErrors: number[] = [];
  const { port } = await listen(tt, service, { onClientError: (response) => clientErrors.push(response.status) });
  const received = await new Promise<string>((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('error', () => undefined);
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      // The 413 is in: stop sending, as curl does.
      if (chunks.length === 1) socket.end();
    });
    socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    socket.write('POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
    for (let index = 0; index < 9; index += 1) socket.write(Buffer.concat([Buffer.from(`${PIECE.length.toString(16)}\r\n`), PIECE, Buffer.from('\r\n')]));
  });
  tt.equal(statusOf(received), 413);
  tt.equal(received.split('HTTP/1.1 ').length - 1, 1, 'one answer only');
  tt.same(clientErrors, [], 'and no unparseable request reported');
});

t.test('toNodeHandler in a bare node:http server: a client expecting 100 gets it from node, sends its oversized body, and the body is drained', async (tt) => {
  const service = emptyService(tt);
  const { port } = await listenBare(tt, toNodeHandler(service));
  const bytes = 400_000;
  const { text, closedByServer } = await answers(port, 2, async (socket) => {
    socket.write(`POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${bytes}\r\nExpect: 100-continue\r\n\r\n`);
    await stream(socket, bytes, false);
    if (!socket.destroyed) socket.write(OPENAPI_GET);
  });
  tt.match(text, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 413 /, 'node sent the 100, then the 413');
  tt.notMatch(text, /\r\nconnection: close\r\n/i, 'the connection is kept');
  tt.equal(closedByServer, false);
  tt.equal(statusOf(text.slice(text.lastIndexOf('HTTP/1.1'))), 200, 'and serves the next request');
});

t.test('a declared oversized body a host already read is not drained: the connection is not cut 5 s later under another request', async (tt) => {
  const service = emptyService(tt);
  const handler = toNodeHandler(service);
  // A host that reads every body before handing the request on (like a body parser would), by
  // which time the request has also closed.
  const { port } = await listenBare(tt, (req, res) => {
    req.resume();
    req.once('close', () => handler(req, res));
  });
  freezeTimers(tt);
  const bytes = LIMIT + 1000;
  const { text, closedByServer } = await answers(port, 2, async (socket) => {
    const first = new Promise<void>((resolve) => socket.once('data', () => resolve()));
    socket.write(`POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n`);
    await stream(socket, bytes, false);
    await first;
    mock.timers.tick(5_000);
    await new Promise<void>((resolve) => setImmediate(resolve));
    if (!socket.destroyed) socket.write(OPENAPI_GET);
  });
  tt.equal(statusOf(text), 413);
  tt.equal(closedByServer, false, 'the connection outlived the drain deadline');
  tt.equal(statusOf(text.slice(text.indexOf('HTTP/1.1', 1))), 200, 'and answered the next request');
});

t.test('a body within the limit reaches handle() whole, with method, url and headers', async (tt) => {
  const recorder = recording({ handle: () => ({ status: 204, headers: {} }) });
  const { base } = await listen(tt, recorder);
  const payload = JSON.stringify({ text: 'x'.repeat(LIMIT - '{"text":""}'.length) });
  tt.equal(Buffer.byteLength(payload), LIMIT, 'exactly at the limit');

  const response = await fetch(`${base}/api/v1/tasks/7?x=1`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json', 'x-extra': 'yes' },
    body: payload,
  });
  tt.equal(response.status, 204);
  const request = recorder.seen[0];
  tt.equal(request?.method, 'PATCH');
  tt.equal(request?.url, '/api/v1/tasks/7?x=1');
  tt.equal(request?.headers['x-extra'], 'yes');
  const body = request?.body;
  tt.equal(body instanceof Uint8Array ? Buffer.from(body).toString('utf8') : body, payload);
});

t.test('status, headers and body of the service response pass through', async (tt) => {
  const { base, port } = await listen(tt, {
    handle: (request): ServiceResponse =>
      request.url === '/not-modified'
        ? { status: 304, headers: { etag: '"v1"' }, body: 'must not be sent' }
        : { status: 201, headers: { 'content-type': 'text/plain; charset=utf-8', 'x-trace-id': 'abc' }, body: 'héllo' },
  });

  const created = await fetch(`${base}/anything`);
  tt.equal(created.status, 201);
  tt.equal(created.headers.get('x-trace-id'), 'abc');
  tt.equal(created.headers.get('content-type'), 'text/plain; charset=utf-8');
  tt.equal(created.headers.get('content-length'), '6', 'length in bytes, not characters');
  tt.equal(await created.text(), 'héllo');

  const notModified = await raw(port, [
    'GET /not-modified HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n',
  ]);
  tt.equal(statusOf(notModified), 304);
  tt.match(notModified, /\r\netag: "v1"\r\n/i);
  tt.notMatch(notModified, /must not be sent/, 'a 304 has no body');
});

t.test('an asynchronous answer is written, and a failing service answers 500 without stopping the server', async (tt) => {
  let calls = 0;
  const { base } = await listen(tt, {
    handle(request) {
      calls += 1;
      if (request.url === '/throw') throw new Error('boom');
      if (request.url === '/reject') return Promise.reject(new Error('boom'));
      return Promise.resolve({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' });
    },
  });

  const thrown = await fetch(`${base}/throw`);
  tt.equal(thrown.status, 500);
  const problem = (await thrown.json()) as Record<string, unknown>;
  tt.equal(problem['code'], 'internal_error');
  tt.match(String(problem['traceId']), /^[0-9a-f]{32}$/);
  tt.notMatch(JSON.stringify(problem), /boom/, 'nothing of the error leaks');

  tt.equal((await fetch(`${base}/reject`)).status, 500);
  const ok = await fetch(`${base}/fine`);
  tt.equal(ok.status, 200);
  tt.same(await ok.json(), { ok: true });
  tt.equal(calls, 3);
});

t.test('a client that disconnects in the middle of a body does not take the server down', async (tt) => {
  const recorder = recording({ handle: () => ({ status: 204, headers: {} }) });
  const { port, base } = await listen(tt, recorder);
  await new Promise<void>((resolve) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write('POST /x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 1000\r\n\r\nonly part of it');
      socket.destroy();
      resolve();
    });
    socket.on('error', () => undefined);
  });
  const after = await fetch(`${base}/still-up`);
  tt.equal(after.status, 204);
  tt.same(recorder.seen.map((request) => request.url), ['/still-up'], 'the cut-off request never reached handle()');
});

t.test('prefix mounting serves /app/api/v1/openapi.json and nothing outside the prefix', async (tt) => {
  const service = emptyService(tt);
  const { base } = await listen(tt, service, { prefix: '/app' });

  const mounted = await fetch(`${base}/app/api/v1/openapi.json`);
  tt.equal(mounted.status, 200);
  tt.match(mounted.headers.get('content-type') ?? '', /^application\/json/);
  const document = (await mounted.json()) as Record<string, unknown>;
  tt.match(String(document['openapi']), /^3\./);

  for (const outside of ['/api/v1/openapi.json', '/apple/api/v1/openapi.json']) {
    const response = await fetch(`${base}${outside}`);
    tt.equal(response.status, 404, `${outside} is outside the mount`);
    tt.equal(((await response.json()) as Record<string, unknown>)['code'], 'route_not_found');
  }
});

t.test('an absolute-form request target (as proxies send) reaches handle() as its path and query', async (tt) => {
  const recorder = recording({ handle: () => ({ status: 204, headers: {} }) });
  const { port } = await listen(tt, recorder, { prefix: '/app' });
  for (const target of ['http://proxy.example/app/api/v1/identity?x=1', 'HTTP://proxy.example:8080/app/api/v1/identity?x=1']) {
    const response = await raw(port, [`GET ${target} HTTP/1.1\r\nHost: proxy.example\r\nConnection: close\r\n\r\n`]);
    tt.equal(statusOf(response), 204, target);
  }
  tt.strictSame(recorder.seen.map((request) => request.url), ['/api/v1/identity?x=1', '/api/v1/identity?x=1'], 'the host part is dropped, the prefix stripped');
});

t.test('onResponse sees the route template and client id; the client is sent neither', async (tt) => {
  const { service } = adaWorld();
  tt.teardown(() => service.close());
  const seen: { meta: unknown; url: string | undefined }[] = [];
  const { base, port } = await listen(tt, service, {
    prefix: '/app',
    onResponse: (response, req) => {
      seen.push({ meta: response.meta, url: req.url });
      throw new Error('a broken observer must not cost the answer');
    },
  });

  const answer = await raw(port, [
    `GET /app/api/v1/tasks/1?x=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${TOKENS.ada}\r\nConnection: close\r\n\r\n`,
  ]);
  tt.equal(statusOf(answer), 400, 'an unknown query parameter');
  tt.notMatch(answer, /tasks\/\{id\}|clientId|"route"|meta/, 'nothing of meta on the wire');
  const task = await fetch(`${base}/app/api/v1/tasks/1`, { headers: { authorization: `Bearer ${TOKENS.ada}` } });
  tt.equal(task.status, 200);
  tt.notMatch([...task.headers].join('\n'), /tasks\/\{id\}/);
  const unknown = await fetch(`${base}/app/nowhere`);
  tt.equal(unknown.status, 404);
  tt.same(seen, [
    { meta: { route: '/api/v1/tasks/{id}', clientId: 100 }, url: '/app/api/v1/tasks/1?x=1' },
    { meta: { route: '/api/v1/tasks/{id}', clientId: 100 }, url: '/app/api/v1/tasks/1' },
    { meta: undefined, url: '/app/nowhere' },
  ]);
});

t.test('a request without Content-Length or Transfer-Encoding has no body; a small chunked one is read whole', async (tt) => {
  const recorder = recording({ handle: () => ({ status: 204, headers: {} }) });
  const { port } = await listen(tt, recorder);
  const bodyless = await raw(port, ['GET /api/v1/identity HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n']);
  tt.equal(statusOf(bodyless), 204);
  tt.equal(recorder.seen[0]?.body, undefined, 'handle() got no body');
  const chunked = await raw(port, [
    'POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n',
    'b\r\n{"text":"hi\r\n', '2\r\n"}\r\n', '0\r\n\r\n',
  ]);
  tt.equal(statusOf(chunked), 204);
  const body = recorder.seen[1]?.body;
  tt.equal(body instanceof Uint8Array ? Buffer.from(body).toString('utf8') : body, '{"text":"hi"}', 'the chunks, joined');
});

t.test('a body a host already read (a body parser mounted first) is a 500 at once, not a request left hanging, and a process warning', async (tt) => {
  const recorder = recording({ handle: () => ({ status: 204, headers: {} }) });
  const seen: number[] = [];
  const warnings = watchWarnings(tt);
  const handler = toNodeHandler(recorder, { onResponse: (response) => seen.push(response.status) });
  // What express.json() does before passing the request on.
  const { port } = await listenBare(tt, (req, res) => {
    req.resume();
    req.on('end', () => handler(req, res));
  });
  const post = () => raw(port, [
    'POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 13\r\nConnection: close\r\n\r\n{"text":"hi"}',
  ]);
  const response = await post();
  tt.equal(statusOf(response), 500);
  tt.match(response, /"code":"internal_error"/);
  tt.equal(statusOf(await post()), 500, 'every such request');
  tt.strictSame(seen, [500, 500], 'the host hears of it');
  tt.equal(recorder.seen.length, 0, 'handle() never saw a request without its body');
  await new Promise((resolve) => setImmediate(resolve));
  const traceId = /"traceId":"([0-9a-f]{32})"/.exec(response)?.[1];
  const ours = warnings.filter((warning) => (warning as { code?: string }).code === BODY_ALREADY_READ_WARNING);
  tt.equal(ours.length, 1, 'one process warning per handler, not one per request');
  tt.match(ours[0]?.message, new RegExp(`toNodeHandler .*already read.*traceId ${traceId}`), 'naming the adapter and the first answer\'s traceId');
});

t.test('headers of the answer are sent as the service gave them, with a content length', async (tt) => {
  const { base } = await listen(tt, {
    handle: () => ({ status: 200, headers: { 'content-type': 'application/json', etag: '"e"', 'x-trace-id': 'abc' }, body: '{"é":1}' }),
  });
  const response = await fetch(`${base}/api/v1/identity`);
  tt.equal(response.status, 200);
  tt.equal(response.headers.get('etag'), '"e"');
  tt.equal(response.headers.get('x-trace-id'), 'abc');
  tt.equal(response.headers.get('content-length'), '8', 'bytes, not characters');
  tt.equal(await response.text(), '{"é":1}');
});

t.test('a request node:http cannot parse gets a problem+json 400 with a trace id, and the host hears of it', async (tt) => {
  const service = emptyService(tt);
  const recorder = recording(service);
  const heard: { status: number; traceId: string | undefined; error: string }[] = [];
  const { port } = await listen(tt, recorder, {
    onClientError: (response, error) => heard.push({ status: response.status, traceId: response.headers['x-trace-id'], error: error.message }),
  });
  const cases: [string, string][] = [
    ['a request line that is no HTTP', 'HELLO\r\n\r\n'],
    ['a control character in a header value', 'GET /api/v1/identity HTTP/1.1\r\nHost: x\r\nX-Bad: a\u0001b\r\n\r\n'],
    ['both Content-Length and Transfer-Encoding', 'POST /api/v1/identity HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    ['a header block over node\'s limit', `GET /api/v1/identity HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`],
  ];
  for (const [what, bytes] of cases) {
    const response = await raw(port, [bytes]);
    tt.equal(statusOf(response), 400, `${what}: 400`);
    tt.match(response, /\r\ncontent-type: application\/problem\+json\r\n/i, `${what}: problem+json`);
    tt.match(response, /\r\nconnection: close\r\n/i, `${what}: the connection is closed after it`);
    tt.match(response, /\r\ncache-control: no-store\r\n/i, `${what}: no cache keeps it`);
    const body = JSON.parse(response.slice(response.indexOf('\r\n\r\n') + 4)) as Record<string, unknown>;
    tt.equal(body['code'], 'validation_failed', `${what}: validation_failed`);
    tt.match(body['traceId'], /^[0-9a-f]{32}$/, `${what}: a trace id`);
    tt.match(response, new RegExp(`\\r\\nx-trace-id: ${String(body['traceId'])}\\r\\n`, 'i'), `${what}: the same trace id in X-Trace-Id`);
    tt.equal(heard.at(-1)?.traceId, body['traceId'], `${what}: onClientError got the answer`);
  }
  tt.equal(recorder.seen.length, 0, 'nothing reached handle()');
  tt.equal(heard.length, cases.length, 'one onClientError call per answer');
});

t.test('bytes that are no request, behind a request still being answered, get their 400 after that answer', async (tt) => {
  // The first request is answered a turn later, after node:http has already met the bad bytes.
  const later: Handler = {
    handle: () => new Promise<ServiceResponse>((resolve) => {
      setImmediate(() => resolve({ status: 200, headers: { 'content-type': 'application/json' }, body: '{"first":true}' }));
    }),
  };
  const { port } = await listen(tt, later);
  const response = await raw(port, ['GET /api/v1/identity HTTP/1.1\r\nHost: x\r\n\r\nHELLO\r\n\r\n']);
  const second = response.indexOf('HTTP/1.1', 1);
  tt.equal(statusOf(response), 200, 'the request is answered first');
  tt.match(response.slice(0, second), /\{"first":true\}$/, 'whole');
  tt.equal(statusOf(response.slice(second)), 400, 'then the bytes after it get a 400');
  tt.match(response.slice(second), /"code":"validation_failed"/, 'as problem+json');
});

t.test('a request whose body can no longer arrive (unsupported Transfer-Encoding) gets the 400 itself', async (tt) => {
  const service = emptyService(tt);
  const heard: number[] = [];
  const { port } = await listen(tt, service, { onResponse: (response) => heard.push(response.status) });
  const response = await raw(port, ['POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n{}']);
  tt.equal(statusOf(response), 400, '400');
  tt.match(response, /"code":"validation_failed"/, 'problem+json');
  tt.match(response, /\r\nconnection: close\r\n/i, 'and the connection closes');
  tt.strictSame(heard, [400], 'the host sees it as the answer to that request');
});

t.test('repeated Authorization or Content-Type reach the service whole: two credentials fail, two media types are 415', async (tt) => {
  const h = adaWorld();
  const { port } = await listen(tt, h.service);
  const ada = `Authorization: Bearer ${TOKENS.ada}`;
  const identity = (headers: string) => raw(port, [`GET /api/v1/identity HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${headers}\r\n`]);
  tt.equal(statusOf(await identity(`${ada}\r\n`)), 200, 'one credential: 200');
  for (const headers of [`${ada}\r\nAuthorization: Bearer wrong\r\n`, `Authorization: Bearer wrong\r\n${ada}\r\n`, `${ada}\r\n${ada}\r\n`]) {
    const response = await identity(headers);
    tt.equal(statusOf(response), 401, `two Authorization headers (${headers.includes('wrong') ? 'one wrong' : 'both the same'}): 401`);
    tt.match(response, /\r\nwww-authenticate: Bearer\r\n/i);
  }
  const body = '{"text":"x"}';
  const note = await raw(port, [`POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${ada}\r\nIf-Match: "x"\r\n`
    + `Content-Type: application/json\r\nContent-Type: text/plain\r\nContent-Length: ${body.length}\r\n\r\n${body}`]);
  tt.equal(statusOf(note), 415, 'two Content-Type headers: 415');
});

t.test('a chunked body with another transfer coding (gzip, chunked) is 415, not read as JSON and applied', async (tt) => {
  const h = adaWorld();
  const { port } = await listen(tt, h.service);
  const body = '{"text":"hi"}';
  const note = await raw(port, [`POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer ${TOKENS.ada}\r\n`
    + `If-Match: "x"\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`]);
  tt.equal(statusOf(note), 415, '415 before the If-Match is looked at');
  tt.match(note, /"code":"unsupported_media_type"/);
});

t.test('a missing or repeated Host is a problem+json 400 (RFC 9112 3.2)', async (tt) => {
  const service = emptyService(tt);
  const recorder = recording(service);
  const { port } = await listen(tt, recorder);
  for (const [what, head] of [
    ['HTTP/1.1 without Host', 'GET /api/v1/openapi.json HTTP/1.1\r\n\r\n'],
    ['two Host headers', 'GET /api/v1/openapi.json HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'],
    ['a CONNECT without Host', 'CONNECT x:443 HTTP/1.1\r\n\r\n'],
    ['a CONNECT with two', 'CONNECT x:443 HTTP/1.1\r\nHost: x\r\nHost: y\r\n\r\n'],
  ] as const) {
    const response = await raw(port, [head]);
    tt.equal(statusOf(response), 400, `${what}: 400`);
    tt.match(response, /"code":"validation_failed"/, `${what}: validation_failed`);
    tt.match(response, /\r\nx-trace-id: [0-9a-f]{32}\r\n/i, `${what}: a trace id`);
  }
  tt.equal(statusOf(await raw(port, ['GET /api/v1/openapi.json HTTP/1.0\r\n\r\n'])), 200, 'HTTP/1.0 needs no Host');
  tt.equal(recorder.seen.length, 1, 'only the HTTP/1.0 request reached handle()');
});

t.test('a request refused for its Host has its body drained before the 400 closes the connection: the client sends it all without a reset, then reads the 400', async (tt) => {
  const service = emptyService(tt);
  const heard: number[] = [];
  const { port } = await listen(tt, service, { onResponse: (response) => heard.push(response.status) });
  const bytes = 1_600_000;
  for (const [what, host] of [['without Host', ''], ['with two', 'Host: a\r\nHost: b\r\n']] as const) {
    let failedWrite: string | undefined;
    let sentAll = false;
    let answeredEarly = false;
    const { text, closedByServer } = await answers(port, 2, async (socket) => {
      socket.on('error', (error: NodeJS.ErrnoException) => (failedWrite = error.code));
      socket.once('data', () => (answeredEarly = !sentAll));
      socket.write(`POST /api/v1/tasks/1/notes HTTP/1.1\r\n${host}Content-Type: application/json\r\nContent-Length: ${bytes}\r\n\r\n`);
      await stream(socket, bytes, false);
      sentAll = !socket.destroyed;
    });
    tt.equal(statusOf(text), 400, `${what}: 400 read`);
    tt.match(text, /"code":"validation_failed"/, `${what}: validation_failed`);
    tt.equal(closedByServer, true, `${what}: then the server closed the connection`);
    tt.equal(failedWrite, undefined, `${what}: no write of the client failed (no reset)`);
    tt.ok(sentAll, `${what}: the whole body went out`);
    tt.notOk(answeredEarly, `${what}: the answer came after the body`);
  }
  tt.strictSame(heard, [400, 400], 'the host heard both answers');
});

t.test('a request refused for its Host whose body breaks its framing while drained gets that 400 only, and the host hears of one answer', async (tt) => {
  const service = emptyService(tt);
  const heard: string[] = [];
  const { port } = await listen(tt, service, {
    onResponse: (response) => heard.push(response.headers['x-trace-id'] ?? ''),
    onClientError: (response) => heard.push(response.headers['x-trace-id'] ?? ''),
  });
  freezeTimers(tt);
  const socket = connect(port, '127.0.0.1');
  socket.on('error', () => undefined);
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString('latin1')));
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  // node delivers the request (no Host: refused, its body drained), then fails on the bad chunk.
  socket.write('POST /api/v1/tasks/1/notes HTTP/1.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nabcde\r\nZZZ\r\n');
  await closed;
  // The drain's deadline passes too: its answer, already overtaken, must not be reported.
  mock.timers.tick(5_000);
  await new Promise<void>((resolve) => setImmediate(resolve));
  tt.equal(statusOf(text), 400, 'one 400');
  tt.equal([...text.matchAll(/HTTP\/1\.1 /g)].length, 1, 'and nothing after it');
  tt.strictSame(heard, [/\r\nx-trace-id: ([0-9a-f]{32})\r\n/i.exec(text)?.[1]], 'the host heard of the answer sent, and of no other');
});

t.test('CONNECT on an operation path is 405 with Allow, elsewhere 404, instead of a dropped connection', async (tt) => {
  const service = emptyService(tt);
  const { port } = await listen(tt, service);
  const onPath = await raw(port, ['CONNECT /api/v1/tasks/1 HTTP/1.1\r\nHost: x\r\n\r\n']);
  tt.equal(statusOf(onPath), 405, '405');
  tt.match(onPath, /\r\nallow: GET, PATCH\r\n/i, 'with Allow');
  tt.match(onPath, /"code":"method_not_allowed"/);
  const authority = await raw(port, ['CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n']);
  tt.equal(statusOf(authority), 404, 'an authority-form target is no route: 404');
  tt.match(authority, /"code":"route_not_found"/);
});

t.test('CONNECT pipelined behind a request still being answered waits for that answer, which is sent and logged first', async (tt) => {
  const service = emptyService(tt);
  // The first request's answer comes later, as a write's does after its commit.
  const slow: Handler = {
    handle: (request) => (request.method === 'GET' ? new Promise((resolve) => setTimeout(() => resolve(service.handle(request)), 50)) : service.handle(request)),
  };
  const logged: number[] = [];
  const { port } = await listen(tt, slow, { onResponse: (response) => logged.push(response.status) });
  const text = await raw(port, [`${OPENAPI_GET}CONNECT x:443 HTTP/1.1\r\nHost: x\r\n\r\n`]);
  // The 404's status line follows the GET's body directly (no line break ends a body).
  const statuses = [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));
  tt.strictSame(statuses, [200, 404], 'the GET\'s answer, then the CONNECT\'s, then the close');
  tt.strictSame(logged, [200, 404], 'both heard by the host\'s log, in order');
});

t.test('a method node:http cannot parse (lower-case, unknown) is 405 with Allow on an operation path, 404 elsewhere', async (tt) => {
  const service = emptyService(tt);
  const heard: number[] = [];
  const methods: (string | undefined)[] = [];
  const { port } = await listen(tt, service, {
    onClientError: (response) => {
      heard.push(response.status);
      methods.push(response.meta?.method);
    },
  });
  const cases: [string, string, number, string | null][] = [
    ['lower-case get on /tasks/available', 'get /api/v1/tasks/available HTTP/1.1\r\nHost: x\r\n\r\n', 405, 'GET'],
    ['lower-case patch (which fetch() sends as given) on a task', 'patch /api/v1/tasks/1 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}', 405, 'GET, PATCH'],
    ['an unknown method on a task', 'BREW /api/v1/tasks/1 HTTP/1.1\r\nHost: x\r\n\r\n', 405, 'GET, PATCH'],
    ['an unknown method in absolute form', 'BREW http://x/api/v1/identity HTTP/1.1\r\nHost: x\r\n\r\n', 405, 'GET'],
    ['an unknown method on no route', 'BREW /api/v1/nowhere HTTP/1.1\r\nHost: x\r\n\r\n', 404, null],
  ];
  for (const [what, bytes, status, allow] of cases) {
    const response = await raw(port, [bytes]);
    tt.equal(statusOf(response), status, `${what}: ${status}`);
    tt.match(response, /\r\ncontent-type: application\/problem\+json\r\n/i, `${what}: problem+json`);
    tt.match(response, /\r\nx-trace-id: [0-9a-f]{32}\r\n/i, `${what}: a trace id`);
    tt.match(response, /\r\nconnection: close\r\n/i, `${what}: the connection closes (the body, if any, is unread)`);
    tt.match(response, status === 405 ? /"code":"method_not_allowed"/ : /"code":"route_not_found"/, what);
    if (allow !== null) tt.match(response, new RegExp(`\\r\\nallow: ${allow}\\r\\n`, 'i'), `${what}: Allow`);
  }
  tt.strictSame(heard, cases.map(([, , status]) => status), 'the host hears of each as a client error');
  tt.strictSame(methods, ['get', 'patch', 'BREW', 'BREW', 'BREW'], 'with the method as sent in response.meta');

  // Pipelined behind a request whose body ends in token characters ("GE" + "T /x"): the line
  // cannot be told apart from "GET /x", so it is the plain 400 of unparseable bytes.
  const behind = await raw(port, ['POST /api/v1/nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nGET /api/v1/openapi.json HTTP/1.1\r\nHost: x\r\n\r\n']);
  const second = behind.indexOf('HTTP/1.1', 1);
  tt.equal(statusOf(behind), 404, 'the first request is answered');
  tt.equal(statusOf(behind.slice(second)), 400, 'the bytes after it are 400, never taken for a GET');
  const after = await raw(port, ['POST /api/v1/nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}FOO /api/v1/identity HTTP/1.1\r\nHost: x\r\n\r\n']);
  tt.equal(statusOf(after.slice(after.indexOf('HTTP/1.1', 1))), 405, 'after a body that ends in no token character, an unknown method is still 405');
});

t.test('Expect: 100-continue is answered 100 within the limit and 413 at once over it; other expectations are ignored, never a bare 417', async (tt) => {
  const h = adaWorld();
  const { port } = await listen(tt, h.service);
  const ada = `Authorization: Bearer ${TOKENS.ada}`;
  const within = await raw(port, [`POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${ada}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nExpect: 100-continue\r\n\r\n`, '{}']);
  tt.match(within, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 400 /, '100-continue within the limit: 100, then the answer to the body (400: no text)');
  const over = await raw(port, [`POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: x\r\n${ada}\r\nContent-Type: application/json\r\nContent-Length: ${LIMIT + 1}\r\nExpect: 100-continue\r\n\r\n`]);
  tt.equal(statusOf(over), 413, '100-continue over the limit: 413 without waiting for the body');
  tt.notMatch(over, /100 Continue/, 'and no 100 before it');
  tt.match(over, /\r\nconnection: close\r\n/i, 'a client waiting for 100 sends no body to drain: the connection closes');
  tt.match(over, /"code":"request_too_large"/);

  const unknown = await raw(port, [`GET /api/v1/identity HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${ada}\r\nExpect: foo\r\n\r\n`]);
  tt.equal(statusOf(unknown), 200, 'an unknown expectation is ignored: the request is answered');
  const listed = await raw(port, [`POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${ada}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nExpect: foo, 100-continue\r\n\r\n`, '{}']);
  tt.match(listed, /^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 400 /, '100-continue beside an unknown expectation still gets its 100');
  const refused = await raw(port, [`GET /api/v1/identity HTTP/1.1\r\nHost: x\r\nConnection: close\r\nExpect: foo\r\n\r\n`]);
  tt.equal(statusOf(refused), 401, 'and the request goes through the pipeline as usual (no credential: 401)');
  tt.match(refused, /"code":"authentication_failed"/);
});

t.test('createNodeServer: a request too slow to arrive gets 408 with an X-Trace-Id, reported to the observers, then the connection closes', async (tt) => {
  const heard: { observer: string; status: number; traceId: string | undefined }[] = [];
  const { server, port } = await listen(tt, { handle: () => ({ status: 204, headers: {} }) }, {
    onResponse: (response) => heard.push({ observer: 'onResponse', status: response.status, traceId: response.headers['x-trace-id'] }),
    onClientError: (response) => heard.push({ observer: 'onClientError', status: response.status, traceId: response.headers['x-trace-id'] }),
  });
  for (const [what, sent, delivered] of [
    ['headers cut off', 'GET /api/v1/identity HTTP/1.1\r\nHost: x\r\n', false],
    ['a body cut off', 'POST /api/v1/tasks/1/notes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 20\r\n\r\n{"te', true],
  ] as const) {
    const accepted = new Promise<Socket>((resolve) => server.once('connection', resolve));
    // The request whose body is cut off has reached the adapter (node delivered its head).
    const requested = delivered ? new Promise((resolve) => server.once('request', resolve)) : Promise.resolve();
    const client = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    client.on('data', (chunk: Buffer) => received.push(chunk));
    const closed = new Promise<void>((resolve) => client.on('close', () => resolve()));
    client.write(sent);
    const serverSide = await accepted;
    await requested;
    // What node emits when headersTimeout or requestTimeout passes (its check runs every 30 s).
    server.emit('clientError', Object.assign(new Error('Request Timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), serverSide);
    await closed;
    const text = Buffer.concat(received).toString('latin1');
    tt.match(text, /^HTTP\/1\.1 408 Request Timeout\r\n/, what);
    const traceId = /\r\nX-Trace-Id: ([0-9a-f]{32})\r\n/i.exec(text)?.[1];
    tt.ok(traceId, `${what}: a trace id`);
    tt.match(text, /\r\nConnection: close\r\n/i, `${what}: the connection closes`);
    tt.match(text, /\r\ncache-control: no-store\r\n/i, `${what}: no cache keeps it`);
    tt.match(text, /\r\n\r\n$/, `${what}: no body`);
    // The host's log finds the line by the trace id the client was given.
    tt.strictSame(heard.splice(0), [{ observer: delivered ? 'onResponse' : 'onClientError', status: 408, traceId }], `${what}: observed`);
  }
});
