import t from 'tap';
import { fastify } from 'fastify';
import type { AddressInfo } from 'node:net';
import { toNodeHandler } from '../../adapters/node-http.js';
import { agentFlow, embeddedService, oversizedBodies } from './flow.js';

// The README's Fastify example: the node adapter mounted under /tasks-api of an existing app.
t.test('Fastify: the node adapter under /tasks-api serves the agent flow, 413s and leaves the app alone', async (tt) => {
  const service = embeddedService(tt);

  // --- the example ---
  const app = fastify();
  const tasksApi = toNodeHandler(service, { prefix: '/tasks-api' });
  await app.register(async (scope) => {
    // Leave the body unread: the adapter reads it, with its own limit.
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', (_request, _payload, done) => done(null));
    scope.all('/*', (request, reply) => {
      reply.hijack();
      tasksApi(request.raw, reply.raw);
    });
  }, { prefix: '/tasks-api' });
  // --- end of the example ---

  app.post('/echo', async (request) => ({ youSent: request.body }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  tt.teardown(() => app.close());
  const { port } = app.server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;

  await tt.test('an agent reads its identity, the offer and a task, PATCHes it under If-Match and re-reads it conditionally, all under the mount prefix', (st) => agentFlow(st, `${origin}/tasks-api/api/v1`));
  await tt.test('a body declared or streamed over 131072 bytes is 413 request_too_large, drained, and the connection serves the next request', (st) => oversizedBodies(st, port, '/tasks-api/api/v1/tasks/1', { openApiPath: '/tasks-api/api/v1/openapi.json' }));

  const openapi = await fetch(`${origin}/tasks-api/api/v1/openapi.json`);
  tt.equal(openapi.status, 200, 'the anonymous OpenAPI document under the prefix');
  const outside = await fetch(`${origin}/api/v1/openapi.json`);
  tt.equal(outside.status, 404, 'nothing of the API outside the prefix');

  const echo = await fetch(`${origin}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' });
  tt.same(await echo.json(), { youSent: { a: 1 } }, "the app's own JSON parsing is untouched outside the mount");
});
