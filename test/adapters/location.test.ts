import t from 'tap';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { toFetchHandler } from '../../adapters/fetch.js';
import { createNodeServer, toNodeHandler } from '../../adapters/node-http.js';
import type { ServiceResponse } from '../../lib/http/types.js';

// A Location the core gives as a path is the mount's path outside: the client must stay inside.

const created = { handle: (): ServiceResponse => ({ status: 201, headers: { location: '/api/v1/human-requests/8', 'content-type': 'application/json' }, body: '{}' }) };

t.test('ADAPTERS: under a prefix, Location gets the prefix (fetch and node adapters); without one it is as the core gave it', async (t) => {
  for (const [prefix, expected] of [['/tasks-api', '/tasks-api/api/v1/human-requests/8'], [undefined, '/api/v1/human-requests/8']] as const) {
    const fetchHandler = toFetchHandler(created, prefix === undefined ? {} : { prefix });
    const viaFetch = await fetchHandler(new Request(`http://localhost${prefix ?? ''}/api/v1/tasks/1/human-requests`, { method: 'POST' }));
    t.equal(viaFetch.headers.get('location'), expected, `fetch adapter, prefix ${String(prefix)}`);

    const server = createNodeServer(created, prefix === undefined ? {} : { prefix });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const viaNode = await fetch(`http://127.0.0.1:${port}${prefix ?? ''}/api/v1/tasks/1/human-requests`, { method: 'POST' });
    await viaNode.arrayBuffer();
    t.equal(viaNode.headers.get('location'), expected, `node adapter, prefix ${String(prefix)}`);
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
});

t.test('ADAPTERS: under a host that strips its mount path (Express: req.baseUrl), the node adapter\'s Location gets the mount too', async (t) => {
  for (const [baseUrl, prefix, expected] of [
    ['/tasks-api', undefined, '/tasks-api/api/v1/human-requests/8'],
    ['/tenant/7', '/tasks', '/tenant/7/tasks/api/v1/human-requests/8'],
    ['/bad path', undefined, '/api/v1/human-requests/8'],
    [42, undefined, '/api/v1/human-requests/8'],
  ] as const) {
    const handler = toNodeHandler(created, prefix === undefined ? {} : { prefix });
    // What Express does for app.use(mount, handler): the mount leaves req.url and goes to req.baseUrl.
    const server = createServer((req, res) => {
      Object.assign(req, { baseUrl });
      handler(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    const answer = await fetch(`http://127.0.0.1:${port}${prefix ?? ''}/api/v1/tasks/1/human-requests`, { method: 'POST' });
    await answer.arrayBuffer();
    t.equal(answer.headers.get('location'), expected, `baseUrl ${JSON.stringify(baseUrl)}, prefix ${String(prefix)}`);
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }
});
