import t from 'tap';
import { harness } from '../helpers/service.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';
import { expectProblem } from '../helpers/expect-problem.js';

// Contract 1 step 6 (request shape) for the read operations, and its place after steps 3-5.

t.test('SHAPE: a path id that is not a positive int32 gives 400 validation_failed', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const ids = ['0', '01', '-1', 'abc', '2147483648', '99999999999', '1.0', '1e3', '+1', '0x1', '%201', '1%20', '00', '4294967297', '12345678901234567890'];
  for (const id of ids) expectProblem(t, await h.call('GET', `/api/v1/tasks/${id}`), 'validation_failed', `GET /tasks/${id}`);
  // Longer than the router's default parameter limit (100 characters): still the shape step's 400.
  const long = '1'.repeat(101);
  expectProblem(t, await h.call('GET', `/api/v1/tasks/${long}`), 'validation_failed', 'GET /tasks/<101 digits>');
  expectProblem(t, await h.call('POST', `/api/v1/tasks/${'9'.repeat(5000)}/claim`), 'validation_failed', 'POST /tasks/<5000 digits>/claim');
  t.same(h.errors, []);
});

t.test('SHAPE: a path id that fits int32 passes the shape step', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  t.equal((await h.call('GET', '/api/v1/tasks/1')).status, 200, '1');
  expectProblem(t, await h.call('GET', '/api/v1/tasks/2147483647'), 'task_not_found', '2147483647 reaches the target step');
  expectProblem(t, await h.call('GET', '/api/v1/tasks/1000000000'), 'task_not_found', '1000000000 (ten digits)');
  expectProblem(t, await h.call('GET', '/api/v1/tasks/7'), 'task_not_owned', "another resource's task");
  expectProblem(t, await h.call('GET', '/api/v1/tasks/90'), 'task_not_found', "another organisation's task");
});

t.test('SHAPE: unknown query parameters give 400 validation_failed', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const urls = [
    '/api/v1/tasks/available?x=1',
    '/api/v1/tasks/available?x',
    '/api/v1/tasks/waiting?includeAccepted=true',
    '/api/v1/tasks/1?fields=id',
    '/api/v1/identity?verbose=true',
    '/api/v1/tasks/available?=',
    // A second "?" belongs to the first parameter's name, as its encoded form %3F does.
    '/api/v1/incoming??includeAccepted=true',
    '/api/v1/incoming?%3FincludeAccepted=true',
    '/api/v1/tasks/available??',
  ];
  for (const url of urls) expectProblem(t, await h.call('GET', url), 'validation_failed', `GET ${url}`);
  // An empty query string carries no parameter.
  t.equal((await h.call('GET', '/api/v1/tasks/available?')).status, 200, 'a bare ? is fine');
});

t.test('SHAPE: a body on a GET gives 400 validation_failed', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const json = { 'content-type': 'application/json' };
  expectProblem(t, await h.call('GET', '/api/v1/identity', { raw: '{}', headers: json }), 'validation_failed', '{} on /identity');
  expectProblem(t, await h.call('GET', '/api/v1/tasks/1', { raw: '{}', headers: json }), 'validation_failed', '{} on /tasks/1');
  expectProblem(t, await h.call('GET', '/api/v1/tasks/available', { raw: 'hello' }), 'validation_failed', 'text, no content type');
  expectProblem(t, await h.call('GET', '/api/v1/tasks/waiting', { raw: new Uint8Array([0]) }), 'validation_failed', 'one byte');
  // No body and an empty body are the same thing.
  t.equal((await h.call('GET', '/api/v1/identity', { raw: '' })).status, 200, 'an empty body');
  t.equal((await h.call('GET', '/api/v1/identity', { raw: new Uint8Array(0), headers: json })).status, 200, 'empty bytes with a content type');
});

t.test('SHAPE: authentication comes before request shape (401 with a missing token)', async (t) => {
  const h = harness();
  const cases: [string, { raw?: string }][] = [
    ['/api/v1/tasks/available?x=1', {}],
    ['/api/v1/tasks/abc', {}],
    ['/api/v1/tasks/0', {}],
    ['/api/v1/identity', { raw: '{}' }],
  ];
  for (const [url, options] of cases) {
    const response = await h.call('GET', url, { token: null, ...options });
    expectProblem(t, response, 'authentication_failed', `GET ${url}${options.raw === undefined ? '' : ' with a body'}`);
    t.equal(response.headers['www-authenticate'], 'Bearer');
  }
});

t.test('SHAPE: scope comes before request shape (403 with a token lacking the scope)', async (t) => {
  const fixture = baseFixture();
  fixture.clients.push({ id: 121, organisationId: 1, name: 'notes-only', token: 'wta_test_notes_only', sponsorId: 11, resourceId: 10, isActive: true, scopes: ['tasks:notes'] });
  const h = harness({ fixture, defaultToken: 'wta_test_notes_only' });
  expectProblem(t, await h.call('GET', '/api/v1/tasks/available?x=1'), 'permission_denied', 'unknown query');
  expectProblem(t, await h.call('GET', '/api/v1/tasks/-1'), 'permission_denied', 'bad id');
  expectProblem(t, await h.call('GET', '/api/v1/tasks/waiting', { raw: '{}' }), 'permission_denied', 'body');
  // /identity needs no scope, so the same client reaches the shape step there.
  expectProblem(t, await h.call('GET', '/api/v1/identity?x=1'), 'validation_failed', '/identity goes on to the shape step');
});

t.test('SHAPE: GET /openapi.json takes no body and no query parameters', async (t) => {
  const h = harness();
  expectProblem(t, await h.call('GET', '/api/v1/openapi.json', { token: null, raw: '{}' }), 'validation_failed', 'a body');
  expectProblem(t, await h.call('GET', '/api/v1/openapi.json?format=yaml', { token: null }), 'validation_failed', 'a query parameter');
  t.equal((await h.call('GET', '/api/v1/openapi.json?', { token: null })).status, 200, 'an empty query');
});
