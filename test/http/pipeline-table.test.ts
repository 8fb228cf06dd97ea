import t from 'tap';
import Database from 'better-sqlite3';
import { FixedWindowRateLimiter } from '../../lib/auth/rate-limit.js';
import { ServiceError } from '../../lib/domain/errors.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { OPERATION_IDS, OPERATIONS, type ClientOperationId } from '../../lib/http/operations.js';
import { createPipeline, jsonResponse, type OperationContext, type OperationHandler } from '../../lib/http/pipeline.js';
import { Router } from '../../lib/http/router.js';
import type { ServiceResponse } from '../../lib/http/types.js';
import { clientStatements } from '../../lib/store/clients.js';
import { groupCommit } from '../../lib/store/group-commit.js';
import { snapshotStatements } from '../../lib/store/snapshots.js';
import { manualClock } from '../../lib/time/clock.js';
import { baseFixture, TEST_NOW, TOKENS } from '../helpers/fixture.js';
import { expectProblem, TRACE_ID } from '../helpers/expect-problem.js';

// The pipeline over the full operation table with stub handlers that only read: the generic steps
// (1-6) for every operation, apart from any domain behaviour (test/api drives the real handlers).

const db = new Database(':memory:');
const clock = manualClock(TEST_NOW);
loadFixture(db, baseFixture(), { now: clock.now() });
const clients = clientStatements(db);

function pipeline(handlerFor: (operationId: string) => OperationHandler) {
  const errors: Record<string, unknown>[] = [];
  const handlers = Object.fromEntries(OPERATION_IDS.filter((id) => id !== 'getOpenApi').map((id) => [id, handlerFor(id)])) as Record<ClientOperationId, OperationHandler>;
  const handle = createPipeline({
    router: new Router(OPERATIONS),
    clients,
    snapshots: snapshotStatements(db),
    batches: groupCommit(db),
    limiter: new FixedWindowRateLimiter(10_000),
    clock,
    logger: { error: (entry) => errors.push(entry) },
    handlers,
    anonymousHandlers: { getOpenApi: () => jsonResponse(200, {}) },
    targetChecks: {},
  });
  return { handle: async (request: Parameters<typeof handle>[0]): Promise<ServiceResponse> => handle(request), errors };
}

const auth = (token: string) => ({ authorization: `Bearer ${token}` });
const urlOf = (path: string) => `/api/v1${path.replace('{id}', '1')}`;

t.test('PIPELINE: identity-only client gets 403 permission_denied on every operation of the full table except GET /identity', async (t) => {
  const called: string[] = [];
  const { handle } = pipeline((operationId) => () => {
    called.push(operationId);
    return jsonResponse(200, {});
  });
  for (const operation of OPERATIONS) {
    if (operation.caller === 'anonymous') continue;
    const response = await handle({ method: operation.method, url: urlOf(operation.path), headers: auth(TOKENS.identityOnly) });
    if (operation.operationId === 'getIdentity') t.equal(response.status, 200, 'GET /identity is served');
    else expectProblem(t, response, 'permission_denied', `${operation.method} ${operation.path}`);
  }
  t.same(called, ['getIdentity'], 'no other handler ran');
});

t.test('PIPELINE: a client lacking an operation scope gets 403 permission_denied before its handler', async (t) => {
  const called: string[] = [];
  const { handle } = pipeline((operationId) => () => {
    called.push(operationId);
    return jsonResponse(200, {});
  });
  // The read-only client has tasks:read only.
  for (const operation of OPERATIONS) {
    if (operation.scope === null || operation.scope === 'tasks:read') continue;
    const response = await handle({ method: operation.method, url: urlOf(operation.path), headers: auth(TOKENS.readOnly) });
    expectProblem(t, response, 'permission_denied', `${operation.method} ${operation.path} needs ${operation.scope}`);
  }
  t.same(called, []);
});

t.test('PIPELINE: includeAccepted on /incoming is only true or false, once', async (t) => {
  const seen: (string | undefined)[] = [];
  const { handle } = pipeline(() => (context: OperationContext) => {
    seen.push(context.query.get('includeAccepted'));
    return jsonResponse(200, []);
  });
  for (const value of ['true', 'false']) {
    t.equal((await handle({ method: 'GET', url: `/api/v1/incoming?includeAccepted=${value}`, headers: auth(TOKENS.ada) })).status, 200, value);
  }
  t.equal((await handle({ method: 'GET', url: '/api/v1/incoming', headers: auth(TOKENS.ada) })).status, 200, 'absent');
  t.same(seen, ['true', 'false', undefined]);
  for (const query of ['includeAccepted=TRUE', 'includeAccepted=1', 'includeAccepted=', 'includeAccepted', 'includeAccepted=true&includeAccepted=true', 'includeaccepted=true', 'includeAccepted=true&x=1']) {
    expectProblem(t, await handle({ method: 'GET', url: `/api/v1/incoming?${query}`, headers: auth(TOKENS.ada) }), 'validation_failed', query);
  }
});

t.test('PIPELINE: the handler gets the parsed id and body; a body operation checks its media type after scope', async (t) => {
  const contexts: OperationContext[] = [];
  const { handle } = pipeline(() => (context: OperationContext) => {
    contexts.push(context);
    return jsonResponse(200, {});
  });
  const json = { ...auth(TOKENS.ada), 'content-type': 'application/json' };
  t.equal((await handle({ method: 'POST', url: '/api/v1/tasks/42/notes', headers: json, body: '{"text":"hi"}' })).status, 200);
  t.equal(contexts[0]?.id, 42);
  t.same(contexts[0]?.body, { value: { text: 'hi' }, canonical: '{"text":"hi"}' });
  t.equal(contexts[0]?.operation.operationId, 'appendNote');
  const wrongType = await handle({ method: 'POST', url: '/api/v1/tasks/42/notes', headers: { ...auth(TOKENS.ada), 'content-type': 'text/plain' }, body: '{"text":"hi"}' });
  expectProblem(t, wrongType, 'unsupported_media_type', 'text/plain');
  t.equal(wrongType.headers['accept-encoding'], undefined, 'a wrong media type names no coding');
  const gzip = await handle({ method: 'POST', url: '/api/v1/tasks/42/notes', headers: { ...json, 'content-encoding': 'gzip' }, body: '{"text":"hi"}' });
  expectProblem(t, gzip, 'unsupported_media_type', 'Content-Encoding: gzip');
  t.equal(gzip.headers['accept-encoding'], 'identity', 'a content coding is answered with the one coding taken (RFC 9110 15.5.16)');
  expectProblem(t, await handle({ method: 'POST', url: '/api/v1/tasks/42/notes', headers: { ...auth(TOKENS.readOnly), 'content-type': 'text/plain' }, body: 'x' }),
    'permission_denied', 'scope before media type');
  expectProblem(t, await handle({ method: 'POST', url: '/api/v1/tasks/0/notes', headers: { ...auth(TOKENS.ada), 'content-type': 'text/plain' }, body: 'x' }),
    'validation_failed', 'path id before media type');
  t.equal(contexts.length, 1, 'refused requests never reach the handler');
});

t.test('PIPELINE: an asynchronous handler is finished like a synchronous one, and its rejection is a sanitised 500', async (t) => {
  const { handle, errors } = pipeline((operationId) => async () => {
    if (operationId === 'getIdentity') throw new Error('secret detail');
    if (operationId === 'listWaitingTasks') throw new ServiceError('temporarily_unavailable', 'internal reason');
    return jsonResponse(200, []);
  });
  const ok = await handle({ method: 'GET', url: '/api/v1/tasks/available', headers: auth(TOKENS.ada) });
  t.equal(ok.status, 200);
  t.match(ok.headers['x-trace-id'], TRACE_ID);
  t.equal(ok.headers['ratelimit-policy'], '"default";q=10000;w=60');
  const failed = await handle({ method: 'GET', url: '/api/v1/identity', headers: auth(TOKENS.ada) });
  expectProblem(t, failed, 'internal_error');
  t.notMatch(failed.body, /secret/);
  t.ok(failed.headers['ratelimit'], 'a 500 of an authenticated request carries RateLimit');
  t.equal(errors.length, 1);
  t.equal(errors[0]?.['traceId'], failed.headers['x-trace-id']);
  t.match(errors[0]?.['error'], /secret detail/);
  const refused = await handle({ method: 'GET', url: '/api/v1/tasks/waiting', headers: auth(TOKENS.ada) });
  expectProblem(t, refused, 'temporarily_unavailable', 'a ServiceError from an async handler keeps its code');
  t.notMatch(refused.body, /internal reason/);
  t.equal(errors.length, 1, 'a ServiceError is not an unexpected error');
});

t.test('OPERATIONS: the table holds every operation id once, and only getOpenApi is anonymous', async (t) => {
  t.strictSame(OPERATIONS.map((operation) => operation.operationId).sort(), [...OPERATION_IDS].sort());
  t.strictSame(OPERATIONS.filter((operation) => operation.caller === 'anonymous').map((operation) => operation.operationId), ['getOpenApi']);
});
