/**
 * HTTP load benchmark. Run: `npm run bench` (BENCH_SECONDS, default 5 s per scenario;
 * BENCH_CONNECTIONS, default 32; BENCH_WARMUP, default 1 s before each throughput scenario).
 *
 * In one run on one machine: a raw node:http server answering a fixed small JSON body (the
 * ceiling) and the service over a file database, each in a child process of its own on 127.0.0.1
 * port 0, loaded by autocannon in this process. Throughput scenarios: GET /tasks/{id}, GET
 * /tasks/available (50 offered tasks), PATCH /tasks/{id} (alternating GET for the ETag and PATCH
 * with If-Match and Idempotency-Key, one organisation per connection, only 2xx PATCHes counted),
 * then a durability check (the service is killed with SIGKILL and the file is read back), and two
 * references for the PATCH row without targets: the service with fsync off, and node:http doing
 * no work behind the same GET + PATCH protocol.
 * Behaviour scenarios: a 64-connection claim race, a 200-client burst against the default rate
 * limit, and the limiter's size with 100,000 distinct clients. Figures go to stdout and to
 * bench/results/latest.json; missed targets are printed, the exit code stays 0.
 *
 * The helpers exported here are also used by test/load/*.test.ts.
 */
import Database from 'better-sqlite3';
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Agent, createServer, request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { createRequire } from 'node:module';
import { arch, cpus, loadavg, platform, release, tmpdir, totalmem } from 'node:os';
import { join, resolve } from 'node:path';
import { createHistogram, performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createNodeServer } from '../adapters/node-http.js';
import { FixedWindowRateLimiter } from '../lib/auth/rate-limit.js';
import { SCOPES } from '../lib/auth/scopes.js';
import { hashToken } from '../lib/auth/token.js';
import { createService } from '../lib/service.js';
import { generateOrganisation, type GeneratedOrganisation } from './generate.js';

// ---------------------------------------------------------------------------------------------
// autocannon 8 ships no type declarations: the small part of its programmatic API used here.

interface CannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string;
  /** Called before each send; answers the request to send (a falsy answer restarts the list). */
  setupRequest?: (request: CannonRequest, context: Record<string, unknown>) => CannonRequest | null;
  onResponse?: (status: number, body: string, context: Record<string, unknown>, headers: Record<string, string | string[]>) => void;
}

interface CannonClient {
  setRequests(requests: CannonRequest[]): void;
  on(event: 'response', listener: (status: number, bytes: number, responseMs: number) => void): this;
}

interface CannonOptions {
  url: string;
  connections: number;
  duration: number;
  pipelining?: number;
  timeout?: number;
  maxConnectionRequests?: number;
  setupClient?: (client: CannonClient) => void;
}

interface CannonResult {
  duration: number;
  errors: number;
  timeouts: number;
  totalCompletedRequests: number;
  statusCodeStats: Record<string, { count: number }>;
}

type Autocannon = (options: CannonOptions, done: (error: Error | null, result: CannonResult) => void) => unknown;

let cannon: Autocannon | undefined;
/** Loaded on first use (CommonJS, and the tests that import this file never need it). */
function autocannon(options: CannonOptions): Promise<CannonResult> {
  cannon ??= createRequire(import.meta.url)('autocannon') as Autocannon;
  const run = cannon;
  return new Promise((resolvePromise, reject) => {
    run(options, (error, result) => (error ? reject(error) : resolvePromise(result)));
  });
}

// ---------------------------------------------------------------------------------------------
// Data set helpers (also used by the load tests).

const API = '/api/v1';

/** Tasks currently assigned to each staff member of an organisation. */
export function ownedTasks(db: Database.Database, organisationId: number): Map<number, number[]> {
  const rows = db.prepare(`SELECT a.staff_id AS staffId, a.task_id AS taskId FROM task_assignments a
    JOIN tasks t ON t.id = a.task_id WHERE t.organisation_id = ? ORDER BY a.task_id`).all(organisationId) as { staffId: number; taskId: number }[];
  const owned = new Map<number, number[]>();
  for (const row of rows) {
    const list = owned.get(row.staffId) ?? [];
    list.push(row.taskId);
    owned.set(row.staffId, list);
  }
  return owned;
}

/**
 * Moves dependency-free tasks of the organisation's other agents (from the highest task id down)
 * to `staffId` until `staffId` holds `count` tasks without prerequisites: with the generator's
 * Ready tasks, default calendars and no leases, that is exactly `count` offered tasks. The total
 * stays what the generator made. Run it before a service opens the database (plans are cached per
 * workspace version, and this bypasses the API).
 */
export function concentrateOffers(db: Database.Database, organisationId: number, staffId: number, count: number): void {
  const free = `NOT EXISTS (SELECT 1 FROM task_dependencies d WHERE d.task_id = a.task_id)`;
  const held = (db.prepare(`SELECT count(*) AS n FROM task_assignments a JOIN tasks t ON t.id = a.task_id
    WHERE t.organisation_id = ? AND a.staff_id = ? AND ${free}`).get(organisationId, staffId) as { n: number }).n;
  if (held >= count) return;
  const donors = db.prepare(`SELECT a.task_id AS taskId, a.staff_id AS fromId FROM task_assignments a JOIN tasks t ON t.id = a.task_id
    WHERE t.organisation_id = ? AND a.staff_id <> ? AND ${free} ORDER BY a.task_id DESC LIMIT ?`)
    .all(organisationId, staffId, count - held) as { taskId: number; fromId: number }[];
  const move = db.prepare('UPDATE task_assignments SET staff_id = ? WHERE task_id = ? AND staff_id = ?');
  db.transaction(() => {
    for (const donor of donors) move.run(staffId, donor.taskId, donor.fromId);
  })();
}

/** Adds `count` clients (every scope) of one resource; answers their tokens. */
export function addResourceClients(
  db: Database.Database,
  options: { organisationId: number; resourceId: number; sponsorId: number; count: number; idBase: number },
): string[] {
  const client = db.prepare('INSERT INTO api_clients (id, organisation_id, name, token_hash, sponsor_id, resource_id) VALUES (?, ?, ?, ?, ?, ?)');
  const scope = db.prepare('INSERT INTO api_client_scopes (client_id, scope) VALUES (?, ?)');
  const tokens: string[] = [];
  db.transaction(() => {
    for (let index = 0; index < options.count; index += 1) {
      const id = options.idBase + index;
      const token = `wta_race_${options.organisationId}_${index}_${'r'.repeat(16)}`;
      client.run(id, options.organisationId, `racer-${index}`, hashToken(token), options.sponsorId, options.resourceId);
      for (const name of SCOPES) scope.run(id, name);
      tokens.push(token);
    }
  })();
  return tokens;
}

/** Live leases (not released, not expired at `now`) per task, for the given tasks. */
export function liveLeases(db: Database.Database, taskIds: readonly number[], now: number): Map<number, { token: string; clientId: number }[]> {
  const statement = db.prepare('SELECT token, client_id AS clientId FROM claims WHERE task_id = ? AND released_utc IS NULL AND expires_utc > ?');
  return new Map(taskIds.map((id) => [id, statement.all(id, now) as { token: string; clientId: number }[]]));
}

// ---------------------------------------------------------------------------------------------
// A minimal keep-alive HTTP client (one socket per Agent: one Agent is one connection).

export interface HttpAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
}

export function httpCall(agent: Agent, port: number, method: string, path: string, headers: Record<string, string>, body?: string): Promise<HttpAnswer> {
  return new Promise((resolveAnswer, reject) => {
    const sent = body === undefined ? headers : { ...headers, 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) };
    const req = httpRequest({ host: '127.0.0.1', port, method, path, agent, headers: sent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolveAnswer({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

function jsonMember(body: string, name: string): string | null {
  try {
    const value = (JSON.parse(body) as Record<string, unknown>)[name];
    return typeof value === 'string' ? value : null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------
// The claim race (bench and test/load/claim-race.test.ts).

export interface ClaimOutcome {
  readonly connection: number;
  readonly taskId: number;
  /** Final status for this connection and task (412 only if it gave up retrying). */
  readonly status: number;
  readonly code: string | null;
  /** The lease token of a 200. */
  readonly leaseToken: string | null;
}

export interface ClaimRace {
  readonly outcomes: ClaimOutcome[];
  readonly requests: number;
  /** Every claim answer by status, retried 412s included. */
  readonly claimStatuses: Record<string, number>;
  readonly ms: number;
}

/**
 * `tokens.length` connections (one keep-alive socket each, one client each) claim the same tasks
 * in the same order: for each task, GET it for the current ETag, then POST /claim with that
 * If-Match and an Idempotency-Key of its own; a 412 (another claim moved the workspace version)
 * re-reads and retries, anything else ends that task for the connection.
 */
export async function claimRace(options: { port: number; tokens: readonly string[]; taskIds: readonly number[]; maxRetries?: number }): Promise<ClaimRace> {
  const maxRetries = options.maxRetries ?? 200;
  const agents = options.tokens.map(() => new Agent({ keepAlive: true, maxSockets: 1 }));
  const outcomes: ClaimOutcome[] = [];
  const claimStatuses: Record<string, number> = {};
  let requests = 0;
  const started = performance.now();

  async function racer(index: number): Promise<void> {
    const agent = agents[index] as Agent;
    const authorization = `Bearer ${options.tokens[index] as string}`;
    for (const taskId of options.taskIds) {
      for (let attempt = 1; ; attempt += 1) {
        const read = await httpCall(agent, options.port, 'GET', `${API}/tasks/${taskId}`, { authorization });
        requests += 1;
        if (read.status !== 200) {
          outcomes.push({ connection: index, taskId, status: read.status, code: jsonMember(read.body, 'code'), leaseToken: null });
          break;
        }
        const claim = await httpCall(agent, options.port, 'POST', `${API}/tasks/${taskId}/claim`, {
          authorization,
          'if-match': String(read.headers['etag']),
          'idempotency-key': `race-${index}-${taskId}-${attempt}`,
        });
        requests += 1;
        claimStatuses[claim.status] = (claimStatuses[claim.status] ?? 0) + 1;
        if (claim.status === 412 && attempt < maxRetries) continue;
        outcomes.push({
          connection: index,
          taskId,
          status: claim.status,
          code: jsonMember(claim.body, 'code'),
          leaseToken: claim.status === 200 ? jsonMember(claim.body, 'token') : null,
        });
        break;
      }
    }
  }

  try {
    await Promise.all(options.tokens.map((_, index) => racer(index)));
  } finally {
    for (const agent of agents) agent.destroy();
  }
  return { outcomes, requests, claimStatuses, ms: performance.now() - started };
}

/** What the database says after a claim race: one live lease per task, each the token of a 200. */
export function judgeClaimRace(race: ClaimRace, leases: Map<number, { token: string }[]>) {
  const wins = race.outcomes.filter((outcome) => outcome.status === 200);
  const winTokens = new Set(wins.map((win) => win.leaseToken));
  const leaseCounts = [...leases.values()].map((list) => list.length);
  const leaseTokens = [...leases.values()].flat().map((lease) => lease.token);
  const byStatus: Record<string, number> = {};
  for (const outcome of race.outcomes) {
    const key = outcome.code === null ? String(outcome.status) : `${outcome.status} ${outcome.code}`;
    byStatus[key] = (byStatus[key] ?? 0) + 1;
  }
  return {
    tasks: leases.size,
    wins: wins.length,
    tasksWithExactlyOneLease: leaseCounts.filter((count) => count === 1).length,
    tasksWithoutLease: leaseCounts.filter((count) => count === 0).length,
    tasksWithSeveralLeases: leaseCounts.filter((count) => count > 1).length,
    winsWithLeaseRow: wins.filter((win) => leaseTokens.includes(win.leaseToken as string)).length,
    leasesWithoutWin: leaseTokens.filter((token) => !winTokens.has(token)).length,
    finalOutcomes: byStatus,
    claimAnswers: race.claimStatuses,
    serverErrors: race.outcomes.filter((outcome) => outcome.status >= 500).length,
    ok: wins.length === leases.size && leaseCounts.every((count) => count === 1) && leaseTokens.every((token) => winTokens.has(token)),
  };
}

// ---------------------------------------------------------------------------------------------
// The limiter's size with 100,000 distinct clients (bench and test/load/limiter-memory.test.ts).

export interface LimiterRun {
  readonly clients: number;
  readonly largest: number;
  readonly final: number;
  /** The bound asserted: what the live windows of two window lengths can hold. */
  readonly bound: number;
}

/** One new client every `stepMs`, each also coming back twice within its window; returns the sizes seen. */
export function limiterStream(clients: number, stepMs: number): LimiterRun {
  const limiter = new FixedWindowRateLimiter(120);
  let largest = 0;
  for (let client = 1; client <= clients; client += 1) {
    const now = client * stepMs;
    limiter.take(client, now);
    // Returning clients of the last half minute: windows in use, which must be kept.
    if (client > 1000) limiter.take(client - 1000, now);
    if (client > 3000) limiter.take(client - 3000, now);
    largest = Math.max(largest, limiter.size);
  }
  const perWindow = Math.ceil(limiter.windowMs / stepMs);
  return { clients, largest, final: limiter.size, bound: 2 * perWindow + 1 };
}

/** All clients at one instant, then a trickle of `trickle` new clients one window later. */
export function limiterBurst(clients: number, trickle: number): LimiterRun & { readonly duringBurst: number } {
  const limiter = new FixedWindowRateLimiter(120);
  for (let client = 1; client <= clients; client += 1) limiter.take(client, 0);
  const duringBurst = limiter.size;
  let largest = duringBurst;
  for (let index = 1; index <= trickle; index += 1) {
    limiter.take(clients + index, limiter.windowMs + index);
    largest = Math.max(largest, limiter.size);
  }
  return { clients, duringBurst, largest, final: limiter.size, bound: trickle };
}

// ---------------------------------------------------------------------------------------------
// Child processes: the ceiling and the service, each in its own process.

interface Listening {
  type: 'listening';
  port: number;
  synchronous?: number;
  journalMode?: string;
}

function serveCeiling(): void {
  const body = JSON.stringify({ ok: true, id: 1, title: 'ceiling' });
  const length = String(Buffer.byteLength(body));
  const server = createServer((req, res) => {
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': length });
    res.end(body);
  });
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.send?.({ type: 'listening', port: typeof address === 'object' && address !== null ? address.port : 0 } satisfies Listening);
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

/**
 * A reference for the PATCH row, not a target: node:http speaking the row's protocol with no work
 * behind it. A GET gets 200 with an ETag and a body of the service's size; a PATCH has its body
 * read and parsed and gets 204 with an ETag. What this reaches is the most any service on this
 * machine could reach in that row.
 */
function servePairs(getBodyBytes: string): void {
  const envelope = JSON.stringify({ id: 1, padding: '' }).length;
  const body = JSON.stringify({ id: 1, padding: 'x'.repeat(Math.max(0, Number(getBodyBytes) - envelope)) });
  const length = String(Buffer.byteLength(body));
  const server = createServer((req, res) => {
    if (req.method === 'PATCH') {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        JSON.parse(Buffer.concat(chunks).toString('utf8'));
        res.writeHead(204, { etag: '"1"' });
        res.end();
      });
      return;
    }
    req.resume();
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': length, etag: '"1"' });
    res.end(body);
  });
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.send?.({ type: 'listening', port: typeof address === 'object' && address !== null ? address.port : 0 } satisfies Listening);
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}

/**
 * The service over `path`. `durability` 'off' is for the reference row only: synchronous = OFF
 * (no fsync at all, so a 2xx is not durable) shows what the fsync costs in the PATCH row.
 */
function serveService(path: string, rateLimit: string, durability = 'full'): void {
  const db = new Database(path);
  let unexpected = 0;
  const service = createService({
    db,
    ...(rateLimit === 'default' ? {} : { rateLimit: Number(rateLimit) }),
    logger: {
      error: (entry) => {
        unexpected += 1;
        if (unexpected <= 5) process.stderr.write(`${JSON.stringify(entry)}\n`);
      },
    },
  });
  if (durability === 'off') db.pragma('synchronous = OFF');
  const server = createNodeServer(service);
  server.listen(0, '127.0.0.1', () => {
    const address = server.address();
    process.send?.({
      type: 'listening',
      port: typeof address === 'object' && address !== null ? address.port : 0,
      // As the service's own connection has them: a 2xx write is on disk when these say so.
      synchronous: db.pragma('synchronous', { simple: true }) as number,
      journalMode: db.pragma('journal_mode', { simple: true }) as string,
    } satisfies Listening);
  });
  process.on('message', (message: { type?: string }) => {
    if (message.type === 'stats') process.send?.({ type: 'stats', unexpectedErrors: unexpected });
  });
  process.on('SIGTERM', () => {
    server.close();
    server.closeAllConnections();
    service.close();
    db.close();
    process.exit(0);
  });
}

interface Child {
  readonly process: ChildProcess;
  readonly port: number;
  readonly info: Listening;
}

const THIS_FILE = fileURLToPath(import.meta.url);

function startChild(args: string[]): Promise<Child> {
  // fork() reuses this process's execArgv (`--import tsx`).
  const child = fork(THIS_FILE, args, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolveChild, reject) => {
    const timer = setTimeout(() => reject(new Error(`child ${args.join(' ')} did not start in 30 s`)), 30_000);
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`child ${args.join(' ')} exited early with ${code}`)));
    child.on('message', (message: Listening) => {
      if (message.type !== 'listening') return;
      clearTimeout(timer);
      child.removeAllListeners('exit');
      resolveChild({ process: child, port: message.port, info: message });
    });
  });
}

function stopChild(child: Child, signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
  if (child.process.exitCode !== null || child.process.signalCode !== null) return Promise.resolve();
  return new Promise((resolveStop) => {
    child.process.once('exit', () => resolveStop());
    child.process.kill(signal);
  });
}

function childStats(child: Child): Promise<{ unexpectedErrors: number }> {
  return new Promise((resolveStats) => {
    const onMessage = (message: { type?: string; unexpectedErrors?: number }) => {
      if (message.type !== 'stats') return;
      child.process.off('message', onMessage);
      resolveStats({ unexpectedErrors: message.unexpectedErrors ?? 0 });
    };
    child.process.on('message', onMessage);
    child.process.send({ type: 'stats' });
  });
}

// ---------------------------------------------------------------------------------------------
// Load runs: autocannon drives the connections; latencies come from its per-response timings
// (hrtime, fractional ms) into a histogram of our own, so sub-millisecond values keep their
// precision and only the responses that count (e.g. 2xx PATCHes) are measured.

interface ConnectionPlan {
  readonly requests: CannonRequest[];
  /** Whether the response just completed counts; default: any 2xx. Called after the request's onResponse. */
  readonly counts?: (status: number) => boolean;
}

interface LoadFigures {
  readonly seconds: number;
  readonly answered: number;
  readonly counted: number;
  readonly perSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly maxMs: number;
  readonly statusCodes: Record<string, number>;
  readonly errors: number;
  readonly timeouts: number;
}

async function load(url: string, connections: number, seconds: number, planFor: (connection: number) => ConnectionPlan): Promise<LoadFigures> {
  const histogram = createHistogram();
  let counted = 0;
  let answered = 0;
  let next = 0;
  const result = await autocannon({
    url,
    connections,
    duration: seconds,
    timeout: 10,
    setupClient(client) {
      const plan = planFor(next);
      next += 1;
      client.setRequests(plan.requests);
      const counts = plan.counts ?? ((status: number) => status >= 200 && status < 300);
      client.on('response', (status, _bytes, responseMs) => {
        answered += 1;
        if (!counts(status)) return;
        counted += 1;
        histogram.record(Math.max(1, Math.round(responseMs * 1000)));
      });
    },
  });
  const statusCodes = Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, stat]) => [code, stat.count]));
  return {
    seconds: result.duration,
    answered,
    counted,
    perSecond: counted / result.duration,
    p50Ms: counted === 0 ? Number.NaN : histogram.percentile(50) / 1000,
    p99Ms: counted === 0 ? Number.NaN : histogram.percentile(99) / 1000,
    maxMs: counted === 0 ? Number.NaN : histogram.max / 1000,
    statusCodes,
    errors: result.errors,
    timeouts: result.timeouts,
  };
}

const headerOf = (headers: Record<string, string | string[]>, name: string): string | undefined => {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value[0] : value;
  }
  return undefined;
};

/** Per connection of the PATCH scenario: its organisation, task and what it has sent and had acknowledged. */
interface WriterState {
  readonly organisationId: number;
  readonly token: string;
  readonly taskId: number;
  etag: string | undefined;
  /** Monotonic write counter; the PATCHed sequence is `counter % 100000`. */
  sent: number;
  lastAcked: number;
  acked: number;
  refused: Record<string, number>;
  lastWasPatch: boolean;
}

const sequenceOf = (counter: number): number => counter % 100_000;

function writerPlan(state: WriterState): ConnectionPlan {
  const path = `${API}/tasks/${state.taskId}`;
  const authorization = `Bearer ${state.token}`;
  return {
    requests: [
      {
        method: 'GET',
        path,
        headers: { authorization },
        onResponse(status, _body, _context, headers) {
          state.lastWasPatch = false;
          state.etag = status === 200 ? headerOf(headers, 'etag') : undefined;
        },
      },
      {
        method: 'PATCH',
        path,
        setupRequest(request) {
          if (state.etag === undefined) return null;
          state.sent += 1;
          return {
            ...request,
            headers: {
              authorization,
              'content-type': 'application/json',
              'if-match': state.etag,
              'idempotency-key': `bench-${state.organisationId}-${state.sent}`,
            },
            body: JSON.stringify({ sequence: sequenceOf(state.sent) }),
          };
        },
        onResponse(status) {
          state.lastWasPatch = true;
          if (status >= 200 && status < 300) {
            state.acked += 1;
            state.lastAcked = state.sent;
          } else {
            state.refused[status] = (state.refused[status] ?? 0) + 1;
          }
        },
      },
    ],
    counts: (status) => state.lastWasPatch && status >= 200 && status < 300,
  };
}

// ---------------------------------------------------------------------------------------------
// The 200-client burst over HTTP against the default limit (120 per client per 60 s window).

interface BurstAnswer {
  status: number;
  receivedAt: number;
  retryAfter: string | undefined;
  rateLimit: string | undefined;
  policy: string | undefined;
}

async function burst(port: number, tokens: readonly string[], taskIds: readonly number[], perClient: number) {
  const answers: BurstAnswer[][] = tokens.map(() => []);
  let next = 0;
  const startedAt = Date.now();
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: tokens.length,
    duration: 55,
    timeout: 20,
    maxConnectionRequests: perClient,
    setupClient(client) {
      const index = next;
      next += 1;
      const list = answers[index] as BurstAnswer[];
      client.setRequests([{
        method: 'GET',
        path: `${API}/tasks/${taskIds[index] as number}`,
        headers: { authorization: `Bearer ${tokens[index] as string}` },
        onResponse(status, _body, _context, headers) {
          list.push({
            status,
            receivedAt: Date.now(),
            retryAfter: headerOf(headers, 'retry-after'),
            rateLimit: headerOf(headers, 'ratelimit'),
            policy: headerOf(headers, 'ratelimit-policy'),
          });
        },
      }]);
    },
  });
  const finishedAt = Date.now();
  const windowMs = 60_000;
  let clientsExactly120 = 0;
  let badRetryAfter = 0;
  let badRateLimit = 0;
  let badPolicy = 0;
  const retryAfterValues: Record<string, number> = {};
  const servedCounts: Record<string, number> = {};
  const limitedCounts: Record<string, number> = {};
  for (const list of answers) {
    const served = list.filter((answer) => answer.status !== 429);
    const limited = list.filter((answer) => answer.status === 429);
    servedCounts[served.length] = (servedCounts[served.length] ?? 0) + 1;
    limitedCounts[limited.length] = (limitedCounts[limited.length] ?? 0) + 1;
    if (served.length === 120 && limited.length === list.length - 120 && list.slice(0, 120).every((answer) => answer.status !== 429)) clientsExactly120 += 1;
    // The window began between the burst's start and the client's first answer; the 429 was
    // decided between the burst's start and its arrival: Retry-After must lie in between.
    const firstAt = list[0]?.receivedAt ?? finishedAt;
    for (const answer of list) {
      if (answer.policy !== '"default";q=120;w=60') badPolicy += 1;
      if (answer.status !== 429) continue;
      const seconds = Number(answer.retryAfter);
      retryAfterValues[String(answer.retryAfter)] = (retryAfterValues[String(answer.retryAfter)] ?? 0) + 1;
      const lowest = Math.max(1, Math.ceil((startedAt + windowMs - answer.receivedAt) / 1000));
      const highest = Math.min(60, Math.ceil((firstAt + windowMs - startedAt) / 1000));
      if (!(Number.isInteger(seconds) && seconds >= lowest && seconds <= highest)) badRetryAfter += 1;
      if (answer.rateLimit !== `"default";r=0;t=${answer.retryAfter}`) badRateLimit += 1;
    }
  }
  return {
    clients: tokens.length,
    requestsPerClient: perClient,
    seconds: (finishedAt - startedAt) / 1000,
    answered: result.totalCompletedRequests,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes: Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, stat]) => [code, stat.count])),
    clientsExactly120,
    servedPerClient: servedCounts,
    limitedPerClient: limitedCounts,
    retryAfterValues,
    badRetryAfter,
    badRateLimitHeader: badRateLimit,
    badPolicyHeader: badPolicy,
    ok: clientsExactly120 === tokens.length && badRetryAfter === 0 && badRateLimit === 0 && badPolicy === 0,
  };
}

// ---------------------------------------------------------------------------------------------

const MAIN_ORG = 1;
const BURST_ORG = 900;

export function positiveInteger(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!(Number.isInteger(value) && value > 0)) throw new Error(`${name} must be a positive integer, got ${JSON.stringify(raw)}`);
  return value;
}

const round = (value: number, digits = 2): number => (Number.isFinite(value) ? Number(value.toFixed(digits)) : value);

interface Row {
  scenario: string;
  reqPerSec: number;
  p50Ms: number;
  p99Ms: number;
  ratioToCeiling: number;
  target: string;
  pass: boolean | null;
  detail: LoadFigures;
}

async function main(): Promise<void> {
  const seconds = positiveInteger('BENCH_SECONDS', 5);
  const connections = positiveInteger('BENCH_CONNECTIONS', 32);
  const warmup = Number(process.env['BENCH_WARMUP'] ?? 1);
  const started = performance.now();
  const dir = mkdtempSync(join(tmpdir(), 'wta-bench-'));
  const path = join(dir, 'bench.sqlite');
  const children: Child[] = [];
  const log = (line: string) => process.stdout.write(`${line}\n`);
  const loadBefore = loadavg().map((value) => round(value));
  log(`bench: ${seconds} s per scenario (+${warmup} s warm-up), ${connections} connections, ${cpus().length} CPUs, node ${process.version}, load average ${loadBefore.join(' ')}`);
  if ((loadBefore[0] ?? 0) > cpus().length / 2) log('note: the machine is already busy; every figure (the ceiling included) is lower and noisier than on an idle machine');

  try {
    // One file: the measured organisation (50 agents x 20 tasks, agent 0 moved up to 50 offered
    // tasks, plus 64 more clients of agent 0 for the claim race), one organisation per PATCH
    // connection of the same shape, and 200 one-task agents for the burst.
    const setup = new Database(path);
    const main = generateOrganisation(setup, { organisationId: MAIN_ORG, agents: 50, tasksPerAgent: 20, idBase: 1 });
    const agent0 = 2; // idBase + 1
    concentrateOffers(setup, MAIN_ORG, agent0, 50);
    const raceTokens = addResourceClients(setup, { organisationId: MAIN_ORG, resourceId: agent0, sponsorId: 1, count: 64, idBase: 5_000 });
    const writers: GeneratedOrganisation[] = [];
    for (let index = 0; index < connections; index += 1) {
      writers.push(generateOrganisation(setup, { organisationId: 10 + index, agents: 50, tasksPerAgent: 20, idBase: (index + 1) * 10_000 }));
    }
    const burstOrg = generateOrganisation(setup, { organisationId: BURST_ORG, agents: 200, tasksPerAgent: 1, idBase: 9_000_000 });
    const owned = ownedTasks(setup, MAIN_ORG);
    const taskCount = (setup.prepare('SELECT count(*) AS n FROM tasks').get() as { n: number }).n;
    setup.close();
    log(`data: ${taskCount} tasks in ${connections + 2} organisations, generated in ${Math.round(performance.now() - started)} ms (${path})`);

    const ceiling = await startChild(['ceiling']);
    children.push(ceiling);
    let service = await startChild(['service', path, '1000000000']);
    children.push(service);
    const durabilitySettings = { synchronous: service.info.synchronous, journalMode: service.info.journalMode };
    log(`service: synchronous=${durabilitySettings.synchronous} (2 = FULL), journal_mode=${durabilitySettings.journalMode}`);

    const measured = async (name: string, url: string, planFor: (connection: number) => ConnectionPlan): Promise<LoadFigures> => {
      if (warmup > 0) await load(url, connections, warmup, planFor);
      const figures = await load(url, connections, seconds, planFor);
      log(`  ${name}: ${round(figures.perSecond, 0)} counted/s, p50 ${round(figures.p50Ms)} ms, p99 ${round(figures.p99Ms)} ms, statuses ${JSON.stringify(figures.statusCodes)}${figures.errors > 0 ? `, ${figures.errors} errors` : ''}`);
      return figures;
    };

    const ceilingUrl = `http://127.0.0.1:${ceiling.port}`;
    const serviceUrl = () => `http://127.0.0.1:${service.port}`;
    const ceilingPlan = (): ConnectionPlan => ({ requests: [{ method: 'GET', path: '/' }] });
    const ceilingBefore = await measured('ceiling', ceilingUrl, ceilingPlan);

    // GET /tasks/{id}: connection i reads a task of agent i % 50 as that agent.
    const getFigures = await measured('GET /tasks/{id}', serviceUrl(), (connection) => {
      const agent = connection % 50;
      const tasks = owned.get(agent0 + agent) ?? [];
      const taskId = tasks[Math.floor(connection / 50) % tasks.length] as number;
      return { requests: [{ method: 'GET', path: `${API}/tasks/${taskId}`, headers: { authorization: `Bearer ${main.tokens[agent] as string}` } }] };
    });

    // GET /tasks/available: agent 0, whose list is checked once before measuring.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const offered = await httpCall(agent, service.port, 'GET', `${API}/tasks/available`, { authorization: `Bearer ${main.tokens[0] as string}` });
    agent.destroy();
    const offeredIds = (JSON.parse(offered.body) as { id: number }[]).map((task) => task.id);
    log(`GET /tasks/available as agent 0: ${offered.status}, ${offeredIds.length} offered tasks (${offered.body.length} bytes)`);
    const availableFigures = await measured('GET /tasks/available', serviceUrl(), () => ({
      requests: [{ method: 'GET', path: `${API}/tasks/available`, headers: { authorization: `Bearer ${main.tokens[0] as string}` } }],
    }));

    // PATCH /tasks/{id}: connection i in organisation 10 + i, alternating GET (ETag) and PATCH.
    const states: WriterState[] = writers.map((organisation) => ({
      organisationId: organisation.organisationId,
      token: organisation.tokens[0] as string,
      taskId: (organisation.taskIds[0] as number[])[0] as number,
      etag: undefined,
      sent: 0,
      lastAcked: 0,
      acked: 0,
      refused: {},
      lastWasPatch: false,
    }));
    const patchFigures = await measured('PATCH /tasks/{id}', serviceUrl(), (connection) => writerPlan(states[connection] as WriterState));
    const unexpectedErrors = (await childStats(service)).unexpectedErrors;

    // The ceiling again (the service idle): ratios use the mean of both runs, so drift in the
    // machine's load during the run shows instead of skewing one side.
    const ceilingAfter = await measured('ceiling (again)', ceilingUrl, ceilingPlan);
    await stopChild(ceiling);

    // Durability: kill the service without warning right after the run, then read the file back.
    await stopChild(service, 'SIGKILL');
    const check = new Database(path);
    const version = check.prepare('SELECT workspace_version AS v FROM organisations WHERE id = ?');
    const sequence = check.prepare('SELECT sequence AS s FROM tasks WHERE id = ?');
    let acknowledged = 0;
    let lost = 0;
    let appliedUnacknowledged = 0;
    let wrongFinalValue = 0;
    for (const state of states) {
      const bumps = (version.get(state.organisationId) as { v: number }).v - 1;
      acknowledged += state.acked;
      lost += Math.max(0, state.acked - bumps);
      appliedUnacknowledged += Math.max(0, bumps - state.acked);
      const stored = (sequence.get(state.taskId) as { s: number }).s;
      const allowed = bumps > state.acked ? [state.lastAcked, state.sent] : [state.lastAcked];
      if (state.acked > 0 && !allowed.map(sequenceOf).includes(stored)) wrongFinalValue += 1;
    }
    check.close();
    const refused: Record<string, number> = {};
    for (const state of states) for (const [status, count] of Object.entries(state.refused)) refused[status] = (refused[status] ?? 0) + count;
    const durability = {
      method: 'SIGKILL of the service right after the PATCH runs (warm-up included), then the file reopened',
      ...durabilitySettings,
      acknowledgedPatches: acknowledged,
      versionBumpsFound: acknowledged - lost + appliedUnacknowledged,
      lostAcknowledged: lost,
      appliedButUnacknowledged: appliedUnacknowledged,
      wrongFinalValue,
      refusedPatches: refused,
      unexpectedServerErrors: unexpectedErrors,
      ok: lost === 0 && wrongFinalValue === 0 && durabilitySettings.synchronous === 2,
    };
    log(`durability: ${acknowledged} acknowledged PATCHes, ${lost} lost after SIGKILL, ${appliedUnacknowledged} applied but unacknowledged (in flight at the stop), final values wrong: ${wrongFinalValue}`);

    // Two references for the PATCH row, without targets: the same load against the service with
    // fsync off, and against node:http doing no work (with a GET body of the service's size).
    service = await startChild(['service', path, '1000000000', 'off']);
    children.push(service);
    const sizing = new Agent({ keepAlive: true, maxSockets: 1 });
    const firstWriter = states[0] as WriterState;
    const taskAnswer = await httpCall(sizing, service.port, 'GET', `${API}/tasks/${firstWriter.taskId}`, { authorization: `Bearer ${firstWriter.token}` });
    sizing.destroy();
    const notDurableSetting = service.info.synchronous === 0 ? 'OFF' : String(service.info.synchronous);
    const notDurableFigures = await measured(`reference: PATCH with synchronous=${notDurableSetting}`, serviceUrl(), (connection) => writerPlan(states[connection] as WriterState));
    await stopChild(service);
    const pairs = await startChild(['pairs', String(Buffer.byteLength(taskAnswer.body))]);
    children.push(pairs);
    const noWorkFigures = await measured('reference: GET + PATCH on node:http doing no work', `http://127.0.0.1:${pairs.port}`, (connection) =>
      writerPlan({ ...(states[connection] as WriterState), etag: undefined, refused: {}, lastWasPatch: false }));
    await stopChild(pairs);

    // Claim race: a fresh service process on the same file (recovery after the kill).
    service = await startChild(['service', path, '1000000000']);
    children.push(service);
    const race = await claimRace({ port: service.port, tokens: raceTokens, taskIds: offeredIds });
    await stopChild(service);
    const raceCheck = new Database(path, { readonly: true });
    const claimJudgement = judgeClaimRace(race, liveLeases(raceCheck, offeredIds, Date.now()));
    raceCheck.close();
    const claimRaceResult = { connections: raceTokens.length, requests: race.requests, ms: Math.round(race.ms), ...claimJudgement };
    log(`claim race: ${raceTokens.length} connections, ${offeredIds.length} tasks, ${race.requests} requests in ${Math.round(race.ms)} ms; ${claimJudgement.wins} wins, tasks with exactly one live lease ${claimJudgement.tasksWithExactlyOneLease}/${claimJudgement.tasks}`);

    // Burst: the service with its default limit (120 per 60 s).
    service = await startChild(['service', path, 'default']);
    children.push(service);
    const burstResult = await burst(service.port, burstOrg.tokens, burstOrg.taskIds.map((ids) => ids[0] as number), 130);
    await stopChild(service);
    log(`burst: ${burstResult.clients} clients x ${burstResult.requestsPerClient} in ${burstResult.seconds} s; exactly 120 served: ${burstResult.clientsExactly120}/${burstResult.clients}; Retry-After values ${JSON.stringify(burstResult.retryAfterValues)}; bad Retry-After ${burstResult.badRetryAfter}`);

    // Limiter memory: 100,000 distinct clients, driven directly.
    const heapBefore = process.memoryUsage().heapUsed;
    const limiterStart = performance.now();
    const stream = limiterStream(100_000, 10);
    const spike = limiterBurst(100_000, 10);
    const limiter = {
      stream: { ...stream, pattern: 'one new client every 10 ms (6,000 per window), returning clients mixed in' },
      burst: { ...spike, pattern: '100,000 clients at one instant, then 10 new clients one window later' },
      ms: Math.round(performance.now() - limiterStart),
      heapDeltaMB: round((process.memoryUsage().heapUsed - heapBefore) / 1e6, 1),
      ok: stream.largest <= stream.bound && stream.final <= stream.bound && spike.final <= spike.bound,
    };
    log(`limiter: stream largest ${stream.largest} (bound ${stream.bound}), burst ${spike.duringBurst} then ${spike.final} (bound ${spike.bound})`);

    // Report.
    const ceilingRate = (ceilingBefore.perSecond + ceilingAfter.perSecond) / 2;
    const row = (scenario: string, figures: LoadFigures, target: string, pass: boolean | null): Row => ({
      scenario,
      reqPerSec: round(figures.perSecond, 0),
      p50Ms: round(figures.p50Ms),
      p99Ms: round(figures.p99Ms),
      ratioToCeiling: round(figures.perSecond / ceilingRate, 3),
      target,
      pass,
      detail: figures,
    });
    const p99Ok = (figures: LoadFigures) => figures.p99Ms < 10;
    const rows: Row[] = [
      row('ceiling, raw node:http (first)', ceilingBefore, '-', null),
      row('ceiling, raw node:http (last)', ceilingAfter, '-', null),
      row('GET /tasks/{id}', getFigures, '>= 0.40, p99 < 10 ms', getFigures.perSecond / ceilingRate >= 0.4 && p99Ok(getFigures)),
      row(`GET /tasks/available (${offeredIds.length})`, availableFigures, 'p99 < 10 ms', offeredIds.length === 50 && p99Ok(availableFigures)),
      row('PATCH /tasks/{id} (2xx only)', patchFigures, '>= 0.20, p99 < 10 ms, durable', patchFigures.perSecond / ceilingRate >= 0.2 && p99Ok(patchFigures) && durability.ok),
      row(`reference: PATCH, synchronous=${notDurableSetting}`, notDurableFigures, '- (not durable)', null),
      row('reference: GET+PATCH, no-work server', noWorkFigures, '- (upper bound)', null),
    ];
    const behaviour = [
      { scenario: `burst: ${burstResult.clients} clients x ${burstResult.requestsPerClient}`, result: `${burstResult.clientsExactly120}/${burstResult.clients} clients got exactly 120 (rest 429), Retry-After ${Object.keys(burstResult.retryAfterValues).join('/')} s, ${burstResult.badRetryAfter} wrong`, pass: burstResult.ok },
      { scenario: `claim race: ${raceTokens.length} connections x ${offeredIds.length} tasks`, result: `${claimJudgement.tasksWithExactlyOneLease}/${claimJudgement.tasks} tasks with exactly one live lease, ${claimJudgement.wins} wins, ${claimJudgement.winsWithLeaseRow} with their lease row`, pass: claimJudgement.ok },
      { scenario: 'limiter: 100,000 distinct clients', result: `largest ${stream.largest} (bound ${stream.bound}); after a 100,000 burst ${spike.final} (bound ${spike.bound})`, pass: limiter.ok },
    ];

    console.table(rows.map(({ detail: _detail, pass, ...rest }) => ({ ...rest, result: pass === null ? '' : pass ? 'pass' : 'MISS' })));
    console.table(behaviour.map(({ pass, ...rest }) => ({ ...rest, pass: pass ? 'pass' : 'FAIL' })));
    const missed = [...rows.filter((entry) => entry.pass === false).map((entry) => entry.scenario), ...behaviour.filter((entry) => !entry.pass).map((entry) => entry.scenario)];
    log(missed.length === 0 ? 'all targets met' : `missed: ${missed.join('; ')}`);

    const report = {
      generatedAt: new Date().toISOString(),
      machine: {
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model ?? 'unknown',
        totalMemGB: round(totalmem() / 2 ** 30, 1),
        platform: platform(),
        release: release(),
        arch: arch(),
        node: process.version,
        loadAverageBefore: loadBefore,
        loadAverageAfter: loadavg().map((value) => round(value)),
      },
      settings: { secondsPerScenario: seconds, warmupSeconds: warmup, connections, tasks: taskCount, pipelining: 1, ceilingReqPerSec: round(ceilingRate, 0) },
      rows,
      durability,
      behaviour: { burst: burstResult, claimRace: claimRaceResult, limiter },
      missed,
      totalSeconds: round((performance.now() - started) / 1000, 1),
    };
    const results = new URL('./results/', import.meta.url);
    mkdirSync(results, { recursive: true });
    writeFileSync(new URL('latest.json', results), `${JSON.stringify(report, null, 2)}\n`);
    log(`wrote bench/results/latest.json (${report.totalSeconds} s in all)`);
  } finally {
    await Promise.all(children.map((child) => stopChild(child, 'SIGKILL')));
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === THIS_FILE) {
  const mode = process.argv[2];
  if (mode === 'ceiling') serveCeiling();
  else if (mode === 'pairs') servePairs(process.argv[3] as string);
  else if (mode === 'service') serveService(process.argv[3] as string, process.argv[4] as string, process.argv[5]);
  else await main();
}
