import t from 'tap';
import { adminClients } from '../../lib/admin/clients.js';
import { INT32_MAX } from '../../lib/schemas/common.js';
import { adaWorld, API, etagOf } from '../helpers/api.js';
import { baseFixture } from '../helpers/fixture.js';

/**
 * New ids stay int32 (the API's id type, and the tables' CHECK): one past the highest, or the
 * lowest free one once a fixture has used the last int32.
 */

function worldWithLastIds() {
  const fixture = baseFixture();
  fixture.tasks.push({ id: INT32_MAX, projectId: 1, title: 'The last id', estimatedMinutes: 30, assignees: [{ staffMemberId: 10 }] });
  fixture.clients.push({ id: INT32_MAX, organisationId: 1, name: 'last-bot', token: 'wta_test_last_client_id_0000', sponsorId: 11, resourceId: 10, isActive: true, scopes: ['tasks:read'] });
  return adaWorld({ fixture });
}

const ask = async (h: ReturnType<typeof adaWorld>) => h.call('POST', `${API}/tasks/1/human-requests`, {
  headers: { 'if-match': await etagOf(h, 1) }, body: { humanAssigneeId: 11, title: 'Which headline?', estimatedMinutes: 20 },
});

t.test('ids: with a task at the last int32, a human request takes the lowest free stage id (not a 500)', async (t) => {
  const h = worldWithLastIds();
  const first = await ask(h);
  t.equal(first.status, 201);
  t.equal(first.json.id, 12, 'tasks hold 1-11: 12 is the first free stage id');
  const second = await ask(h);
  t.equal(second.status, 201);
  t.equal(second.json.id, 13, 'then the next gap');
  t.strictSame(h.errors, []);
});

t.test('ids: with an Incoming item at the last int32, a new one takes the lowest free id', async (t) => {
  const h = adaWorld();
  const first = await ask(h);
  t.equal(first.status, 201);
  const moved = h.db.prepare('UPDATE incoming_items SET id = ? WHERE stage_id = ?').run(INT32_MAX, first.json.id);
  t.equal(moved.changes, 1);
  const second = await ask(h);
  t.equal(second.status, 201);
  const incoming = (await h.call('GET', `${API}/human-requests/${second.json.id}`)).json.incomingId;
  t.equal(incoming, 1, 'id 1 is free again');
  t.strictSame(h.errors, []);
});

t.test('ids: with a client at the last int32, clients create takes the lowest free client id', async (t) => {
  const h = worldWithLastIds();
  const created = adminClients(h.db, { clock: h.clock }).create({ organisationId: 1, name: 'new-bot', sponsorId: 11, resourceId: 10, scopes: ['tasks:read'] });
  t.equal(created.client.id, 1, 'clients hold 100-108 and the last int32: 1 is free');
});
