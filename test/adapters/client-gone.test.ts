import t from 'tap';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { connect, Socket, type AddressInfo } from 'node:net';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { createNodeServer, type Handler } from '../../adapters/node-http.js';
import { whenSocketCloses } from '../../adapters/socket-close.js';
import type { ServiceResponse } from '../../lib/http/types.js';
import { trackUnanswered } from '../../bin/shutdown.js';
import type { TapTest } from '../helpers/api.js';

const TWO_PIPELINED = 'GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\n';

const collectGarbage = (): void => {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
};

/**
 * A handler answering `/slow` only once `release()` is called, anything else at once; `arrived`
 * resolves at its `expected`th request.
 */
function slowFirst(expected = 2) {
  let release = (): void => undefined;
  let calls = 0;
  let allArrived = (): void => undefined;
  const arrived = new Promise<void>((resolve) => {
    allArrived = resolve;
  });
  const handler: Handler = {
    handle(request) {
      calls += 1;
      if (calls === expected) allArrived();
      const answer: ServiceResponse = { status: 200, headers: { 'content-type': 'application/json' }, body: '{"ok":true}' };
      if (request.url !== '/slow') return answer;
      return new Promise<ServiceResponse>((resolve) => {
        release = () => resolve(answer);
      });
    },
  };
  return { handler, arrived, release: () => release() };
}

async function listening(tt: TapTest, server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  tt.teardown(() => new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  }));
  return (server.address() as AddressInfo).port;
}

/**
 * Sends two pipelined requests, waits until the server has both, then goes; resolves once the
 * server's side of the connection has closed, with a weak reference to that side.
 */
async function pipelineThenGo(server: Server, port: number, arrived: Promise<void>): Promise<WeakRef<Socket>> {
  const serverSide = new Promise<WeakRef<Socket>>((resolve) => {
    server.once('connection', (socket: Socket) => {
      const ref = new WeakRef(socket);
      socket.once('close', () => resolve(ref));
    });
  });
  const client = connect(port, '127.0.0.1');
  client.on('error', () => undefined);
  client.write(TWO_PIPELINED);
  await arrived;
  client.destroy();
  return serverSide;
}

t.test('createNodeServer: a client that goes with a request pipelined behind a slow answer leaves nothing of its connection behind', async (tt) => {
  const { handler, arrived, release } = slowFirst();
  const server = createNodeServer(handler);
  const port = await listening(tt, server);
  const socket = await pipelineThenGo(server, port, arrived);
  // The slow answer comes after all, to a connection that is gone.
  release();
  let collected = false;
  for (let attempt = 0; attempt < 20 && !collected; attempt += 1) {
    await new Promise((resolve) => setTimeout(resolve, 10));
    collectGarbage();
    collected = socket.deref() === undefined;
  }
  tt.ok(collected, 'the closed connection (and the answers queued on it) can be collected');
});

t.test('createNodeServer: a CONNECT pipelined behind a slow answer still reaches onResponse when its client goes, on a connection that served requests before', async (tt) => {
  const { handler, arrived, release } = slowFirst(3);
  const observed: string[] = [];
  const server = createNodeServer(handler, { onResponse: (response, req) => observed.push(`${req.method} ${response.status}`) });
  const port = await listening(tt, server);
  let serverSide: Socket | undefined;
  server.once('connection', (socket: Socket) => {
    serverSide = socket;
  });
  const client = connect(port, '127.0.0.1');
  client.on('error', () => undefined);
  // A first exchange answered in full, so the connection's close listeners are in place before.
  const warmed = new Promise<void>((resolve) => client.once('data', () => resolve()));
  client.write('GET /warm HTTP/1.1\r\nHost: x\r\n\r\n');
  await warmed;
  client.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\nCONNECT /tunnel HTTP/1.1\r\nHost: x\r\n\r\n');
  await arrived;
  // node stops reading a connection once it hands it to 'connect', so the client's going would
  // show only when the slow answer is written: the connection is reset here instead.
  client.destroy();
  const closed = new Promise((resolve) => serverSide?.once('close', resolve));
  serverSide?.destroy();
  await closed;
  release();
  await new Promise((resolve) => setTimeout(resolve, 20));
  tt.ok(observed.includes('CONNECT 200'), `the CONNECT's answer was observed (${observed.join(', ')})`);
});

t.test('serve\'s stop: answers pipelined behind a slow one leave the unanswered set when their client goes', async (tt) => {
  const { handler, arrived, release } = slowFirst();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    void Promise.resolve(handler.handle({ method: req.method ?? 'GET', url: req.url ?? '/', headers: req.headers })).then((answer) => {
      res.writeHead(answer.status, answer.headers).end(answer.body);
    });
  });
  const unanswered = trackUnanswered(server, () => false);
  const port = await listening(tt, server);
  await pipelineThenGo(server, port, arrived);
  await new Promise((resolve) => setImmediate(resolve));
  tt.equal(unanswered.size, 0, 'nothing kept for the connection that went');
  release();
});

t.test('whenSocketCloses: one listener per connection however many requests it carries; a cancelled call is not made', async (tt) => {
  const whenClosed = whenSocketCloses();
  const socket = new Socket();
  const made: string[] = [];
  const before = socket.listenerCount('close');
  for (let index = 0; index < 100; index += 1) whenClosed(socket, () => made.push('served'))();
  whenClosed(socket, () => made.push('kept'));
  const cancel = whenClosed(socket, () => made.push('cancelled'));
  tt.equal(socket.listenerCount('close'), before + 1, 'a single close listener');
  cancel();
  socket.destroy();
  await new Promise((resolve) => socket.once('close', resolve));
  tt.strictSame(made, ['kept'], 'only the call still due is made');
  whenClosed(socket, () => made.push('after'));
  await Promise.resolve();
  tt.strictSame(made, ['kept', 'after'], 'a connection already closed gets its call at once');
});
