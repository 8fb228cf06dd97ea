import t from 'tap';
import Database from 'better-sqlite3';
import { createService } from '../../lib/service.js';
import type { ServiceResponse } from '../../lib/http/types.js';
import { manualClock } from '../../lib/time/clock.js';
import { generateOrganisation } from '../../bench/generate.js';

/**
 * Contract 10 under load (the short version of the bench's burst): 200 clients fire 130 requests
 * each, interleaved, through handle() with a manual clock that moves 250 ms per round. Each
 * client gets exactly its first 120 served (errors count) and the rest 429 with Retry-After =
 * whole seconds to its window's end; the RateLimit fields agree. The next window starts afresh.
 */

const CLIENTS = 200;
const PER_CLIENT = 130;
const LIMIT = 120;
const STEP_MS = 250;
const WINDOW_MS = 60_000;
const START = Date.parse('2026-11-16T10:00:00.000Z');

interface Sent {
  client: number;
  round: number;
  now: number;
  path: string;
  response: ServiceResponse | Promise<ServiceResponse>;
}

t.test('BURST: 200 clients x 130 requests at once get exactly 120 served each per window, the rest 429 with a correct Retry-After', async (t) => {
  const db = new Database(':memory:');
  const org = generateOrganisation(db, { organisationId: 1, agents: CLIENTS, tasksPerAgent: 1, idBase: 1 });
  const elsewhere = generateOrganisation(db, { organisationId: 2, agents: 1, tasksPerAgent: 1, idBase: 100_000 });
  const foreignTask = (elsewhere.taskIds[0] as number[])[0] as number;
  const clock = manualClock(START);
  const logged: unknown[] = [];
  const service = createService({ db, clock, logger: { error: (entry) => logged.push(entry) } });
  t.teardown(() => {
    service.close();
    db.close();
  });

  const pathFor = (client: number, round: number): string => {
    // Every 13th request is a 404 (another organisation's task): errors use the quota too.
    if (round % 13 === 5) return `/api/v1/tasks/${foreignTask}`;
    if (round % 5 === 0) return `/api/v1/tasks/${(org.taskIds[client] as number[])[0] as number}`;
    return '/api/v1/identity';
  };

  async function burst(windowStart: number, label: string): Promise<void> {
    const sent: Sent[] = [];
    // All 26,000 requests go out before any answer is awaited, in a different client order each round.
    for (let round = 0; round < PER_CLIENT; round += 1) {
      clock.set(windowStart + round * STEP_MS);
      for (let k = 0; k < CLIENTS; k += 1) {
        const client = (k * 7 + round) % CLIENTS;
        const path = pathFor(client, round);
        sent.push({
          client, round, now: clock.now(), path,
          response: service.handle({ method: 'GET', url: path, headers: { authorization: `Bearer ${org.tokens[client] as string}` } }),
        });
      }
    }
    const answers = await Promise.all(sent.map((request) => request.response));

    const served = new Array<number>(CLIENTS).fill(0);
    const limited = new Array<number>(CLIENTS).fill(0);
    const retryAfters: Record<string, number> = {};
    const problems: string[] = [];
    answers.forEach((response, index) => {
      const request = sent[index] as Sent;
      const secondsLeft = Math.max(1, Math.ceil((windowStart + WINDOW_MS - request.now) / 1000));
      const where = `${label} client ${request.client} request ${request.round + 1}`;
      if (response.headers['ratelimit-policy'] !== '"default";q=120;w=60') problems.push(`${where}: policy ${response.headers['ratelimit-policy']}`);
      if (request.round < LIMIT) {
        served[request.client] = (served[request.client] as number) + 1;
        const expected = request.path.startsWith('/api/v1/tasks/') && request.round % 13 === 5 ? 404 : 200;
        if (response.status !== expected) problems.push(`${where}: ${response.status}, expected ${expected}`);
        const rate = `"default";r=${LIMIT - 1 - request.round};t=${secondsLeft}`;
        if (response.headers['ratelimit'] !== rate) problems.push(`${where}: RateLimit ${response.headers['ratelimit']}, expected ${rate}`);
        if (response.headers['retry-after'] !== undefined) problems.push(`${where}: Retry-After on a served request`);
      } else {
        limited[request.client] = (limited[request.client] as number) + 1;
        if (response.status !== 429) problems.push(`${where}: ${response.status}, expected 429`);
        const body = JSON.parse(response.body ?? '{}') as { code?: string };
        if (body.code !== 'rate_limited') problems.push(`${where}: code ${body.code}`);
        if (response.headers['retry-after'] !== String(secondsLeft)) problems.push(`${where}: Retry-After ${response.headers['retry-after']}, expected ${secondsLeft}`);
        if (response.headers['ratelimit'] !== `"default";r=0;t=${secondsLeft}`) problems.push(`${where}: RateLimit ${response.headers['ratelimit']} on a 429`);
        retryAfters[String(response.headers['retry-after'])] = (retryAfters[String(response.headers['retry-after'])] ?? 0) + 1;
      }
    });
    t.strictSame(problems.slice(0, 20), [], `${label}: every answer as contract 10 says (${problems.length} problems)`);
    t.ok(served.every((count) => count === LIMIT), `${label}: every client got exactly ${LIMIT} served`);
    t.ok(limited.every((count) => count === PER_CLIENT - LIMIT), `${label}: and exactly ${PER_CLIENT - LIMIT} refused`);
    // Rounds 120-129 are 30.0 to 32.25 s into the window: 30, 29 and 28 seconds remain (rounded up).
    t.strictSame(retryAfters, { 28: 2 * CLIENTS, 29: 4 * CLIENTS, 30: 4 * CLIENTS }, `${label}: Retry-After values`);
  }

  const started = Date.now();
  await burst(START, 'window 1');
  // Exactly one window after every client's first request: a new window for everyone.
  await burst(START + WINDOW_MS, 'window 2');
  t.strictSame(logged, [], 'no unexpected error was logged');
  t.comment(`2 x ${CLIENTS * PER_CLIENT} requests through handle() in ${Date.now() - started} ms`);
});
