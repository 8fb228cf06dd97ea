import t from 'tap';
import { AdminError, adminClients } from '../../lib/admin/clients.js';
import { openDatabase } from '../../lib/store/open.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { baseFixture } from '../helpers/fixture.js';

/** adminClients as the library gives it (the command line checks the same rules as usage errors first). */

const clientsIn = () => {
  const { db } = openDatabase(':memory:');
  loadFixture(db, baseFixture());
  t.teardown(() => db.close());
  return { db, clients: adminClients(db) };
};

t.test('ADMIN: a client without a resource needs no scope (it reads only /identity); one with a resource needs one', async (tt) => {
  const { db, clients } = clientsIn();
  const identityOnly = clients.create({ organisationId: 1, name: 'directory', sponsorId: 11, resourceId: null, scopes: [] });
  tt.match(identityOnly.client, { name: 'directory', resourceId: null, scopes: [] });
  tt.match(identityOnly.token, /^wta_/);

  const count = () => db.prepare('SELECT count(*) FROM api_clients').pluck().get();
  const before = count();
  let refused: unknown;
  try {
    clients.create({ organisationId: 1, name: 'worker', sponsorId: 11, resourceId: 10, scopes: [] });
  } catch (error) {
    refused = error;
  }
  tt.ok(refused instanceof AdminError, 'an AdminError');
  tt.equal((refused as Error).message, 'a client with a resource needs at least one scope');
  tt.equal(count(), before, 'nothing written');
});
