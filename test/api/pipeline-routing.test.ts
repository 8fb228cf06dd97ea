import t from 'tap';
import { harness } from '../helpers/service.js';
import { TOKENS } from '../helpers/fixture.js';
import { expectProblem } from '../helpers/expect-problem.js';

// Contract 1, steps 1 (route) and 2 (body size), through the real handle().
// Operations are registered as their issues land (see test/http/router.test.ts for the full table).

const LIMIT = 131072;

t.test('PIPELINE: unknown path gives 404 route_not_found', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  for (const url of ['/api/v1/nope', '/api/v1/tasks/1/nope', '/api/v1/tasks/available/extra', '/api/v1/human-requests', '/']) {
    expectProblem(t, await h.call('GET', url), 'route_not_found', `GET ${url}`);
  }
  t.same(h.errors, []);
});

t.test('PIPELINE: paths are exact (trailing slash, case, empty segment, outside /api/v1 are 404 route_not_found)', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const urls = [
    '/api/v1/tasks/available/',
    '/api/v1/identity/',
    '/api/v1/tasks/1/',
    '/api/v1/Tasks/1',
    '/api/v1/IDENTITY',
    '/API/v1/identity',
    '/api/v1/tasks/',
    '/api/v1/tasks//claim',
    '/api/v1//identity',
    '/api/v1',
    '/api/v1/',
    '/identity',
    '/api/v2/identity',
    '/api/v1identity',
    '/api/v1/tasks/%zz',
  ];
  for (const url of urls) expectProblem(t, await h.call('GET', url), 'route_not_found', `GET ${url}`);
  // The exact paths themselves answer.
  t.equal((await h.call('GET', '/api/v1/identity')).status, 200, 'GET /api/v1/identity is 200');
  t.equal((await h.call('GET', '/api/v1/tasks/available')).status, 200, 'GET /api/v1/tasks/available is 200');
  t.same(h.errors, []);
});

t.test('PIPELINE: another method on a known path gives 405 method_not_allowed with the exact Allow header', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const cases: [string, string, string][] = [
    ['DELETE', '/api/v1/tasks/1', 'GET, PATCH'],
    ['PUT', '/api/v1/tasks/1', 'GET, PATCH'],
    ['GET', '/api/v1/tasks/1/claim', 'POST'],
    ['PATCH', '/api/v1/tasks/1/actual-effort', 'PUT'],
    ['PUT', '/api/v1/identity', 'GET'],
    ['POST', '/api/v1/identity', 'GET'],
    ['POST', '/api/v1/openapi.json', 'GET'],
    ['get', '/api/v1/identity', 'GET'],
  ];
  for (const [method, url, allow] of cases) {
    const response = await h.call(method, url);
    expectProblem(t, response, 'method_not_allowed', `${method} ${url}`);
    t.equal(response.headers['allow'], allow, `${method} ${url}: Allow: ${allow}`);
  }
  // For the host's request log: the path is an operation's, so the 405 still names its route.
  const logged = await h.service.handle({ method: 'DELETE', url: '/api/v1/tasks/1', headers: {} });
  t.strictSame(logged.meta, { route: '/api/v1/tasks/{id}' }, 'meta names the route template');
  const unknown = await h.service.handle({ method: 'GET', url: '/api/v1/nothing', headers: {} });
  t.equal(unknown.meta, undefined, 'an unknown path has no route');
});

t.test('PIPELINE: static paths win over {id}: POST /tasks/available and DELETE /tasks/waiting are 405 with Allow: GET', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  for (const [method, url] of [['POST', '/api/v1/tasks/available'], ['PATCH', '/api/v1/tasks/available'], ['DELETE', '/api/v1/tasks/waiting']] as const) {
    const response = await h.call(method, url);
    expectProblem(t, response, 'method_not_allowed', `${method} ${url}`);
    t.equal(response.headers['allow'], 'GET', `${method} ${url}: Allow: GET`);
  }
});

t.test('PIPELINE: OPTIONS and HEAD are 405 method_not_allowed with Allow', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  for (const method of ['OPTIONS', 'HEAD']) {
    for (const [url, allow] of [['/api/v1/identity', 'GET'], ['/api/v1/tasks/1', 'GET, PATCH'], ['/api/v1/tasks/available', 'GET'], ['/api/v1/openapi.json', 'GET']]) {
      const response = await h.call(method, url!);
      expectProblem(t, response, 'method_not_allowed', `${method} ${url}`);
      t.equal(response.headers['allow'], allow, `${method} ${url}: Allow: ${allow}`);
    }
  }
});

t.test('PIPELINE: 404 and 405 come before authentication (no token needed)', async (t) => {
  const h = harness();
  const notFound = await h.call('GET', '/api/v1/nope', { token: null });
  expectProblem(t, notFound, 'route_not_found', 'unknown path, no token');
  t.equal(notFound.headers['www-authenticate'], undefined, 'no WWW-Authenticate on a 404');
  expectProblem(t, await h.call('GET', '/api/v1/nope', { token: 'not-a-real-token' }), 'route_not_found', 'unknown path, bad token');
  const notAllowed = await h.call('DELETE', '/api/v1/tasks/1', { token: null });
  expectProblem(t, notAllowed, 'method_not_allowed', 'DELETE, no token');
  t.equal(notAllowed.headers['allow'], 'GET, PATCH');
  expectProblem(t, await h.call('OPTIONS', '/api/v1/identity', { token: null }), 'method_not_allowed', 'OPTIONS, no token');
  // Route also comes before the body size.
  const big = 'x'.repeat(LIMIT + 1);
  expectProblem(t, await h.call('POST', '/api/v1/nope', { token: null, raw: big }), 'route_not_found', 'oversized body on an unknown path');
  expectProblem(t, await h.call('DELETE', '/api/v1/tasks/1', { token: null, raw: big }), 'method_not_allowed', 'oversized body, wrong method');
});

t.test('PIPELINE: a declared content-length over 131072 gives 413 request_too_large before authentication', async (t) => {
  const h = harness();
  for (const url of ['/api/v1/identity', '/api/v1/tasks/1', '/api/v1/openapi.json']) {
    const response = await h.call('GET', url, { token: null, headers: { 'content-length': String(LIMIT + 1) } });
    expectProblem(t, response, 'request_too_large', `GET ${url}, content-length ${LIMIT + 1}, no body, no token`);
    t.equal(response.headers['www-authenticate'], undefined, 'not an authentication failure');
    t.equal(response.headers['ratelimit'], undefined, 'no RateLimit fields before authentication');
  }
  expectProblem(t, await h.call('GET', '/api/v1/identity', { token: TOKENS.revoked, headers: { 'Content-Length': '99999999' } }),
    'request_too_large', 'a revoked token does not matter either');
});

t.test('PIPELINE: a body of 131073 bytes gives 413 request_too_large before authentication', async (t) => {
  const h = harness();
  expectProblem(t, await h.call('GET', '/api/v1/identity', { token: null, raw: 'x'.repeat(LIMIT + 1) }), 'request_too_large', 'string body');
  expectProblem(t, await h.call('GET', '/api/v1/identity', { token: null, raw: new Uint8Array(LIMIT + 1).fill(0x20) }), 'request_too_large', 'byte body');
  // Bytes, not characters: 65537 two-byte characters are 131074 bytes.
  expectProblem(t, await h.call('GET', '/api/v1/tasks/1', { token: null, raw: '\u00e9'.repeat(65537) }), 'request_too_large', 'UTF-8 bytes are counted');
  // The actual body wins over a smaller declared length.
  expectProblem(t, await h.call('GET', '/api/v1/identity', { token: null, raw: 'x'.repeat(LIMIT + 1), headers: { 'content-length': '2' } }),
    'request_too_large', 'an understated content-length');
});

t.test('PIPELINE: a body of exactly 131072 bytes is not 413', async (t) => {
  const h = harness();
  const exact = 'x'.repeat(LIMIT);
  // Without a token it goes on to authentication; with one, to the shape step (GET takes no body).
  expectProblem(t, await h.call('GET', '/api/v1/identity', { token: null, raw: exact }), 'authentication_failed', 'no token: 401');
  expectProblem(t, await h.call('GET', '/api/v1/identity', { token: TOKENS.ada, raw: exact }), 'validation_failed', 'token: 400');
  expectProblem(t, await h.call('GET', '/api/v1/identity', { token: null, raw: new Uint8Array(LIMIT) }), 'authentication_failed', 'bytes: 401');
  expectProblem(t, await h.call('GET', '/api/v1/identity', { token: null, raw: '\u00e9'.repeat(LIMIT / 2) }), 'authentication_failed', 'two-byte characters: 401');
  const declared = await h.call('GET', '/api/v1/identity', { token: TOKENS.ada, headers: { 'content-length': String(LIMIT) } });
  t.equal(declared.status, 200, 'a declared content-length of exactly 131072 without a body is served');
});

t.test('PIPELINE: GET /openapi.json is anonymous and carries no RateLimit fields', async (t) => {
  const h = harness();
  const response = await h.call('GET', '/api/v1/openapi.json', { token: null });
  t.equal(response.status, 200);
  t.equal(response.headers['content-type'], 'application/json');
  t.equal(response.json.openapi, '3.0.3');
  t.equal(response.headers['ratelimit'], undefined);
  t.equal(response.headers['ratelimit-policy'], undefined);
  // An invalid token does not matter to the anonymous operation.
  t.equal((await h.call('GET', '/api/v1/openapi.json', { token: 'garbage' })).status, 200);
});

t.test('PIPELINE: a path with a #fragment is not the path without it: 404 route_not_found', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  for (const url of ['/api/v1/tasks/1#x', '/api/v1/identity#', '/api/v1/tasks/available#top']) {
    expectProblem(t, await h.call('GET', url), 'route_not_found', url);
  }
});
