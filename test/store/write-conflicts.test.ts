import t from 'tap';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { adminClients } from '../../lib/admin/clients.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { openDatabase, type Db } from '../../lib/store/open.js';
import type { TapTest } from '../helpers/api.js';
import { baseFixture } from '../helpers/fixture.js';

/**
 * Operator writes against a file a server is writing to (README, Administration: "safe while a
 * server runs on the same file"). Each of them reads before it writes. Begun DEFERRED, a commit
 * by the server between the read and the write makes SQLite refuse the write at once
 * (SQLITE_BUSY_SNAPSHOT), past any busy timeout; begun IMMEDIATE, the server waits instead.
 */

/** A file database with the shared world, and a second connection standing in for the server. */
function files(t: TapTest): { path: string; server: Db } {
  const path = join(t.testdir(), 'shared.sqlite');
  const setup = openDatabase(path).db;
  loadFixture(setup, baseFixture());
  setup.close();
  const server = new Database(path);
  server.pragma('busy_timeout = 0');
  t.teardown(() => server.close());
  return { path, server };
}

/**
 * `db`, whose statements let the server commit a write right after the first read made inside a
 * transaction: the moment a deferred transaction is exposed. When the operator's transaction
 * already holds the write lock, the server's attempt is simply refused (it would wait in real life).
 */
function interleaved(db: Db, server: Db): { db: Db; serverCommitted: () => boolean } {
  let tried = false;
  let committed = false;
  const serverWrites = (): void => {
    if (tried || !db.inTransaction) return;
    tried = true;
    try {
      server.prepare('UPDATE organisations SET workspace_version = workspace_version + 1 WHERE id = 1').run();
      committed = true;
    } catch (error) {
      if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
    }
  };
  const bound = <T extends object>(target: T, property: string | symbol): unknown => {
    const value: unknown = Reflect.get(target, property, target);
    return typeof value === 'function' ? value.bind(target) : value;
  };
  const proxy = new Proxy(db, {
    get(target, property) {
      if (property !== 'prepare') return bound(target, property);
      return (source: string) => new Proxy(target.prepare(source), {
        get(statement, name) {
          if (name !== 'get' && name !== 'all') return bound(statement, name);
          return (...args: unknown[]) => {
            const result: unknown = (statement[name] as (...a: unknown[]) => unknown)(...args);
            serverWrites();
            return result;
          };
        },
      });
    },
  });
  return { db: proxy, serverCommitted: () => committed };
}

t.test('ADMIN: client create, rotate and revoke hold the write lock from their first read, so a server commit cannot refuse them', async (t) => {
  const { path, server } = files(t);
  const operator = openDatabase(path).db;
  t.teardown(() => operator.close());
  for (const [what, run] of [
    ['create', (clients: ReturnType<typeof adminClients>) =>
      clients.create({ organisationId: 1, name: 'late-bot', sponsorId: 11, resourceId: 10, scopes: ['tasks:read'] })],
    ['rotate', (clients: ReturnType<typeof adminClients>) => clients.rotate(100)],
    ['revoke', (clients: ReturnType<typeof adminClients>) => clients.revoke(100)],
  ] as const) {
    const { db, serverCommitted } = interleaved(operator, server);
    t.doesNotThrow(() => run(adminClients(db)), `${what} succeeds`);
    t.notOk(serverCommitted(), `${what}: the server could not slip a commit in between`);
  }
});

t.test('ADMIN: a fixture load that reads first holds the write lock too', async (t) => {
  const { path, server } = files(t);
  const operator = openDatabase(path).db;
  t.teardown(() => operator.close());
  const { db, serverCommitted } = interleaved(operator, server);
  t.doesNotThrow(() => loadFixture(db, { staff: [{ id: 40, organisationId: 1, name: 'Late', kind: 'agent' }] }), 'the load succeeds');
  t.notOk(serverCommitted(), 'the server could not slip a commit in between');
  t.equal(operator.prepare('SELECT name FROM staff WHERE id = 40').pluck().get(), 'Late');
});
