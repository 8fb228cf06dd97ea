import t from 'tap';
import fc from 'fast-check';
import { anyRequestArb, businessRequestArb, unauthenticatedRequestArb, type RequestGen } from './arbitraries.js';
import type { TapTest } from '../helpers/api.js';
import { describe, exchange, responseProblems, type Exchange } from './exchange.js';
import type { ServiceRequest, ServiceResponse } from '../../lib/http/types.js';
import { TOKENS } from '../helpers/fixture.js';
import { hostileWorld, type World } from './world.js';

/**
 * Hostile input through the real handle() (contract 1): random and malformed methods, paths,
 * queries, headers and bodies, for every operation, from valid and invalid clients, against a
 * fresh in-memory service over the shared world (plus assistance requests made through the API,
 * so every kind of id has a real target). Whatever is sent, handle() answers: never a throw or a
 * rejection, never a 5xx (no linked sources are configured, so not even 503), always X-Trace-Id,
 * and every error is problem+json with exactly type, title, status, code and traceId. A request
 * that is refused, or that carries no valid credential, leaves every table as it was.
 *
 * The seed is fixed, so a failure reproduces; fast-check prints the seed and the shrunk request.
 */

const SEED = 20261116;
fc.configureGlobal({ seed: SEED, numRuns: 400 });

/** Outcome counts, to show in the log what the runs reached. */
function tally(counts: Map<string, number>, outcome: string): void {
  counts.set(outcome, (counts.get(outcome) ?? 0) + 1);
}
const summary = (counts: Map<string, number>) =>
  [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([outcome, count]) => `${outcome}=${count}`).join(' ');

async function run(
  t: TapTest,
  arbitrary: fc.Arbitrary<RequestGen>,
  numRuns: number,
  check: (result: Exchange, world: World) => void,
): Promise<Map<string, number>> {
  const world = await hostileWorld();
  const counts = new Map<string, number>();
  await fc.assert(
    fc.asyncProperty(arbitrary, async (gen) => {
      const result = await exchange(world, gen);
      tally(counts, result.outcome);
      check(result, world);
    }),
    { numRuns },
  );
  t.strictSame(world.h.errors, [], 'no unexpected error was logged');
  t.comment(`outcomes over ${numRuns} runs (seed ${SEED}): ${summary(counts)}`);
  world.h.service.close();
  return counts;
}

/** The database must be as it was: a refusal writes nothing, not even an idempotency receipt. */
function unchanged(result: Exchange, why: string): void {
  if (result.changed.length > 0) {
    throw new Error(`${why}, yet ${result.changed.join(', ')} changed: ${describe(result.request)} -> ${result.response.status} ${result.response.body ?? ''}`);
  }
}

/** A GET is a read: it must not write, whatever it answers. */
function readsDoNotWrite(result: Exchange): void {
  if (result.request.method === 'GET') unchanged(result, 'a GET');
}

t.test('HOSTILE: random and malformed requests to every operation never throw, never get a 5xx, and every error is a five-member problem+json with X-Trace-Id', async (t) => {
  const counts = await run(t, anyRequestArb, 1000, (result) => {
    if (result.response.status >= 400) unchanged(result, `a ${result.response.status} ${result.outcome}`);
    readsDoNotWrite(result);
  });
  t.pass('every response kept the rules');
  // The generator must reach far beyond authentication, or the property says little.
  for (const reached of ['401', 'validation_failed', 'stale_update', 'route_not_found', 'method_not_allowed', 'request_too_large', 'unsupported_media_type']) {
    const code = reached === '401' ? 'authentication_failed' : reached;
    t.ok((counts.get(code) ?? 0) > 0, `the runs reached ${code}`);
  }
  t.ok([...counts.keys()].some((outcome) => /^2\d\d$/.test(outcome)), 'some runs succeeded');
});

t.test('HOSTILE: requests without a valid credential never change the database and are refused by authentication or an earlier step', async (t) => {
  const BEFORE_AUTHENTICATION = new Set(['route_not_found', 'method_not_allowed', 'request_too_large']);
  await run(t, unauthenticatedRequestArb, 600, (result) => {
    unchanged(result, 'no valid credential was sent');
    const path = result.request.url.split('?')[0];
    const anonymous = path === '/api/v1/openapi.json' && (result.outcome === '200' || result.outcome === 'validation_failed');
    if (!(result.outcome === 'authentication_failed' || BEFORE_AUTHENTICATION.has(result.outcome) || anonymous)) {
      throw new Error(`no valid credential, yet ${result.outcome}: ${describe(result.request)}`);
    }
  });
  t.pass('nothing changed and nothing got past authentication');
});

t.test('HOSTILE: well-formed requests with bodies of the right shape are answered by the business rules, and a 4xx changes nothing', async (t) => {
  const counts = await run(t, businessRequestArb, 900, (result) => {
    if (result.response.status >= 400) unchanged(result, `a ${result.response.status} ${result.outcome}`);
    readsDoNotWrite(result);
  });
  t.pass('every refusal left the database as it was');
  const writes = [...counts].filter(([outcome]) => /^20[014]$/.test(outcome)).reduce((sum, [, count]) => sum + count, 0);
  t.ok(writes > 0, `some requests succeeded (${writes})`);
  t.ok([...counts.keys()].some((outcome) => ['invalid_field', 'task_claimed', 'claim_expired', 'task_completed', 'incoming_state_conflict', 'idempotency_conflict', 'dependency_conflict'].includes(outcome)), 'the runs reached business rules (409/422)');
});

t.test('HOSTILE: values outside the declared types, as an untyped (JavaScript) host may send them, never make handle() throw, and only a missing request object is a 500', async (t) => {
  const world = await hostileWorld();
  const ada = `Bearer ${TOKENS.ada}`;
  const etag = (await world.h.call('GET', '/api/v1/tasks/1', { token: TOKENS.ada })).headers['etag'] as string;
  const note = { 'content-type': 'application/json', 'if-match': etag };
  const cases: [string, unknown, number][] = [
    // A null header is an absent one; numbers are read as their text and fail their parsers.
    ['a null header value', { method: 'GET', url: '/api/v1/identity', headers: { authorization: ada, 'if-match': null } }, 200],
    ['a null Authorization', { method: 'GET', url: '/api/v1/identity', headers: { authorization: null } }, 401],
    ['a numeric header value', { method: 'GET', url: '/api/v1/identity', headers: { authorization: ada, 'content-length': 0 } }, 200],
    ['numbers in a header list', { method: 'GET', url: '/api/v1/identity', headers: { authorization: ada, 'x-extra': [1, null] } }, 200],
    ['a numeric If-Match', { method: 'POST', url: '/api/v1/tasks/1/notes', headers: { authorization: ada, ...note, 'if-match': 1 }, body: '{"text":"x"}' }, 412],
    ['an object as Authorization', { method: 'GET', url: '/api/v1/identity', headers: { authorization: { bearer: TOKENS.ada } } }, 401],
    ['headers null', { method: 'GET', url: '/api/v1/identity', headers: null }, 401],
    ['no headers member', { method: 'GET', url: '/api/v1/identity' }, 401],
    ['method undefined', { url: '/api/v1/identity', headers: { authorization: ada } }, 405],
    ['a numeric method', { method: 7, url: '/api/v1/identity', headers: { authorization: ada } }, 405],
    ['url undefined', { method: 'GET', headers: { authorization: ada } }, 404],
    ['a numeric url', { method: 'GET', url: 1, headers: { authorization: ada } }, 404],
    ['a numeric body', { method: 'POST', url: '/api/v1/tasks/1/notes', headers: { authorization: ada, ...note }, body: 5 }, 400],
    ['an object body', { method: 'POST', url: '/api/v1/tasks/1/notes', headers: { authorization: ada, ...note }, body: { text: 'x' } }, 400],
  ];
  const before = world.h.db.prepare('SELECT count(*) AS n FROM notes').get() as { n: number };
  for (const [what, request, status] of cases) {
    let response: ServiceResponse | undefined;
    try {
      response = await world.h.service.handle(request as ServiceRequest);
    } catch (error) {
      t.fail(`${what}: handle() threw ${String(error)}`);
      continue;
    }
    t.strictSame(responseProblems(response), [], `${what}: a well-formed answer`);
    t.equal(response.status, status, `${what}: ${status}`);
  }
  t.same(world.h.db.prepare('SELECT count(*) AS n FROM notes').get(), before, 'no note was written');

  // No request object at all is the host's bug: still an answer (a bare 500), never a throw.
  for (const request of [null, undefined, 42, 'GET /api/v1/identity']) {
    let response: ServiceResponse | undefined;
    try {
      response = await world.h.service.handle(request as unknown as ServiceRequest);
    } catch (error) {
      t.fail(`handle(${String(request)}) threw ${String(error)}`);
      continue;
    }
    t.ok(response.status === 500 || response.status === 404, `handle(${JSON.stringify(request)}): ${response.status}`);
    t.equal(response.headers['content-type'], 'application/problem+json', `handle(${JSON.stringify(request)}): problem+json`);
    t.match(response.headers['x-trace-id'], /^[0-9a-f]{32}$/, `handle(${JSON.stringify(request)}): X-Trace-Id`);
  }
  world.h.service.close();
});
