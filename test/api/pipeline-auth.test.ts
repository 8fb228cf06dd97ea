import t from 'tap';
import { harness, type Harness } from '../helpers/service.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';
import type { TapTest } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';

// Contract 1 steps 3 (authentication) and 5 (scope), through the real handle().

const READ_URLS = ['/api/v1/identity', '/api/v1/tasks/available', '/api/v1/tasks/waiting', '/api/v1/tasks/1'];

async function expectUnauthenticated(tt: TapTest, h: Harness, options: { token?: string | null; headers?: Record<string, string | string[]> }, what: string) {
  for (const url of READ_URLS) {
    const response = await h.call('GET', url, options);
    expectProblem(tt, response, 'authentication_failed', `${what}: GET ${url}`);
    tt.equal(response.headers['www-authenticate'], 'Bearer', `${what}: WWW-Authenticate: Bearer`);
    tt.equal(response.headers['ratelimit'], undefined, `${what}: no RateLimit fields for an unauthenticated request`);
  }
}

t.test('AUTH: missing Authorization header gives 401 authentication_failed with WWW-Authenticate: Bearer', async (t) => {
  const h = harness();
  await expectUnauthenticated(t, h, { token: null }, 'no header');
  await expectUnauthenticated(t, h, { token: null, headers: { authorization: '' } }, 'empty header');
  await expectUnauthenticated(t, h, { token: null, headers: { authorization: [] } }, 'empty list');
});

t.test('AUTH: wrong scheme (Basic) gives 401 authentication_failed with WWW-Authenticate: Bearer', async (t) => {
  const h = harness();
  const basic = `Basic ${Buffer.from(`user:${TOKENS.ada}`).toString('base64')}`;
  await expectUnauthenticated(t, h, { headers: { authorization: basic } }, 'Basic');
  await expectUnauthenticated(t, h, { headers: { authorization: `Token ${TOKENS.ada}` } }, 'Token scheme');
  await expectUnauthenticated(t, h, { headers: { authorization: `Bearer:${TOKENS.ada}` } }, 'no space after the scheme');
  await expectUnauthenticated(t, h, { headers: { authorization: TOKENS.ada } }, 'bare token');
});

t.test('AUTH: malformed bearer credential gives 401 authentication_failed with WWW-Authenticate: Bearer', async (t) => {
  const h = harness();
  for (const authorization of ['Bearer', 'Bearer ', `Bearer ${TOKENS.ada} extra`, `Bearer ${TOKENS.ada},`, `Bearer "${TOKENS.ada}"`, `Bearer ${TOKENS.ada}\u00e9`, `Bearer\t${TOKENS.ada}`]) {
    await expectUnauthenticated(t, h, { headers: { authorization } }, JSON.stringify(authorization).replace(/[^\x20-\x7e]/g, '?'));
  }
});

t.test('AUTH: unknown token gives 401 authentication_failed with WWW-Authenticate: Bearer', async (t) => {
  const h = harness();
  await expectUnauthenticated(t, h, { token: 'wta_not_a_known_token' }, 'unknown');
  await expectUnauthenticated(t, h, { token: `${TOKENS.ada}x` }, 'a known token plus one character');
  await expectUnauthenticated(t, h, { token: TOKENS.ada.toUpperCase() }, 'a known token in another case');
});

t.test('AUTH: revoked client gives 401 authentication_failed with WWW-Authenticate: Bearer', async (t) => {
  await expectUnauthenticated(t, harness(), { token: TOKENS.revoked }, 'revoked');
});

t.test('AUTH: a sponsor that is no longer a human (changed in the database) gives 401 authentication_failed', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  t.equal((await h.call('GET', '/api/v1/identity')).status, 200, 'authenticated while Grace is human');
  // Neither the fixture loader nor client administration lets an agent sponsor a client.
  h.db.prepare("UPDATE staff SET kind = 'agent' WHERE id = 11").run();
  await expectUnauthenticated(t, h, {}, 'sponsor turned agent');
});

t.test('AUTH: inactive sponsor gives 401 authentication_failed with WWW-Authenticate: Bearer', async (t) => {
  await expectUnauthenticated(t, harness(), { token: TOKENS.inactiveSponsor }, 'inactive sponsor');
});

t.test('AUTH: inactive resource gives 401 authentication_failed with WWW-Authenticate: Bearer', async (t) => {
  await expectUnauthenticated(t, harness(), { token: TOKENS.inactiveResource }, 'inactive resource');
});

t.test('AUTH: inactive organisation gives 401 authentication_failed with WWW-Authenticate: Bearer', async (t) => {
  await expectUnauthenticated(t, harness(), { token: TOKENS.inactiveOrg }, 'inactive organisation');
});

t.test('AUTH: two Authorization headers give 401 authentication_failed with WWW-Authenticate: Bearer', async (t) => {
  const h = harness();
  // Even two copies of the same valid credential: the service never picks one of several.
  await expectUnauthenticated(t, h, { headers: { authorization: [`Bearer ${TOKENS.ada}`, `Bearer ${TOKENS.ada}`] } }, 'same token twice');
  await expectUnauthenticated(t, h, { headers: { authorization: [`Bearer ${TOKENS.ada}`, `Bearer ${TOKENS.revoked}`] } }, 'valid and revoked');
  await expectUnauthenticated(t, h, { headers: { Authorization: `Bearer ${TOKENS.ada}`, authorization: `Bearer ${TOKENS.ada}` } }, 'two spellings of the name');
});

t.test('AUTH: a valid credential is accepted with the scheme in any case', async (t) => {
  const h = harness();
  for (const authorization of [`Bearer ${TOKENS.ada}`, `bearer ${TOKENS.ada}`, `BEARER ${TOKENS.ada}`, `Bearer  ${TOKENS.ada} `]) {
    const response = await h.call('GET', '/api/v1/identity', { headers: { authorization } });
    t.equal(response.status, 200, `${JSON.stringify(authorization)} is accepted`);
    t.equal(response.json.clientId, 100);
  }
  const list = await h.call('GET', '/api/v1/identity', { headers: { authorization: [`Bearer ${TOKENS.ada}`] } });
  t.equal(list.status, 200, 'a one-element header list is one header');
});

function noReadFixture() {
  const fixture = baseFixture();
  fixture.clients.push({
    id: 120, organisationId: 1, name: 'ada-writer', token: 'wta_test_no_tasks_read', sponsorId: 11, resourceId: 10,
    isActive: true, scopes: ['tasks:update', 'tasks:time', 'tasks:notes', 'human-requests:create', 'human-requests:read'],
  });
  return fixture;
}

t.test('AUTH: a client without tasks:read gets 403 permission_denied on task reads but 200 on /identity', async (t) => {
  const h = harness({ fixture: noReadFixture(), defaultToken: 'wta_test_no_tasks_read' });
  for (const url of ['/api/v1/tasks/available', '/api/v1/tasks/waiting', '/api/v1/tasks/1', '/api/v1/tasks/7', '/api/v1/tasks/999']) {
    const response = await h.call('GET', url);
    expectProblem(t, response, 'permission_denied', `GET ${url}`);
    t.equal(response.headers['www-authenticate'], undefined, 'a 403 is not an authentication challenge');
    t.ok(response.headers['ratelimit'], 'an authenticated refusal carries RateLimit');
  }
  const identity = await h.call('GET', '/api/v1/identity');
  t.equal(identity.status, 200);
  t.equal(identity.json.clientId, 120);
  t.notOk(identity.json.scopes.includes('tasks:read'));
});

t.test('AUTH: identity-only client gets 403 permission_denied on resource operations but 200 on /identity', async (t) => {
  const h = harness({ defaultToken: TOKENS.identityOnly });
  // The identity-only client of the fixture has tasks:read, so the refusal is about the missing resource.
  for (const url of ['/api/v1/tasks/available', '/api/v1/tasks/waiting', '/api/v1/tasks/1', '/api/v1/tasks/999']) {
    expectProblem(t, await h.call('GET', url), 'permission_denied', `GET ${url}`);
  }
  const identity = await h.call('GET', '/api/v1/identity');
  t.equal(identity.status, 200);
  t.equal(identity.json.resource, null);
  t.same(identity.json.scopes, ['tasks:read']);
});

t.test('AUTH: identity-only client gets 403 permission_denied on /incoming and every Incoming and assistance operation', async (t) => {
  const h = harness({ defaultToken: TOKENS.identityOnly });
  expectProblem(t, await h.call('GET', '/api/v1/incoming'), 'permission_denied', 'GET /incoming');
  expectProblem(t, await h.call('GET', '/api/v1/human-requests/1'), 'permission_denied', 'GET /human-requests/1');
  expectProblem(t, await h.call('POST', '/api/v1/incoming/1/start'), 'permission_denied', 'POST /incoming/1/start');
});

t.test('AUTH: scope comes before the path id, the query and the target', async (t) => {
  const identityOnly = harness({ defaultToken: TOKENS.identityOnly });
  const noRead = harness({ fixture: noReadFixture(), defaultToken: 'wta_test_no_tasks_read' });
  for (const h of [identityOnly, noRead]) {
    expectProblem(t, await h.call('GET', '/api/v1/tasks/abc'), 'permission_denied', 'bad id');
    expectProblem(t, await h.call('GET', '/api/v1/tasks/available?x=1'), 'permission_denied', 'unknown query');
    expectProblem(t, await h.call('GET', '/api/v1/tasks/90'), 'permission_denied', 'task of another organisation');
    expectProblem(t, await h.call('GET', '/api/v1/tasks/1', { raw: '{}', headers: { 'content-type': 'application/json' } }), 'permission_denied', 'body on a GET');
  }
});
