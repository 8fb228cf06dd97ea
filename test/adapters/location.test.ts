import t from 'tap';
import type { AddressInfo } from 'node:net';
import { toFetchHandler } from '../../adapters/fetch.js';
import { createNodeServer } from '../../adapters/node-http.js';
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
