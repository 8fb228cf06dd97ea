import { isScope, SCOPES, type Scope } from '../auth/scopes.js';
import { generateToken, hashToken } from '../auth/token.js';
import { INT32_MAX } from '../domain/limits.js';
import { knownOptions } from '../option-names.js';
import { answersEpochMs } from '../options.js';
import { claimStatements } from '../store/claims.js';
import { nextIdSql } from '../store/ids.js';
import { isDatabase, openDatabase, type Db } from '../store/open.js';
import { organisationStatements } from '../store/organisations.js';
import { systemClock, type Clock } from '../time/clock.js';

/** A refused administrative change; its message is meant for the operator as is. */
export class AdminError extends Error {
  override readonly name = 'AdminError';
}

/** An API client as the operator sees it: never its token or hash. */
export interface ClientSummary {
  readonly id: number;
  readonly organisationId: number;
  readonly name: string;
  readonly sponsorId: number;
  readonly resourceId: number | null;
  readonly isActive: boolean;
  /** Granted scopes in the spec's order. */
  readonly scopes: readonly Scope[];
}

/** What `create` needs; ids are checked against the database, scopes against the spec. */
export interface NewClient {
  readonly organisationId: number;
  readonly name: string;
  readonly sponsorId: number;
  readonly resourceId: number | null;
  /** Checked again at run time (`AdminError` for an unknown one), for callers without the types. */
  readonly scopes: readonly Scope[];
}

interface StaffRow {
  organisationId: number;
  kind: string;
  isActive: number;
}

interface ClientRow {
  id: number;
  organisationId: number;
  name: string;
  sponsorId: number;
  resourceId: number | null;
  isActive: number;
  scopes: string | null;
}

const CLIENT_COLUMNS = `
  c.id AS id, c.organisation_id AS organisationId, c.name AS name, c.sponsor_id AS sponsorId,
  c.resource_id AS resourceId, c.is_active AS isActive,
  (SELECT group_concat(scope, ' ') FROM api_client_scopes s WHERE s.client_id = c.id) AS scopes`;

function summary(row: ClientRow): ClientSummary {
  const granted = new Set((row.scopes ?? '').split(' '));
  return {
    id: row.id,
    organisationId: row.organisationId,
    name: row.name,
    sponsorId: row.sponsorId,
    resourceId: row.resourceId,
    isActive: row.isActive === 1,
    scopes: SCOPES.filter((scope) => granted.has(scope)),
  };
}

const NEW_CLIENT_MEMBERS: readonly string[] = ['organisationId', 'name', 'sponsorId', 'resourceId', 'scopes'];

const isId = (value: unknown): value is number => Number.isInteger(value) && (value as number) >= 1 && (value as number) <= INT32_MAX;

/**
 * What a JavaScript caller passes is checked before any rule is: a string id would otherwise be
 * compared with SQLite's affinities, and a missing member read as undefined.
 */
function checkNewClient(client: unknown): asserts client is NewClient {
  if (typeof client !== 'object' || client === null || Array.isArray(client)) throw new TypeError('adminClients: create() takes a client object');
  const given = client as Record<string, unknown>;
  const unknown = Object.keys(given).find((member) => !NEW_CLIENT_MEMBERS.includes(member));
  if (unknown !== undefined) throw new TypeError(`adminClients: create(): unknown member "${unknown}"`);
  if (!isId(given['organisationId'])) throw new TypeError('adminClients: create(): organisationId must be an integer from 1 to 2147483647');
  if (typeof given['name'] !== 'string') throw new TypeError('adminClients: create(): name must be a string');
  if (!isId(given['sponsorId'])) throw new TypeError('adminClients: create(): sponsorId must be an integer from 1 to 2147483647');
  if (!(given['resourceId'] === null || isId(given['resourceId']))) {
    throw new TypeError('adminClients: create(): resourceId must be an integer from 1 to 2147483647, or null for an identity-only client');
  }
  const scopes: unknown = given['scopes'];
  if (!(Array.isArray(scopes) && (scopes as readonly unknown[]).every((scope: unknown) => typeof scope === 'string'))) {
    throw new TypeError('adminClients: create(): scopes must be an array of strings');
  }
}

function checkClientId(id: unknown, method: 'rotate' | 'revoke'): asserts id is number {
  if (!isId(id)) throw new TypeError(`adminClients: ${method}(id): id must be an integer from 1 to 2147483647`);
}

/**
 * Operator commands on API clients (the command line's `client` subcommands, and the library's
 * way to issue credentials). A new or rotated token is returned once; only its SHA-256 hash is
 * written. `clock` times the leases a revocation releases.
 */
export function adminClients(database: Db, options: { readonly clock?: Clock } = {}) {
  if (!isDatabase(database)) throw new TypeError('adminClients: db must be an open better-sqlite3 Database');
  const { clock } = knownOptions(options, 'adminClients', ['clock']);
  if (clock !== undefined && !(typeof clock === 'object' && clock !== null && typeof (clock as { now?: unknown }).now === 'function' && answersEpochMs(clock as Clock))) {
    throw new TypeError('adminClients: options.clock must be an object with a now() method returning epoch milliseconds');
  }
  const now = (): number => Math.floor(((clock as Clock | undefined) ?? systemClock).now());
  // The schema, as for loadFixture: a new database gets its tables, an older one its upgrades.
  const { db } = openDatabase(database);
  const organisationById = db.prepare<[number], { isActive: number }>('SELECT is_active AS isActive FROM organisations WHERE id = ?');
  const staffById = db.prepare<[number], StaffRow>(
    'SELECT organisation_id AS organisationId, kind, is_active AS isActive FROM staff WHERE id = ?',
  );
  const nextId = db.prepare<[], { id: number }>(`SELECT ${nextIdSql('api_clients')} AS id`);
  const insertClient = db.prepare<[number, number, string, string, number, number | null]>(`
    INSERT INTO api_clients (id, organisation_id, name, token_hash, sponsor_id, resource_id, is_active)
    VALUES (?, ?, ?, ?, ?, ?, 1)`);
  const insertScope = db.prepare<[number, string]>('INSERT INTO api_client_scopes (client_id, scope) VALUES (?, ?)');
  const clientById = db.prepare<[number], ClientRow>(`SELECT ${CLIENT_COLUMNS} FROM api_clients c WHERE c.id = ?`);
  const allClients = db.prepare<[], ClientRow>(`SELECT ${CLIENT_COLUMNS} FROM api_clients c ORDER BY c.id`);
  const updateHash = db.prepare<[string, number]>('UPDATE api_clients SET token_hash = ? WHERE id = ?');
  const deactivate = db.prepare<[number]>('UPDATE api_clients SET is_active = 0 WHERE id = ?');
  const leases = claimStatements(db);
  const organisations = organisationStatements(db);

  function existing(id: number): ClientRow {
    const row = clientById.get(id);
    if (row === undefined) throw new AdminError(`no client ${id}`);
    return row;
  }

  // IMMEDIATE: each reads and then writes. Deferred, a server committing on the same file between
  // the two makes SQLite refuse the write at once (SQLITE_BUSY_SNAPSHOT), past any busy timeout.
  const create = db.transaction((client: NewClient): { client: ClientSummary; token: string } => {
    const name = client.name.trim();
    if (name === '') throw new AdminError('the client name must not be empty');
    const organisation = organisationById.get(client.organisationId);
    if (organisation === undefined) throw new AdminError(`no organisation ${client.organisationId}`);
    // Its clients are refused (401) while it is inactive: a token made now could not work.
    if (organisation.isActive !== 1) throw new AdminError(`organisation ${client.organisationId} is not active`);
    const sponsor = staffById.get(client.sponsorId);
    if (sponsor === undefined || sponsor.organisationId !== client.organisationId) {
      throw new AdminError(`sponsor ${client.sponsorId} is not a staff member of organisation ${client.organisationId}`);
    }
    if (sponsor.kind !== 'human') throw new AdminError(`sponsor ${client.sponsorId} is not a human`);
    if (sponsor.isActive !== 1) throw new AdminError(`sponsor ${client.sponsorId} is not active`);
    if (client.resourceId !== null) {
      const resource = staffById.get(client.resourceId);
      if (resource === undefined || resource.organisationId !== client.organisationId) {
        throw new AdminError(`resource ${client.resourceId} is not a staff member of organisation ${client.organisationId}`);
      }
      // Like an inactive sponsor: the credential is refused (401) while its resource is inactive.
      if (resource.isActive !== 1) throw new AdminError(`resource ${client.resourceId} is not active`);
    }
    // An identity-only client needs none (/identity takes no scope); a worker's client without one
    // could do nothing more, which is taken for a mistake.
    if (client.resourceId !== null && client.scopes.length === 0) throw new AdminError('a client with a resource needs at least one scope');
    for (const scope of client.scopes as readonly string[]) {
      if (!isScope(scope)) throw new AdminError(`unknown scope "${scope}" (scopes: ${SCOPES.join(', ')})`);
    }

    const id = nextId.get()?.id ?? 1;
    const token = generateToken();
    insertClient.run(id, client.organisationId, name, hashToken(token), client.sponsorId, client.resourceId);
    for (const scope of new Set(client.scopes)) insertScope.run(id, scope);
    return { client: summary(existing(id)), token };
  });

  const rotate = db.transaction((id: number): { client: ClientSummary; token: string } => {
    const row = existing(id);
    // Rotating must not quietly bring a revoked credential back to life.
    if (row.isActive !== 1) throw new AdminError(`client ${id} is revoked`);
    const token = generateToken();
    updateHash.run(hashToken(token), id);
    return { client: summary(row), token };
  });

  const revoke = db.transaction((id: number): { client: ClientSummary; wasActive: boolean; releasedLeases: number } => {
    const row = existing(id);
    deactivate.run(id);
    // Nobody else could use or release the lease, so it would hold the task until it expired.
    const releasedLeases = leases.releaseLiveOfClient(id, now());
    // A release is a change of the task (offers, ETags), as when a client releases it (contract 2).
    if (releasedLeases > 0) organisations.bumpWorkspaceVersion(row.organisationId);
    return { client: summary({ ...row, isActive: 0 }), wasActive: row.isActive === 1, releasedLeases };
  });

  return {
    /** Validates and inserts a client with a fresh token; returns the token (shown once). */
    create(client: NewClient): { client: ClientSummary; token: string } {
      checkNewClient(client);
      return create.immediate(client);
    },
    /** Replaces an active client's token; the old one stops working at once. */
    rotate(id: number): { client: ClientSummary; token: string } {
      checkClientId(id, 'rotate');
      return rotate.immediate(id);
    },
    /** Deactivates a client (idempotent) and releases its live leases; its token answers 401 from then on. */
    revoke(id: number): { client: ClientSummary; wasActive: boolean; releasedLeases: number } {
      checkClientId(id, 'revoke');
      return revoke.immediate(id);
    },
    /** Every client, by id. */
    list(): ClientSummary[] {
      return allClients.all().map(summary);
    },
  };
}

export type AdminClients = ReturnType<typeof adminClients>;
