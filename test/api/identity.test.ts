import t from 'tap';
import { harness } from '../helpers/service.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';

const SPEC_SCOPE_ORDER = ['tasks:read', 'tasks:update', 'tasks:time', 'tasks:notes', 'human-requests:create', 'human-requests:read'];

t.test('GET /identity: the agent gets clientId, clientName, organisation, resource and scopes in spec order', async (t) => {
  // The fixture lists the scopes backwards; the answer must still follow the spec's order.
  const fixture = baseFixture();
  fixture.clients[0]!['scopes'] = [...SPEC_SCOPE_ORDER].reverse();
  const h = harness({ fixture, defaultToken: TOKENS.ada });
  const response = await h.call('GET', '/api/v1/identity');
  t.equal(response.status, 200);
  t.equal(response.headers['content-type'], 'application/json');
  t.strictSame(response.json, {
    clientId: 100,
    clientName: 'ada-bot',
    organisation: { id: 1, name: 'Acme' },
    resource: { id: 10, name: 'Ada' },
    scopes: SPEC_SCOPE_ORDER,
  });
  t.strictSame(Object.keys(response.json), ['clientId', 'clientName', 'organisation', 'resource', 'scopes']);
});

t.test('GET /identity: scopes lists only the granted scopes', async (t) => {
  const h = harness({ defaultToken: TOKENS.readOnly });
  const response = await h.call('GET', '/api/v1/identity');
  t.equal(response.status, 200);
  t.equal(response.json.clientId, 101);
  t.equal(response.json.clientName, 'ada-reader');
  t.strictSame(response.json.resource, { id: 10, name: 'Ada' });
  t.strictSame(response.json.scopes, ['tasks:read']);
});

t.test('GET /identity: an identity-only client has resource null', async (t) => {
  const h = harness({ defaultToken: TOKENS.identityOnly });
  const response = await h.call('GET', '/api/v1/identity');
  t.equal(response.status, 200);
  t.strictSame(response.json, {
    clientId: 102,
    clientName: 'directory',
    organisation: { id: 1, name: 'Acme' },
    resource: null,
    scopes: ['tasks:read'],
  });
  t.ok('resource' in response.json, 'resource is present, not omitted');
});

t.test('GET /identity: a client of another organisation sees its own organisation', async (t) => {
  const h = harness({ defaultToken: TOKENS.otherOrg });
  const response = await h.call('GET', '/api/v1/identity');
  t.equal(response.status, 200);
  t.strictSame(response.json.organisation, { id: 2, name: 'Globex' });
  t.strictSame(response.json.resource, { id: 20, name: 'Gus' });
});
