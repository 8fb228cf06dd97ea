import type { Db } from './open.js';

/**
 * Schema changes that `schema.sql` (all `CREATE ... IF NOT EXISTS`) cannot make to an existing
 * database, by the version they bring it to. A database records its version in
 * `PRAGMA user_version` (so the database must be the service's own); one created from the
 * current `schema.sql` starts at the latest. Every migration makes the schema's triggers anew, so
 * a changed trigger needs only a new version here (test/store/migrations.test.ts records them);
 * one removed from schema.sql needs a DROP TRIGGER in its version's migration.
 */
const MIGRATIONS: readonly { readonly version: number; readonly apply: (db: Db) => void }[] = [
  // Version 1: the first versioned schema (everything in schema.sql up to here).
  {
    version: 2,
    apply: (db) => addColumnIfMissing(db, 'source_publications', 'generation', 'INTEGER NOT NULL DEFAULT 0'),
  },
  {
    // Replies are matched through source_publication_refs; this index served no query and cost a
    // write on every publication.
    version: 3,
    apply: (db) => db.exec('DROP INDEX IF EXISTS source_publications_by_ref'),
  },
  {
    // open_assignments (new in schema.sql, kept by triggers from here on) starts with the
    // assignments of every task not yet Done.
    version: 4,
    apply: (db) => db.exec(`
      INSERT OR IGNORE INTO open_assignments (staff_id, task_id)
        SELECT a.staff_id, a.task_id FROM task_assignments a JOIN tasks t ON t.id = a.task_id WHERE t.status <> 'Done'`),
  },
];

/** Idempotent, because schema.sql may just have created the table with the column already. */
function addColumnIfMissing(db: Db, table: string, column: string, definition: string): void {
  const columns = db.prepare(`SELECT name FROM pragma_table_info('${table}')`).pluck().all() as string[];
  if (!columns.includes(column)) db.exec(`ALTER TABLE ${table} ADD COLUMN ${column} ${definition}`);
}

export const SCHEMA_VERSION = MIGRATIONS.reduce((latest, migration) => Math.max(latest, migration.version), 1);

/** Whether the database holds this service's schema, of any version: every version has this table. */
export function holdsServiceSchema(db: Db): boolean {
  return db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'source_publications'").get() !== undefined;
}

/**
 * Refuses a database that already has a table (or view) of one of the schema's names without
 * being the service's: CREATE TABLE IF NOT EXISTS would keep it and fail later on a column.
 */
function refuseTakenNames(db: Db, schemaSql: string): void {
  const names = new Set([...schemaSql.matchAll(/CREATE TABLE IF NOT EXISTS (\w+)/g)].map((match) => match[1]));
  const taken = (db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')").pluck().all() as string[])
    .filter((name) => names.has(name));
  if (taken.length > 0) {
    throw new Error(
      `worker-task-api: the database already has a table named ${taken.map((name) => `"${name}"`).join(', ')} that is not this service's; ` +
        'it looks like another application\'s database: give the service a database of its own',
    );
  }
}

/**
 * Brings a database to SCHEMA_VERSION in one transaction. `schemaSql` is applied first: on a new
 * database it is the whole schema; on an older one it adds what is new and harmless.
 */
export function migrate(db: Db, schemaSql: string): void {
  const current = db.pragma('user_version', { simple: true }) as number;
  // A version without the service's schema is another application's numbering, which stamping
  // ours over would corrupt.
  const ours = holdsServiceSchema(db);
  if (current !== 0 && !ours) {
    throw new Error(
      `worker-task-api: the database has user_version ${current} but none of this service's tables; ` +
        'it looks like another application\'s database: give the service a database of its own',
    );
  }
  refuseNewer(current);
  if (current === SCHEMA_VERSION) {
    db.exec(schemaSql);
    return;
  }
  db.transaction(() => {
    // Judged again under the write lock: another process may have created the schema, or
    // migrated the file (to this version or a newer one), since they were read.
    const locked = db.pragma('user_version', { simple: true }) as number;
    refuseNewer(locked);
    if (!holdsServiceSchema(db)) refuseTakenNames(db, schemaSql);
    const fresh = (db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table'").get() as { n: number }).n === 0;
    // CREATE TRIGGER IF NOT EXISTS keeps an older body: the schema's triggers are made anew, so
    // a release that changes one needs no migration of its own for it. Dropped before the
    // migrations (an old body naming a column could stop one that alters the table) and made
    // again after them (one that rebuilds a table drops its triggers with it).
    const dropTriggers = () => {
      for (const [, name] of schemaSql.matchAll(/CREATE TRIGGER IF NOT EXISTS (\w+)/g)) db.exec(`DROP TRIGGER IF EXISTS ${name}`);
    };
    dropTriggers();
    db.exec(schemaSql);
    // A database created before versioning is version 1; a new one already has everything.
    const from = fresh ? SCHEMA_VERSION : Math.max(locked, 1);
    for (const migration of MIGRATIONS) if (migration.version > from) migration.apply(db);
    dropTriggers();
    db.exec(schemaSql);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
}

function refuseNewer(version: number): void {
  if (version > SCHEMA_VERSION) {
    throw new Error(
      `worker-task-api: the database has schema version ${version}, newer than this release's ${SCHEMA_VERSION}; ` +
        'run a newer worker-task-api on it',
    );
  }
}
