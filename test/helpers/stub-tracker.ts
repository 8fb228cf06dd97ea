import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../../lib/logger.js';
import type { ServiceOptions } from '../../lib/options.js';
import { httpSourceProvider } from '../../lib/sources/http-provider.js';
import type { TapTest } from './api.js';
import { baseFixture, TOKENS, type FixtureShape } from './fixture.js';
import { harness, type Harness } from './service.js';

/**
 * A real local HTTP server standing in for an external tracker (contract 9's built-in `http`
 * provider talks to it): programmable items and failures, and a record of what it received.
 *
 *   GET  /items/{itemId}           the item as JSON (200), or its programmed failure
 *   POST /items/{itemId}/requests  `{ref}` (201), or its programmed failure
 */

/** An item as the tracker answers it; extra members are sent as they are (providers must ignore them). */
export interface StubItem {
  title?: unknown;
  description?: unknown;
  businessStatus?: unknown;
  replies?: unknown[];
  [member: string]: unknown;
}

export interface StubReply {
  id: string | number;
  inReplyTo: string | number | null;
  author?: string | null;
  text: string;
  createdUtc?: string | null;
  [member: string]: unknown;
}

/** What the tracker does instead of answering normally. */
export type StubFailure =
  | { readonly kind: 'status'; readonly status: number }
  | { readonly kind: 'invalid-json' }
  /** Never answers (the connection stays open until the stub closes). */
  | { readonly kind: 'hang' }
  /** Sends a 200 and the start of a body, then nothing more (until the stub closes). */
  | { readonly kind: 'stall-body' }
  /** Answers normally once `open` settles: the test decides when, without waiting for time. */
  | { readonly kind: 'gate'; readonly open: Promise<unknown> };

export interface RecordedRequest {
  readonly method: string;
  /** The path as sent (item ids percent-encoded), e.g. `/items/T-1` or `/items/T-1/requests`. */
  readonly path: string;
  /** The parsed JSON body, or undefined when there was none. */
  readonly body: unknown;
  /** The Authorization header, if any. */
  readonly authorization: string | undefined;
  /** performance.now() when the request arrived and when its answer was sent (null: never). */
  readonly startedMs: number;
  finishedMs: number | null;
}

export interface StubTracker {
  /** `http://127.0.0.1:PORT/items/`, the base URL of the http provider. */
  readonly base: string;
  readonly port: number;
  readonly requests: RecordedRequest[];
  setItem(itemId: string, item: StubItem): void;
  /** Appends a reply to an item's `replies`. */
  addReply(itemId: string, reply: StubReply): void;
  /** Programs (or, with null, clears) the failure of GET on an item. */
  failRefresh(itemId: string, failure: StubFailure | null): void;
  /** Programs (or, with null, clears) the failure of POST requests on an item. */
  failPublish(itemId: string, failure: StubFailure | null): void;
  /** The refs handed out so far, in order. */
  readonly refs: string[];
  /** GETs received for an item. */
  gets(itemId: string): RecordedRequest[];
  /** POSTs received for an item's requests. */
  posts(itemId: string): RecordedRequest[];
  /** Forgets the recorded requests. */
  clear(): void;
  /** The most requests that were being answered at the same time. */
  readonly maxConcurrent: number;
  close(): Promise<void>;
}

const ITEMS = '/items/';

/** Starts a stub tracker on 127.0.0.1 (port 0); closed at the test's teardown. */
export async function stubTracker(t: TapTest): Promise<StubTracker> {
  const items = new Map<string, StubItem>();
  const refreshFailures = new Map<string, StubFailure>();
  const publishFailures = new Map<string, StubFailure>();
  const requests: RecordedRequest[] = [];
  const refs: string[] = [];
  let active = 0;
  let maxConcurrent = 0;

  function send(record: RecordedRequest, response: ServerResponse, status: number, text: string): void {
    active -= 1;
    record.finishedMs = performance.now();
    response.writeHead(status, { 'content-type': 'application/json' }).end(text);
  }

  /** Applies a programmed failure; true when it answered (or will never answer). */
  function fail(failure: StubFailure | undefined, record: RecordedRequest, response: ServerResponse, answer: () => void): boolean {
    if (failure === undefined) return false;
    switch (failure.kind) {
      case 'status':
        send(record, response, failure.status, JSON.stringify({ error: 'programmed failure' }));
        return true;
      case 'invalid-json':
        send(record, response, 200, '{"title": "half an obj');
        return true;
      case 'hang':
        return true;
      case 'stall-body':
        response.writeHead(200, { 'content-type': 'application/json' }).write('{"title":');
        return true;
      case 'gate':
        void failure.open.then(answer, answer);
        return true;
    }
  }

  async function handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    let text = '';
    request.setEncoding('utf8');
    for await (const chunk of request) text += chunk as string;
    const url = new URL(request.url ?? '/', 'http://stub');
    const path = url.pathname;
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      body = text;
    }
    const record: RecordedRequest = {
      method: request.method ?? '', path, body, authorization: request.headers.authorization, startedMs: performance.now(), finishedMs: null,
    };
    requests.push(record);
    active += 1;
    maxConcurrent = Math.max(maxConcurrent, active);

    if (!path.startsWith(ITEMS)) return send(record, response, 404, '{}');
    const segments = path.slice(ITEMS.length).split('/').map((segment) => decodeURIComponent(segment));
    if (request.method === 'GET' && segments.length === 1) {
      const rest = segments[0] ?? '';
      const answer = (): void => {
        const item = items.get(rest);
        if (item === undefined) send(record, response, 404, JSON.stringify({ error: 'no such item' }));
        else send(record, response, 200, JSON.stringify(item));
      };
      if (!fail(refreshFailures.get(rest), record, response, answer)) answer();
      return;
    }
    if (request.method === 'POST' && segments.length === 2 && segments[1] === 'requests') {
      const itemId = segments[0] ?? '';
      const answer = (): void => {
        const ref = `stub-ref-${itemId}-${refs.length + 1}-c0ffee`;
        refs.push(ref);
        send(record, response, 201, JSON.stringify({ ref, trackerUrl: `http://127.0.0.1:${port}/secret/${ref}` }));
      };
      if (!fail(publishFailures.get(itemId), record, response, answer)) answer();
      return;
    }
    send(record, response, 405, '{}');
  }

  const server = createServer((request, response) => {
    handle(request, response).catch(() => response.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;

  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    // Hung requests and keep-alive sockets would otherwise hold close() open.
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  t.teardown(close);

  return {
    base: `http://127.0.0.1:${port}${ITEMS}`,
    port,
    requests,
    refs,
    setItem: (itemId, item) => void items.set(itemId, item),
    addReply(itemId, reply) {
      const item = items.get(itemId);
      if (item === undefined) throw new Error(`no stub item ${itemId}`);
      item.replies = [...(item.replies ?? []), reply];
    },
    failRefresh: (itemId, failure) => void (failure === null ? refreshFailures.delete(itemId) : refreshFailures.set(itemId, failure)),
    failPublish: (itemId, failure) => void (failure === null ? publishFailures.delete(itemId) : publishFailures.set(itemId, failure)),
    gets: (itemId) => requests.filter((r) => r.method === 'GET' && r.path === `${ITEMS}${encodeURIComponent(itemId)}`),
    posts: (itemId) => requests.filter((r) => r.method === 'POST' && r.path === `${ITEMS}${encodeURIComponent(itemId)}/requests`),
    clear: () => void requests.splice(0),
    get maxConcurrent() {
      return maxConcurrent;
    },
    close,
  };
}

/** The task id → linked tracker items of a source world. */
export type Links = Record<number, readonly (string | { itemId: string; providerKey?: string; facts?: Record<string, unknown> })[]>;

export interface SourceWorld {
  h: Harness;
  stub: StubTracker;
  /** Everything the service logged (errors and info). */
  logs: { level: string; entry: Record<string, unknown> }[];
}

/**
 * The shared test world (acting as ada-bot) with tasks linked to items of the stub tracker under
 * providerKey `tracker`, served by the built-in http provider (`service.sources` adds providers).
 * By default task 1 is linked to T-1 and task 3 to T-2, and both items exist in the tracker.
 */
export async function sourceWorld(t: TapTest, options: {
  links?: Links;
  fixture?: FixtureShape;
  token?: string;
  service?: Pick<ServiceOptions, 'sourceTimeoutMs' | 'sourceMaxAgeMs' | 'sources'>;
  items?: Record<string, StubItem>;
} = {}): Promise<SourceWorld> {
  const stub = await stubTracker(t);
  for (const [itemId, item] of Object.entries(options.items ?? { 'T-1': { title: 'Tracker one' }, 'T-2': { title: 'Tracker two' } })) {
    stub.setItem(itemId, item);
  }
  const fixture = options.fixture ?? baseFixture();
  const links = options.links ?? { 1: ['T-1'], 3: ['T-2'] };
  for (const [taskId, linked] of Object.entries(links)) {
    const task = fixture.tasks.find((candidate) => candidate['id'] === Number(taskId));
    if (task === undefined) throw new Error(`no task ${taskId} in the fixture`);
    task['sources'] = linked.map((link) =>
      typeof link === 'string' ? { providerKey: 'tracker', itemId: link } : { providerKey: 'tracker', ...link });
  }
  const logs: SourceWorld['logs'] = [];
  const logger: Logger = {
    error: (entry) => logs.push({ level: 'error', entry }),
    info: (entry) => logs.push({ level: 'info', entry }),
  };
  const h = harness({
    fixture,
    defaultToken: options.token ?? TOKENS.ada,
    rateLimit: 100_000,
    serviceOptions: {
      ...options.service,
      sources: { tracker: httpSourceProvider(stub.base), ...options.service?.sources },
      logger,
    },
  });
  t.teardown(async () => {
    await h.service.idle();
    h.service.close();
  });
  return { h, stub, logs };
}

/** Turns the event loop until the stub has been asked for `itemId` more than `before` times; throws if it never is. */
export async function untilAsked(stub: StubTracker, itemId: string, before: number): Promise<void> {
  for (let turn = 0; turn < 1000 && stub.gets(itemId).length === before; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  if (stub.gets(itemId).length === before) throw new Error(`${itemId} was not asked`);
}
