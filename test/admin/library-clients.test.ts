import t from 'tap';
import Database from 'better-sqlite3';
import { adminClients, AdminError, createService, loadFixture, manualClock, type NewClient } from '../../lib/index.js';
import { baseFixture } from '../helpers/fixture.js';

/**
 * adminClients as an embedder reaches it, from the package's entry point: the credentials it
 * issues are the ones the service on that database accepts, at once, with no restart.
 */

const API = '/api/v1';

function world() {
  const db = new Database(':memory:');
  loadFixture(db, baseFixture());
  const clock = manualClock('2026-11-16T10:00:00Z');
  const service = createService({ db, clock, rateLimit: 1000 });
  // The service first, then the Database it was given.
  t.teardown(() => {
    service.close();
    db.close();
  });
  const as = async (token: string, method = 'GET', path = '/identity', headers: Record<string, string> = {}) =>
    service.handle({ method, url: `${API}${path}`, headers: { authorization: `Bearer ${token}`, ...headers } });
  return { db, clock, service, as };
}

t.test('LIBRARY: adminClients(db) issues a token the service on that database accepts; rotate stops the old one at once; revoke answers 401 and frees its lease', async (tt) => {
  const { db, clock, as } = world();
  const clients = adminClients(db, { clock });
  const created = clients.create({ organisationId: 1, name: ' scout-bot ', sponsorId: 11, resourceId: 10, scopes: ['tasks:read', 'tasks:update', 'tasks:read'] });
  tt.match(created.client, { organisationId: 1, name: 'scout-bot', sponsorId: 11, resourceId: 10, isActive: true, scopes: ['tasks:read', 'tasks:update'] });
  tt.match(created.token, /^wta_/);
  const identity = await as(created.token);
  tt.equal(identity.status, 200, 'the new token works at once');
  tt.match(JSON.parse(identity.body ?? '{}'), { clientId: created.client.id, clientName: 'scout-bot', resource: { id: 10 } });
  const stored = db.prepare('SELECT * FROM api_clients WHERE id = ?').get(created.client.id);
  tt.notMatch(JSON.stringify(stored), created.token, 'only its hash is stored');

  const task = await as(created.token, 'GET', '/tasks/1');
  const claim = await as(created.token, 'POST', '/tasks/1/claim', { 'if-match': String(task.headers['etag']), 'idempotency-key': 'c1' });
  tt.equal(claim.status, 200, 'it can take a lease');

  const rotated = clients.rotate(created.client.id);
  tt.not(rotated.token, created.token);
  tt.equal((await as(created.token)).status, 401, 'the old token is refused at once');
  tt.equal((await as(rotated.token)).status, 200, 'the new one works');

  const revoked = clients.revoke(created.client.id);
  tt.match(revoked, { wasActive: true, releasedLeases: 1, client: { isActive: false } });
  tt.equal((await as(rotated.token)).status, 401, 'a revoked client is refused at once');
  tt.equal(db.prepare('SELECT count(*) FROM claims WHERE task_id = 1 AND released_utc IS NULL AND expires_utc > ?').pluck().get(clock.now()), 0, 'its live lease was released');
  tt.match(clients.list().find((client) => client.id === created.client.id), { isActive: false });
  tt.throws(() => clients.rotate(created.client.id), new AdminError(`client ${created.client.id} is revoked`), 'a revoked client is not brought back by a rotation');
});

t.test('LIBRARY: adminClients refuses what no database could hold with a TypeError, and what this one refuses with an AdminError, writing nothing', async (tt) => {
  const { db } = world();
  const count = () => db.prepare('SELECT count(*) FROM api_clients').pluck().get();
  const before = count();
  tt.throws(() => adminClients('./tasks.sqlite' as unknown as Database.Database), new TypeError('adminClients: db must be an open better-sqlite3 Database'));
  tt.throws(() => adminClients(db, { now: Date.now } as unknown as object), new TypeError('adminClients: unknown option "now"'));
  tt.throws(() => adminClients(db, { clock: Date.now } as unknown as object), /adminClients: options.clock must be an object with a now\(\) method/);
  tt.throws(() => adminClients(db, { clock: { now: () => Date.now() / 1000 * 1e6 } }), /returning epoch milliseconds/, 'microseconds by mistake');
  tt.throws(() => adminClients(db, { clock: { now: () => -1 } }), /returning epoch milliseconds/, 'before 1970');
  const clients = adminClients(db);
  const good: NewClient = { organisationId: 1, name: 'bot', sponsorId: 11, resourceId: 10, scopes: ['tasks:read'] };
  for (const [bad, message] of [
    [{ ...good, organisationId: '1' }, /organisationId must be an integer/],
    [{ ...good, sponsorId: 0 }, /sponsorId must be an integer/],
    [{ ...good, resourceId: undefined }, /resourceId must be an integer .*or null/],
    [{ ...good, name: 7 }, /name must be a string/],
    [{ ...good, scopes: 'tasks:read' }, /scopes must be an array of strings/],
    [{ ...good, scope: ['tasks:read'] }, /unknown member "scope"/],
    [null, /create\(\) takes a client object/],
  ] as const) {
    tt.throws(() => clients.create(bad as never), message, JSON.stringify(bad));
  }
  tt.throws(() => clients.rotate('100' as never), new TypeError('adminClients: rotate(id): id must be an integer from 1 to 2147483647'));
  tt.throws(() => clients.revoke(2 ** 31 as never), new TypeError('adminClients: revoke(id): id must be an integer from 1 to 2147483647'));
  tt.throws(() => clients.create({ ...good, sponsorId: 10 }), new AdminError('sponsor 10 is not a human'), 'the rules the command line applies');
  tt.throws(() => clients.create({ ...good, scopes: ['tasks:write'] } as unknown as NewClient), new AdminError(`unknown scope "tasks:write" (scopes: tasks:read, tasks:update, tasks:time, tasks:notes, human-requests:create, human-requests:read)`),
    'an unknown scope from a caller without the types');
  tt.throws(() => clients.rotate(999), new AdminError('no client 999'));
  // Staff 20 and 21 belong to organisation 2: a credential may not cross organisations either way.
  for (const [bad, error] of [
    [{ ...good, name: '   ' }, 'the client name must not be empty'],
    [{ ...good, sponsorId: 21 }, 'sponsor 21 is not a staff member of organisation 1'],
    [{ ...good, sponsorId: 999 }, 'sponsor 999 is not a staff member of organisation 1'],
    [{ ...good, resourceId: 20 }, 'resource 20 is not a staff member of organisation 1'],
    [{ ...good, organisationId: 99 }, 'no organisation 99'],
  ] as const) {
    tt.throws(() => clients.create(bad), new AdminError(error), error);
  }
  tt.equal(count(), before, 'nothing written');
});

t.test('LIBRARY: adminClients runs inside the caller\'s own transaction, and goes with it', async (tt) => {
  const { db, as } = world();
  const clients = adminClients(db);
  let token = '';
  tt.throws(() => db.transaction(() => {
    token = clients.create({ organisationId: 1, name: 'doomed', sponsorId: 11, resourceId: null, scopes: [] }).token;
    throw new Error('the app changed its mind');
  })(), /changed its mind/);
  tt.equal((await as(token)).status, 401, 'rolled back with the rest: the token never worked');
  tt.notOk(clients.list().some((client) => client.name === 'doomed'));
  const kept = db.transaction(() => clients.create({ organisationId: 1, name: 'kept', sponsorId: 11, resourceId: null, scopes: [] }))();
  tt.equal((await as(kept.token)).status, 200, 'committed with it');
});

t.test('LIBRARY: adminClients brings a new database up to the schema, as loadFixture does', async (tt) => {
  const db = new Database(':memory:');
  tt.teardown(() => db.close());
  tt.strictSame(adminClients(db).list(), [], 'no clients yet, and no error about missing tables');
  tt.throws(() => adminClients(db).create({ organisationId: 1, name: 'bot', sponsorId: 11, resourceId: null, scopes: [] }), new AdminError('no organisation 1'));
});
