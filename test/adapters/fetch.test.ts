import t from 'tap';
import { recording } from '../helpers/sockets.js';
import { toFetchHandler, type Handler } from '../../adapters/fetch.js';
import type { ServiceRequest, ServiceResponse } from '../../lib/http/types.js';
import { createService } from '../../lib/service.js';
import { adaWorld } from '../helpers/api.js';
import { TOKENS } from '../helpers/fixture.js';
import { watchWarnings } from '../helpers/warnings.js';
import { BODY_ALREADY_READ_WARNING } from '../../adapters/shared.js';

const LIMIT = 131072;
const ORIGIN = 'http://host.example';


const noContent: Handler = { handle: () => ({ status: 204, headers: {} }) };

/** A body stream of `count` chunks of `size` bytes that counts how many chunks were pulled. */
function countedStream(count: number, size: number): { stream: ReadableStream<Uint8Array>; pulled(): number } {
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (pulled === count) {
        controller.close();
        return;
      }
      pulled += 1;
      controller.enqueue(new Uint8Array(size).fill(0x20));
    },
  }, { highWaterMark: 0 });
  return { stream, pulled: () => pulled };
}

function bodyText(body: ServiceRequest['body']): string | undefined {
  if (body === undefined || body === null) return undefined;
  return typeof body === 'string' ? body : Buffer.from(body).toString('utf8');
}

t.test('method, path and query (prefix stripped), lowercased headers and the body reach handle()', async (tt) => {
  const recorder = recording(noContent);
  const handler = toFetchHandler(recorder, { prefix: '/app/' });
  const headers = new Headers([['X-Extra', 'one'], ['x-extra', 'two'], ['Content-Type', 'application/json']]);
  const response = await handler(new Request(`${ORIGIN}/app/api/v1/tasks/%31?x=1`, { method: 'PATCH', headers, body: '{"a":1}' }));
  tt.equal(response.status, 204);
  const request = recorder.seen[0];
  tt.equal(request?.method, 'PATCH');
  tt.equal(request?.url, '/api/v1/tasks/%31?x=1', 'percent-encoding kept, prefix stripped, query kept');
  tt.equal(request?.headers['x-extra'], 'one, two', 'repeated headers joined as HTTP list syntax says');
  tt.equal(request?.headers['content-type'], 'application/json');
  tt.ok(request?.body instanceof Uint8Array, 'the body as bytes');
  tt.equal(bodyText(request?.body), '{"a":1}');

  await handler(new Request(`${ORIGIN}/app?x=1`));
  await handler(new Request(`${ORIGIN}/app`));
  await handler(new Request(`${ORIGIN}/apple/api/v1/identity`));
  await handler(new Request(`${ORIGIN}/api/v1/identity`));
  tt.same(recorder.seen.slice(1).map((seen) => seen.url), ['/?x=1', '/', '/', '/'], 'outside the prefix the core sees "/"');
  tt.equal(recorder.seen[1]?.body, undefined, 'no body for a GET');

  tt.throws(() => toFetchHandler(noContent, { prefix: 'app' }), new TypeError('toFetchHandler: options.prefix must start with "/"'));
});

t.test('a prefix written percent-encoded matches the path as a client sends it', async (tt) => {
  const recorder = recording(noContent);
  const handler = toFetchHandler(recorder, { prefix: '/my%20app' });
  await handler(new Request(`${ORIGIN}/my app/api/v1/identity`));
  tt.equal(recorder.seen[0]?.url, '/api/v1/identity', 'a client encodes the space; the prefix is stripped');
});

t.test('a body declared over 131072 bytes is answered 413 by the core without being read', async (tt) => {
  const service = createService({ db: ':memory:' });
  tt.teardown(() => service.close());
  const recorder = recording(service);
  const { stream, pulled } = countedStream(20, 16384);
  const response = await toFetchHandler(recorder)(new Request(`${ORIGIN}/api/v1/tasks/1`, {
    method: 'PATCH',
    headers: { 'content-type': 'application/json', 'content-length': String(LIMIT + 1) },
    body: stream,
    duplex: 'half',
  }));
  tt.equal(response.status, 413);
  tt.match(await response.json(), { code: 'request_too_large', status: 413 });
  tt.equal(response.headers.get('connection'), 'close', 'the host is told not to wait for the rest');
  tt.equal(recorder.seen[0]?.body, undefined, 'handle() got no body');
  tt.equal(pulled(), 0, 'not one chunk was read');
});

t.test('a streamed body over 131072 bytes stops at one byte over the limit and is answered 413', async (tt) => {
  const service = createService({ db: ':memory:' });
  tt.teardown(() => service.close());
  const recorder = recording(service);
  const { stream, pulled } = countedStream(20, 16384);
  const response = await toFetchHandler(recorder)(new Request(`${ORIGIN}/api/v1/tasks/1`, {
    method: 'PATCH', headers: { 'content-type': 'application/json' }, body: stream, duplex: 'half',
  }));
  tt.equal(response.status, 413);
  tt.match(await response.json(), { code: 'request_too_large' });
  const body = recorder.seen[0]?.body;
  tt.equal(body instanceof Uint8Array ? body.byteLength : -1, LIMIT + 1, 'handle() got the limit plus one byte');
  tt.equal(pulled(), 9, 'reading stopped at the first chunk past the limit (9 of 20)');
  tt.equal(response.headers.get('connection'), 'close');
});

t.test('a body of exactly 131072 bytes reaches handle() whole', async (tt) => {
  const recorder = recording(noContent);
  const payload = JSON.stringify({ text: 'x'.repeat(LIMIT - '{"text":""}'.length) });
  tt.equal(Buffer.byteLength(payload), LIMIT);
  const response = await toFetchHandler(recorder)(new Request(`${ORIGIN}/api/v1/tasks/7/notes`, { method: 'POST', body: payload }));
  tt.equal(response.status, 204);
  tt.equal(response.headers.get('connection'), null);
  tt.equal(bodyText(recorder.seen[0]?.body), payload);
});

t.test('status, headers and body pass through; 204 and 304 have no body; meta is never sent', async (tt) => {
  const observed: ServiceResponse[] = [];
  const handler = toFetchHandler({
    handle: (request): ServiceResponse =>
      request.url === '/not-modified'
        ? { status: 304, headers: { etag: '"v1"' }, body: 'must not be sent', meta: { route: '/secret-route', clientId: 7 } }
        : { status: 201, headers: { 'content-type': 'text/plain; charset=utf-8', 'x-trace-id': 'abc' }, body: 'héllo', meta: { route: '/secret-route', clientId: 7 } },
  }, { onResponse: (response) => observed.push(response) });

  const created = await handler(new Request(`${ORIGIN}/anything`));
  tt.equal(created.status, 201);
  tt.equal(created.headers.get('x-trace-id'), 'abc');
  tt.equal(created.headers.get('content-type'), 'text/plain; charset=utf-8');
  tt.equal(await created.text(), 'héllo');
  tt.same([...created.headers.keys()].sort(), ['content-type', 'x-trace-id'], 'no header but the service’s own');

  const notModified = await handler(new Request(`${ORIGIN}/not-modified`));
  tt.equal(notModified.status, 304);
  tt.equal(notModified.headers.get('etag'), '"v1"');
  tt.equal(notModified.body, null, 'a 304 has no body');
  tt.same(observed.map((response) => response.meta), [{ route: '/secret-route', clientId: 7 }, { route: '/secret-route', clientId: 7 }], 'onResponse sees meta');
});

t.test('the real service: onResponse gets the route template and client id, the client gets neither', async (tt) => {
  const { service } = adaWorld();
  tt.teardown(() => service.close());
  const metas: unknown[] = [];
  const handler = toFetchHandler(service, {
    prefix: '/tasks-api',
    onResponse: (response) => {
      metas.push(response.meta);
      throw new Error('a broken observer must not cost the answer');
    },
  });
  const response = await handler(new Request(`${ORIGIN}/tasks-api/api/v1/tasks/1`, { headers: { authorization: `Bearer ${TOKENS.ada}` } }));
  tt.equal(response.status, 200);
  const text = await response.text();
  tt.notMatch(text, /\/api\/v1\/tasks\/\{id\}/, 'the route template is not in the body');
  tt.notMatch([...response.headers].join('\n'), /tasks\/\{id\}|clientId/, 'nor in a header');
  const anonymous = await handler(new Request(`${ORIGIN}/tasks-api/api/v1/openapi.json`));
  tt.equal(anonymous.status, 200);
  const unknown = await handler(new Request(`${ORIGIN}/tasks-api/nowhere`));
  tt.equal(unknown.status, 404);
  tt.same(metas, [{ route: '/api/v1/tasks/{id}', clientId: 100 }, { route: '/api/v1/openapi.json' }, undefined]);
});

t.test('a handler that throws or rejects becomes the core 500, with nothing of the error', async (tt) => {
  const handler = toFetchHandler({
    handle(request) {
      if (request.url === '/throw') throw new Error('boom');
      return Promise.reject(new Error('boom'));
    },
  });
  for (const path of ['/throw', '/reject']) {
    const response = await handler(new Request(`${ORIGIN}${path}`));
    tt.equal(response.status, 500, path);
    tt.equal(response.headers.get('content-type'), 'application/problem+json');
    const problem = (await response.json()) as Record<string, unknown>;
    tt.equal(problem['code'], 'internal_error');
    tt.match(String(problem['traceId']), /^[0-9a-f]{32}$/);
    tt.notMatch(JSON.stringify(problem), /boom/);
  }
});

t.test('an onResponse that throws or rejects costs neither the answer nor the process', async (tt) => {
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  tt.teardown(() => void process.off('unhandledRejection', onUnhandled));
  for (const onResponse of [() => { throw new Error('sync'); }, async () => { throw new Error('async'); }]) {
    const handler = toFetchHandler(noContent, { onResponse });
    tt.equal((await handler(new Request(`${ORIGIN}/x`))).status, 204);
  }
  await new Promise((resolve) => setImmediate(resolve));
  tt.strictSame(unhandled, [], 'no unhandled rejection');
});

t.test('a body that fails while being read rejects (the client went away)', async (tt) => {
  const recorder = recording(noContent);
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(new Uint8Array(10));
      controller.error(new Error('connection reset'));
    },
  });
  await tt.rejects(toFetchHandler(recorder)(new Request(`${ORIGIN}/x`, { method: 'POST', body: stream, duplex: 'half' })), /connection reset/);
  tt.equal(recorder.seen.length, 0, 'handle() was not called');
});

t.test('a Request whose body middleware already read is a problem+json 500 the host hears of, not a rejection, and the first one a process warning', async (tt) => {
  const recorder = recording({ handle: () => ({ status: 204, headers: {} }) });
  const seen: number[] = [];
  const warnings = watchWarnings(tt);
  const handler = toFetchHandler(recorder, { onResponse: (response) => seen.push(response.status) });
  const readFirst = async () => {
    const request = new Request(`${ORIGIN}/api/v1/tasks/1/notes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"text":"hi"}' });
    await request.text();
    return handler(request);
  };
  const response = await readFirst();
  tt.equal(response.status, 500);
  tt.equal(response.headers.get('content-type'), 'application/problem+json');
  const problem = (await response.json()) as { code: string; traceId: string };
  tt.match(problem, { code: 'internal_error' });
  tt.equal((await readFirst()).status, 500, 'every such request');
  tt.strictSame(seen, [500, 500]);
  tt.equal(recorder.seen.length, 0, 'handle() never saw a request without its body');
  await new Promise((resolve) => setImmediate(resolve));
  const ours = warnings.filter((warning) => (warning as { code?: string }).code === BODY_ALREADY_READ_WARNING);
  tt.equal(ours.length, 1, 'one process warning per handler, not one per request');
  tt.match(ours[0]?.message, new RegExp(`toFetchHandler .*already read.*traceId ${problem.traceId}`), 'naming the adapter and the first answer\'s traceId');
});
