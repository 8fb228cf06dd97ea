import { mock } from 'node:test';
import t from 'tap';
import { EventEmitter } from 'node:events';
import { Agent, createServer, get } from 'node:http';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { CONNECTION_LIMITS, limitConnections } from '../bin/connection-limits.js';
import { exited, run, serve } from './helpers/cli.js';

function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.once('connect', () => resolve(socket));
    socket.once('close', () => reject(new Error('closed before connecting')));
  });
}

/** A health check on an open connection: its status line, or null when the server closed the connection instead. */
function healthOn(socket: Socket): Promise<string | null> {
  return new Promise((resolve) => {
    let text = '';
    const done = (result: string | null): void => {
      socket.off('data', onData);
      socket.off('close', onClose);
      resolve(result);
    };
    const onData = (chunk: Buffer): void => {
      text += chunk.toString('latin1');
      const end = text.indexOf('\r\n');
      if (end !== -1) done(text.slice(0, end));
    };
    const onClose = (): void => done(null);
    socket.on('data', onData);
    socket.once('close', onClose);
    if (socket.destroyed) done(null);
    else socket.write('GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n');
  });
}

t.test('SERVE: at most 1,000 connections at once; one more is closed as it arrives and logged, and a freed slot takes a new one', async (tt) => {
  const { port, output } = await serve(tt, ['--db', join(tt.testdir(), 'connections.sqlite')]);
  const sockets: Socket[] = [];
  tt.teardown(() => sockets.forEach((socket) => socket.destroy()));
  // In batches, so the listen backlog never overflows (a dropped SYN is retried a second later).
  while (sockets.length < CONNECTION_LIMITS.maxConnections) {
    const batch = Math.min(100, CONNECTION_LIMITS.maxConnections - sockets.length);
    sockets.push(...(await Promise.all(Array.from({ length: batch }, () => open(port)))));
  }
  // Connections are accepted in order, so once the last one is answered all of them are held.
  tt.equal(await healthOn(sockets.at(-1) as Socket), 'HTTP/1.1 200 OK', 'the 1,000th connection is served');

  const extra = await open(port);
  sockets.push(extra);
  tt.equal(await healthOn(extra), null, 'the 1,001st is closed without an answer');
  const line = await output.waitFor('stderr', /^\{.*"message":"connection limit reached.*$/m);
  tt.match(JSON.parse(line[0]), { level: 'error', refused: 1 }, 'and the operator hears of it');

  (sockets[0] as Socket).destroy();
  // The server learns of the close on its next turn of the event loop: a few immediate retries.
  let status: string | null = null;
  for (let attempt = 0; attempt < 200 && status === null; attempt += 1) {
    const next = await open(port);
    sockets.push(next);
    status = await healthOn(next);
  }
  tt.equal(status, 'HTTP/1.1 200 OK', 'a closed connection frees its slot');
});

t.test('SERVE: headers must arrive within 20 s and a whole request within 60 s, well inside node\'s own 60 s and 300 s; idle keep-alive connections stay 125 s, past a proxy\'s own', async (tt) => {
  const server = createServer();
  const defaults = { headersTimeout: server.headersTimeout, requestTimeout: server.requestTimeout, maxConnections: server.maxConnections, keepAliveTimeout: server.keepAliveTimeout };
  limitConnections(server);
  tt.strictSame(
    { headersTimeout: server.headersTimeout, requestTimeout: server.requestTimeout, maxConnections: server.maxConnections, keepAliveTimeout: server.keepAliveTimeout },
    { headersTimeout: 20_000, requestTimeout: 60_000, maxConnections: 1_000, keepAliveTimeout: 125_000 },
  );
  tt.ok(server.headersTimeout < defaults.headersTimeout && server.requestTimeout < defaults.requestTimeout, JSON.stringify(defaults));
  // By default Caddy keeps an idle upstream connection 2 minutes, Traefik 90 s, nginx (upstream
  // keepalive) and AWS's ALB 60 s.
  tt.ok(server.keepAliveTimeout > 120_000 && defaults.keepAliveTimeout < 120_000, 'longer than the proxies\' idle timeouts, unlike node\'s');
  limitConnections(server, 7_000);
  tt.equal(server.keepAliveTimeout, 7_000, 'the keep-alive timeout given is the one set');
  server.close();
});

/** The `Keep-Alive` header of a health check's answer, where node states the idle timeout it applies. */
function keepAliveOf(port: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const agent = new Agent({ keepAlive: true });
    get({ port, host: '127.0.0.1', path: '/healthz', agent }, (response) => {
      response.resume();
      response.once('end', () => {
        agent.destroy();
        const header = response.headers['keep-alive'];
        resolve(typeof header === 'string' ? header : undefined);
      });
    }).once('error', reject);
  });
}

t.test('SERVE: --keep-alive-timeout S (or WTA_KEEP_ALIVE_TIMEOUT) sets how long an idle connection stays open, and answers say so; SIGTERM closes idle ones at once', async (tt) => {
  const dbPath = join(tt.testdir(), 'keep-alive.sqlite');
  const byDefault = await serve(tt, ['--db', dbPath]);
  tt.equal(await keepAliveOf(byDefault.port), 'timeout=125', 'by default');
  // An idle keep-alive connection does not hold a stop up for its 125 s, nor the 10 s busy ones get.
  const idle = await open(byDefault.port);
  tt.equal(await healthOn(idle), 'HTTP/1.1 200 OK', 'a connection answered and left open');
  const closed = new Promise<number>((resolve) => idle.once('close', () => resolve(Date.now())));
  const signalled = Date.now();
  byDefault.child.kill('SIGTERM');
  tt.same(await exited(byDefault.child), { code: 0, signal: null }, 'SIGTERM stops the server');
  tt.ok((await closed) - signalled < 5_000, 'closing the idle connection at once');
  const byFlag = await serve(tt, ['--db', dbPath, '--keep-alive-timeout', '7'], { WTA_KEEP_ALIVE_TIMEOUT: '9' });
  tt.equal(await keepAliveOf(byFlag.port), 'timeout=7', 'the flag wins over the variable');
  byFlag.child.kill('SIGKILL');
  const byVariable = await serve(tt, ['--db', dbPath], { WTA_KEEP_ALIVE_TIMEOUT: '3600' });
  tt.equal(await keepAliveOf(byVariable.port), 'timeout=3600', 'the variable, up to an hour');
  byVariable.child.kill('SIGKILL');

  for (const [args, variables, message] of [
    [['--keep-alive-timeout', '0'], {}, /--keep-alive-timeout must be an integer from 1 to 3600/],
    [['--keep-alive-timeout', '3601'], {}, /--keep-alive-timeout must be an integer from 1 to 3600/],
    [['--keep-alive-timeout', '1.5'], {}, /--keep-alive-timeout must be an integer/],
    [[], { WTA_KEEP_ALIVE_TIMEOUT: 'long' }, /WTA_KEEP_ALIVE_TIMEOUT must be an integer/],
  ] as const) {
    const refused = await run(['serve', '--db', dbPath, ...args], variables);
    tt.equal(refused.code, 2, `${args.join(' ')}${JSON.stringify(variables)}: a usage error`);
    tt.match(refused.stderr, message);
  }
});

t.test('SERVE: refused connections are logged at most once a minute, and those refused after a line are counted in one more at the minute\'s end', async (tt) => {
  mock.timers.enable({ apis: ['setTimeout', 'Date'], now: Date.parse('2026-11-16T10:00:00Z') });
  const lines: string[] = [];
  const write = process.stderr.write.bind(process.stderr);
  process.stderr.write = ((chunk: string | Uint8Array) => {
    lines.push(String(chunk));
    return true;
  }) as typeof process.stderr.write;
  tt.teardown(() => {
    process.stderr.write = write;
    mock.timers.reset();
  });
  const server = Object.assign(new EventEmitter(), { headersTimeout: 0, requestTimeout: 0, maxConnections: 0, keepAliveTimeout: 0 });
  limitConnections(server);
  const refusedCounts = () => lines.map((line) => (JSON.parse(line) as { refused: number }).refused);
  server.emit('drop');
  tt.strictSame(refusedCounts(), [1], 'the first refusal at once');
  for (let count = 0; count < 5; count += 1) server.emit('drop');
  mock.timers.tick(30_000);
  server.emit('drop');
  tt.strictSame(refusedCounts(), [1], 'nothing more within the minute');
  mock.timers.tick(30_000);
  tt.strictSame(refusedCounts(), [1, 6], 'the six after it, at the minute\'s end, though no refusal followed');
  mock.timers.tick(120_000);
  tt.strictSame(refusedCounts(), [1, 6], 'and no empty lines after');
  server.emit('drop');
  tt.strictSame(refusedCounts(), [1, 6, 1], 'a refusal after a quiet minute is logged at once');
});
