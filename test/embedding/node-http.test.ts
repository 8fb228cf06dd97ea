import t from 'tap';
import { createServer } from 'node:http';
import { toNodeHandler } from '../../adapters/node-http.js';
import { agentFlow, embeddedService, oversizedBodies, listenOnLoopback } from './flow.js';

// The README's node:http example: the node adapter under /tasks-api of a plain node:http app.
t.test('node:http: the node adapter under /tasks-api serves the agent flow, 413s and leaves the app alone', async (tt) => {
  const service = embeddedService(tt);

  // --- the example ---
  const tasksApi = toNodeHandler(service, { prefix: '/tasks-api' });
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/tasks-api/')) return tasksApi(req, res);
    res.end('my app');
  });
  // --- end of the example ---

  const { port, origin } = await listenOnLoopback(tt, server);

  await tt.test('an agent reads its identity, the offer and a task, PATCHes it under If-Match and re-reads it conditionally, all under the mount prefix', (st) => agentFlow(st, `${origin}/tasks-api/api/v1`));
  await tt.test('a body declared or streamed over 131072 bytes is 413 request_too_large, drained, and the connection serves the next request', (st) => oversizedBodies(st, port, '/tasks-api/api/v1/tasks/1', { openApiPath: '/tasks-api/api/v1/openapi.json' }));
  tt.equal(await (await fetch(`${origin}/elsewhere`)).text(), 'my app', "the app's own routes");
});
