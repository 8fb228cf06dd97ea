import t from 'tap';
import { createServer } from 'node:http';
import { Readable } from 'node:stream';
import { toFetchHandler } from '../../adapters/fetch.js';
import { agentFlow, embeddedService, oversizedBodies, listenOnLoopback } from './flow.js';

// The README's fetch example: the fetch adapter behind a minimal fetch-API host (a plain node:http
// server that turns each request into a `Request`, as Hono's node server does).
t.test('fetch: the fetch adapter under /tasks-api serves the agent flow and 413s', async (tt) => {
  const service = embeddedService(tt);

  // --- the example ---
  const tasksApi = toFetchHandler(service, { prefix: '/tasks-api' });
  const server = createServer((req, res) => {
    const headers = new Headers();
    for (let i = 0; i < req.rawHeaders.length; i += 2) headers.append(req.rawHeaders[i] ?? '', req.rawHeaders[i + 1] ?? '');
    const hasBody = req.method !== 'GET' && req.method !== 'HEAD';
    const request = new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, {
      method: req.method ?? 'GET', headers, body: hasBody ? (Readable.toWeb(req) as ReadableStream<Uint8Array>) : null, duplex: 'half',
    } as RequestInit); // TypeScript's DOM lib does not know `duplex` yet; Node's fetch requires it for a stream.
    tasksApi(request).then(async (response) => {
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    }, () => res.destroy());
  });
  // --- end of the example ---

  const { port, origin } = await listenOnLoopback(tt, server);

  await tt.test('an agent reads its identity, the offer and a task, PATCHes it under If-Match and re-reads it conditionally, all under the mount prefix', (st) => agentFlow(st, `${origin}/tasks-api/api/v1`));
  await tt.test('a body declared or streamed over 131072 bytes is 413 request_too_large and closes the connection', (st) => oversizedBodies(st, port, '/tasks-api/api/v1/tasks/1', null));
  const outside = await fetch(`${origin}/api/v1/openapi.json`);
  tt.equal(outside.status, 404, 'outside the prefix the core answers 404');
  tt.match(await outside.json(), { code: 'route_not_found' });
});
