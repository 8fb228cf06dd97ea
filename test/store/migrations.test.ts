import t from 'tap';
import Database from 'better-sqlite3';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createRequire } from 'node:module';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { openDatabase } from '../../lib/store/open.js';
import { SCHEMA_VERSION } from '../../lib/store/migrations.js';

const version = (db: Database.Database) => db.pragma('user_version', { simple: true }) as number;
const columns = (db: Database.Database, table: string) =>
  db.prepare(`SELECT name FROM pragma_table_info('${table}')`).pluck().all() as string[];

/** The source_publications table as it was before the generation column. */
const V1_PUBLICATIONS = `CREATE TABLE source_publications (
  stage_id INTEGER PRIMARY KEY, source_item_id INTEGER NOT NULL, external_ref TEXT,
  state TEXT NOT NULL DEFAULT 'pending', attempts INTEGER NOT NULL DEFAULT 0, next_attempt_utc INTEGER,
  pending_message TEXT)`;

t.test('SCHEMA: a new database gets the whole schema and the latest version', async (t) => {
  const { db } = openDatabase(new Database(':memory:'));
  t.equal(version(db), SCHEMA_VERSION);
  t.ok(columns(db, 'source_publications').includes('generation'));
});

t.test('SCHEMA: reopening a current database changes nothing', async (t) => {
  const db = new Database(':memory:');
  openDatabase(db);
  db.prepare("INSERT INTO organisations (id, name) VALUES (1, 'Acme')").run();
  openDatabase(db);
  t.equal(version(db), SCHEMA_VERSION);
  t.equal(db.prepare('SELECT count(*) FROM organisations').pluck().get(), 1, 'data kept');
});

t.test('SCHEMA: reopening a current database needs no write lock (another process may hold it)', async (t) => {
  const dir = t.testdir();
  const path = `${dir}/busy.sqlite`;
  openDatabase(path).db.close();
  const writer = new Database(path);
  writer.exec('BEGIN IMMEDIATE');
  t.teardown(() => writer.close());
  const opened = new Database(path);
  opened.pragma('busy_timeout = 0');
  // The lock is held until after the open: a write on open would wait out the 5 s busy timeout
  // openDatabase sets and then throw SQLITE_BUSY.
  t.doesNotThrow(() => openDatabase(opened), 'opened without the write lock');
  t.equal(writer.inTransaction, true, 'the other connection held the write lock throughout');
  opened.close();
  writer.exec('ROLLBACK');
});

t.test('SCHEMA: the credential generation starts at nothing and moves with every credential change', async (t) => {
  const { db } = openDatabase(new Database(':memory:'));
  const generation = () => db.prepare('SELECT generation FROM credential_generation').pluck().get();
  t.equal(generation(), undefined, 'no row before the first change (read as 0)');
  db.prepare("INSERT INTO organisations (id, name) VALUES (1, 'Acme')").run();
  db.prepare("INSERT INTO staff (id, organisation_id, name, kind) VALUES (1, 1, 'Grace', 'human')").run();
  db.prepare(`INSERT INTO api_clients (id, organisation_id, name, token_hash, sponsor_id) VALUES (1, 1, 'c', '${'a'.repeat(64)}', 1)`).run();
  t.equal(generation(), undefined, 'inserting clients, staff and organisations changes no cached credential');
  db.prepare("INSERT INTO api_client_scopes (client_id, scope) VALUES (1, 'tasks:read')").run();
  t.equal(generation(), 1, 'a scope granted');
  db.prepare('UPDATE api_clients SET is_active = 0 WHERE id = 1').run();
  t.equal(generation(), 2, 'a client revoked');
  db.prepare('UPDATE organisations SET workspace_version = workspace_version + 1').run();
  t.equal(generation(), 2, 'a workspace version bump is not a credential change');
});

t.test('SCHEMA: a version-1 database is migrated: the new column appears and rows survive', async (t) => {
  const db = new Database(':memory:');
  db.exec(V1_PUBLICATIONS);
  db.prepare("INSERT INTO source_publications (stage_id, source_item_id, state) VALUES (5, 1, 'published')").run();
  db.pragma('user_version = 1');
  openDatabase(db);
  t.equal(version(db), SCHEMA_VERSION);
  t.ok(columns(db, 'source_publications').includes('generation'), 'generation added');
  t.strictSame(db.prepare('SELECT stage_id, state, generation FROM source_publications').get(), { stage_id: 5, state: 'published', generation: 0 });
  t.ok(columns(db, 'tasks').length > 0, 'missing tables created');
});

t.test('SCHEMA: a version-2 database loses the index no query used (source_publications_by_ref); rows survive', async (t) => {
  const path = join(t.testdir(), 'v2.sqlite');
  const v2 = openDatabase(new Database(path)).db;
  v2.exec('CREATE INDEX source_publications_by_ref ON source_publications (source_item_id, external_ref)');
  v2.prepare("INSERT INTO organisations (id, name) VALUES (1, 'Acme')").run();
  v2.pragma('user_version = 2');
  v2.close();
  const { db } = openDatabase(new Database(path));
  t.teardown(() => db.close());
  t.equal(version(db), SCHEMA_VERSION);
  t.equal(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'source_publications_by_ref'").pluck().get(), 0);
  t.equal(db.prepare('SELECT count(*) FROM organisations').pluck().get(), 1, 'data kept');
});

t.test('SCHEMA: a newer release that migrates the file while this one waits for the lock wins: this one then refuses the file instead of stamping its own version over it', async (t) => {
  const path = join(t.testdir(), 'race.sqlite');
  const v2 = openDatabase(new Database(path)).db;
  v2.pragma('user_version = 2');
  v2.close();
  // The newer release, in a process of its own: it takes the write lock, and once told that this
  // release is opening the file, migrates it to the version after this release's and lets go.
  const betterSqlite = createRequire(import.meta.url).resolve('better-sqlite3');
  const newer = spawn(process.execPath, ['-e', `
    const db = new (require(${JSON.stringify(betterSqlite)}))(${JSON.stringify(path)});
    db.exec('BEGIN IMMEDIATE');
    process.stdout.write('locked\\n');
    process.stdin.once('data', () => setTimeout(() => {
      db.exec('ALTER TABLE notes ADD COLUMN newer_thing TEXT');
      db.pragma('user_version = ${SCHEMA_VERSION + 1}');
      db.exec('COMMIT');
      db.close();
    }, 200));
  `], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.teardown(() => newer.kill());
  await once(newer.stdout, 'data');
  newer.stdin.end('go\n');
  // Reads version 2 at once, then waits (busy timeout) for the lock the newer release holds.
  t.throws(() => openDatabase(new Database(path)), { message: `worker-task-api: the database has schema version ${SCHEMA_VERSION + 1}, newer than this release's ${SCHEMA_VERSION}; run a newer worker-task-api on it` });
  await once(newer, 'exit');
  const after = new Database(path, { readonly: true });
  t.teardown(() => after.close());
  t.equal(after.pragma('user_version', { simple: true }), SCHEMA_VERSION + 1, 'the newer release\'s version stands');
});

t.test('SCHEMA: a database from before versioning (version 0, tables present) is brought up to date', async (t) => {
  const db = new Database(':memory:');
  db.exec(V1_PUBLICATIONS);
  openDatabase(db);
  t.equal(version(db), SCHEMA_VERSION);
  t.ok(columns(db, 'source_publications').includes('generation'));
});

t.test('SCHEMA: a database of a newer release is refused with a clear message and left alone', async (t) => {
  const db = new Database(':memory:');
  db.exec(V1_PUBLICATIONS);
  db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
  t.throws(() => openDatabase(db), { message: /newer than this release/ });
  t.equal(version(db), SCHEMA_VERSION + 1);
  t.equal(db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table'").pluck().get(), 1, 'nothing created');
});

t.test('SCHEMA: another application\'s database (a user_version but none of the service\'s tables) is refused and left alone', async (t) => {
  for (const appVersion of [1, SCHEMA_VERSION, SCHEMA_VERSION + 5]) {
    const db = new Database(':memory:');
    db.exec('CREATE TABLE invoices (id INTEGER PRIMARY KEY)');
    db.pragma(`user_version = ${appVersion}`);
    t.throws(() => openDatabase(db), { message: /user_version \d+ but none of this service's tables; .*a database of its own/ }, `user_version ${appVersion}`);
    t.equal(version(db), appVersion, 'its version is not stamped over');
    t.equal(db.prepare("SELECT count(*) FROM sqlite_master WHERE type = 'table'").pluck().get(), 1, 'nothing created');
  }
});

t.test('SCHEMA: a database without versioning holding a table of the service\'s name (another application\'s "tasks") is refused by name and left as it was', async (t) => {
  const path = join(t.testdir(), 'host.sqlite');
  const db = new Database(path);
  t.teardown(() => db.close());
  db.exec("CREATE TABLE tasks (id INTEGER PRIMARY KEY, what TEXT); CREATE TABLE users (id INTEGER PRIMARY KEY); INSERT INTO tasks (what) VALUES ('host row')");
  t.throws(() => openDatabase(db), {
    message: 'worker-task-api: the database already has a table named "tasks" that is not this service\'s; ' +
      'it looks like another application\'s database: give the service a database of its own',
  });
  t.equal(version(db), 0, 'no version stamped');
  t.strictSame(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").pluck().all(), ['tasks', 'users'], 'nothing created');
  t.equal(db.pragma('journal_mode', { simple: true }), 'delete', 'its journal mode kept');
});

t.test('SCHEMA: a database with only tables of other names gets the schema beside them, in WAL mode', async (t) => {
  const path = join(t.testdir(), 'shared.sqlite');
  const db = new Database(path);
  t.teardown(() => db.close());
  db.exec('CREATE TABLE invoices (id INTEGER PRIMARY KEY)');
  openDatabase(db);
  t.equal(version(db), SCHEMA_VERSION);
  t.ok(columns(db, 'tasks').includes('organisation_id'));
  t.equal(db.pragma('journal_mode', { simple: true }), 'wal');
});

t.test('SCHEMA: a version-3 database gets open_assignments filled with the assignments of tasks not Done, kept from then on', async (t) => {
  const path = join(t.testdir(), 'v3.sqlite');
  const v3 = openDatabase(new Database(path)).db;
  // As version 3 had it: no open_assignments and none of its triggers.
  for (const trigger of v3.prepare("SELECT name FROM sqlite_master WHERE type = 'trigger' AND name LIKE 'open_assignments_%'").pluck().all() as string[]) {
    v3.exec(`DROP TRIGGER ${trigger}`);
  }
  v3.exec(`DROP TABLE open_assignments;
    INSERT INTO organisations (id, name) VALUES (1, 'Acme');
    INSERT INTO projects (id, organisation_id, name) VALUES (1, 1, 'P');
    INSERT INTO staff (id, organisation_id, name, kind) VALUES (1, 1, 'A', 'agent'), (2, 1, 'B', 'agent');
    INSERT INTO stages (id, kind) VALUES (10, 'task'), (11, 'task'), (12, 'task');
    INSERT INTO tasks (id, organisation_id, project_id, title, status) VALUES (10, 1, 1, 'a', 'Ready'), (11, 1, 1, 'b', 'Done'), (12, 1, 1, 'c', 'InProgress');
    INSERT INTO task_assignments (task_id, staff_id) VALUES (10, 1), (10, 2), (11, 1), (12, 2);`);
  v3.pragma('user_version = 3');
  v3.close();
  const { db } = openDatabase(new Database(path));
  t.teardown(() => db.close());
  t.equal(version(db), SCHEMA_VERSION);
  const open = () => db.prepare('SELECT staff_id AS staff, task_id AS task FROM open_assignments ORDER BY staff, task').all();
  t.strictSame(open(), [{ staff: 1, task: 10 }, { staff: 2, task: 10 }, { staff: 2, task: 12 }], 'the Done task left out');
  db.prepare("UPDATE tasks SET status = 'Done' WHERE id = 12").run();
  t.strictSame(open(), [{ staff: 1, task: 10 }, { staff: 2, task: 10 }], 'the triggers keep it from then on');
});

t.test('SCHEMA: a migration makes the schema\'s triggers anew, so one an older release wrote differently takes the current body', async (t) => {
  const path = join(t.testdir(), 'old-trigger.sqlite');
  const current = openDatabase(new Database(path)).db;
  const body = (db: Database.Database) => db.prepare("SELECT sql FROM sqlite_master WHERE name = 'credentials_client_update'").pluck().get();
  const fresh = body(current);
  // As an older release wrote it: a different body under the same name.
  current.exec(`DROP TRIGGER credentials_client_update;
    CREATE TRIGGER credentials_client_update AFTER UPDATE ON api_clients BEGIN SELECT 1; END;`);
  current.pragma(`user_version = ${SCHEMA_VERSION - 1}`);
  current.close();
  const { db } = openDatabase(new Database(path));
  t.teardown(() => db.close());
  t.equal(version(db), SCHEMA_VERSION);
  t.equal(body(db), fresh, 'the current body');
  const triggers = (d: Database.Database) => d.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name").all();
  const reference = openDatabase(new Database(':memory:')).db;
  t.teardown(() => reference.close());
  t.strictSame(triggers(db), triggers(reference), 'every trigger as a new database has it');
});

/** The digest of the schema's triggers at each schema version: a trigger changed under the same version reaches no existing file. */
const TRIGGERS_AT_VERSION: Record<number, string> = {
  4: 'cc17cb9f68bd8d8585d72c0e18c9e4b6eca9f6799797923009808a4b2e07324b',
};

t.test('SCHEMA: the triggers are those recorded for the schema version, so a changed trigger comes with a new version (which remakes it in existing files)', async (t) => {
  const db = openDatabase(new Database(':memory:')).db;
  t.teardown(() => db.close());
  const triggers = db.prepare("SELECT name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name").all();
  const digest = createHash('sha256').update(JSON.stringify(triggers)).digest('hex');
  t.equal(digest, TRIGGERS_AT_VERSION[SCHEMA_VERSION],
    `schema.sql's triggers are not those of version ${SCHEMA_VERSION}: add a version to MIGRATIONS (lib/store/migrations.ts; ` +
    'an apply that does nothing is enough, as a migration remakes every trigger), then record this digest under it');
});
