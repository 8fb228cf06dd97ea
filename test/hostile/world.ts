import { createHash } from 'node:crypto';
import type Database from 'better-sqlite3';
import type { Scope } from '../../lib/auth/scopes.js';
import { SCOPES } from '../../lib/auth/scopes.js';
import { BASE_PATH, OPERATIONS, type OperationSpec } from '../../lib/http/operations.js';
import { harness, type CallResult, type Harness } from '../helpers/service.js';
import { ALL_SCOPES, baseFixture, LEASE_11, TOKENS, type FixtureShape } from '../helpers/fixture.js';

/**
 * The world the hostile tests share: the shared test world plus desk clients for the humans Grace
 * (organisation 1) and Gail (organisation 2), so assistance requests can be answered and handed
 * on through the API; for every scope, a client of Ada's resource holding every scope but that
 * one; and a waiting task each for Bob and Gus. On top of the fixture, requests made through the
 * API give every id-bearing route a real target of Ada's in organisation 1, and give Bob and Gus
 * an Incoming item of their own.
 */

/** Grace's desk client (resource 11, the human of organisation 1). */
export const GRACE = 'wta_test_hostile_grace_desk';
/** Gail's desk client (resource 21, the human of organisation 2). */
export const GAIL = 'wta_test_hostile_gail_desk';

/** A client of Ada's resource (10) with every scope except `scope`. */
export function withoutScopeToken(scope: Scope): string {
  return `wta_test_ada_without_${scope.replace(':', '_')}`;
}

export function hostileFixture(): FixtureShape {
  const fixture = baseFixture();
  fixture.clients.push({
    id: 110, organisationId: 1, name: 'grace-desk', token: GRACE, sponsorId: 11, resourceId: 11, isActive: true, scopes: [...ALL_SCOPES],
  });
  fixture.clients.push({
    id: 111, organisationId: 2, name: 'gail-desk', token: GAIL, sponsorId: 21, resourceId: 21, isActive: true, scopes: [...ALL_SCOPES],
  });
  // Waiting work for Bob and for Gus, so every list of theirs has something of their own in it.
  // (Ids below 90 keep the assistance stages the set-up makes at 91 and up.)
  fixture.tasks.push(
    { id: 80, projectId: 9, title: 'Globex waits', sequence: 1, estimatedMinutes: 30, isWaiting: true, assignees: [{ staffMemberId: 20 }] },
    { id: 81, projectId: 1, title: 'Bob waits', sequence: 70, estimatedMinutes: 30, isWaiting: true, assignees: [{ staffMemberId: 12 }] },
  );
  SCOPES.forEach((scope, index) => {
    fixture.clients.push({
      id: 120 + index, organisationId: 1, name: `ada-without-${scope}`, token: withoutScopeToken(scope), sponsorId: 11, resourceId: 10,
      isActive: true, scopes: ALL_SCOPES.filter((granted) => granted !== scope),
    });
  });
  return fixture;
}

/** Ids of the targets the API set-up made (all in organisation 1 except Gus's). */
export interface WorldIds {
  /** An assistance stage raised by Ada from task 3; its Incoming item (for Grace) is responded. */
  readonly stageA: number;
  /** Grace's Incoming item of stageA, in responseState responded (Ada can resolve it). */
  readonly incomingA: number;
  /** A second stage raised by Ada from task 3. */
  readonly stageB: number;
  /** The Incoming item of stageB, reassigned by Grace to Ada: floating, addressed to Ada. */
  readonly incomingB: number;
  /** A third stage raised by Ada from task 3, whose Incoming item Grace handed to Bob. */
  readonly stageC: number;
  /** The Incoming item of stageC, addressed to Bob. */
  readonly incomingForBob: number;
  /** A stage raised by Gus (organisation 2) from task 90, whose Incoming item Gail handed back to Gus. */
  readonly stageGus: number;
  /** The Incoming item of stageGus, addressed to Gus. */
  readonly incomingForGus: number;
}

export interface World {
  readonly h: Harness;
  readonly ids: WorldIds;
}

/** The task ids only Ada's resource (10) is assigned to in organisation 1. */
export const ADA_ONLY_TASKS: readonly number[] = [1, 2, 3, 5, 6, 8, 9, 10, 11];

let keyCounter = 0;
const setupKey = (what: string) => `setup-${what}-${(keyCounter += 1)}`;

function must(response: CallResult, status: number, what: string): CallResult {
  if (response.status !== status) {
    throw new Error(`world set-up: ${what} gave ${response.status} ${response.text ?? ''} (expected ${status})`);
  }
  return response;
}

async function taskEtag(h: Harness, id: number, token: string = TOKENS.ada): Promise<string> {
  const response = must(await h.call('GET', `${BASE_PATH}/tasks/${id}`, { token }), 200, `GET /tasks/${id}`);
  return response.headers['etag'] as string;
}

async function incomingEtag(h: Harness, id: number, token: string): Promise<string> {
  const list = must(await h.call('GET', `${BASE_PATH}/incoming?includeAccepted=true`, { token }), 200, 'GET /incoming').json as {
    id: number;
    etag: string;
  }[];
  const item = list.find((entry) => entry.id === id);
  if (item === undefined) throw new Error(`world set-up: Incoming item ${id} is not addressed to this client`);
  return item.etag;
}

/**
 * A fresh in-memory service over the hostile fixture, with assistance requests made through the
 * API (all non-blocking, so the tasks they come from stay runnable). Ada asks Grace three times
 * from task 3: Grace answers the first, hands the second to Ada and the third to Bob. Gus asks
 * Gail from task 90, and Gail hands it back to Gus.
 */
export async function hostileWorld(): Promise<World> {
  const h = harness({ fixture: hostileFixture(), rateLimit: 1_000_000 });
  const ask = async (title: string, asker: string = TOKENS.ada, taskId = 3, humanId = 11) => {
    const created = must(
      await h.call('POST', `${BASE_PATH}/tasks/${taskId}/human-requests`, {
        token: asker,
        headers: { 'if-match': await taskEtag(h, taskId, asker), 'idempotency-key': setupKey('ask') },
        body: { humanAssigneeId: humanId, title, estimatedMinutes: 15, isBlocking: false },
      }),
      201,
      `POST /tasks/${taskId}/human-requests`,
    );
    const stageId = created.json.id as number;
    const detail = must(await h.call('GET', `${BASE_PATH}/human-requests/${stageId}`, { token: asker }), 200, 'GET /human-requests');
    return { stageId, incomingId: detail.json.incomingId as number };
  };
  const handOn = async (incomingId: number, human: string, assigneeId: number) =>
    must(
      await h.call('POST', `${BASE_PATH}/incoming/${incomingId}/reassign`, {
        token: human,
        headers: { 'if-match': await incomingEtag(h, incomingId, human), 'idempotency-key': setupKey('reassign') },
        body: { assigneeId },
      }),
      204,
      `reassign Incoming ${incomingId} to ${assigneeId}`,
    );

  const a = await ask('Which headline?');
  must(
    await h.call('POST', `${BASE_PATH}/incoming/${a.incomingId}/complete`, {
      token: GRACE,
      headers: { 'if-match': await incomingEtag(h, a.incomingId, GRACE), 'idempotency-key': setupKey('complete') },
      body: { response: 'Headline A' },
    }),
    204,
    'Grace completes the first item',
  );

  const b = await ask('Please take this over');
  await handOn(b.incomingId, GRACE, 10);
  const c = await ask('For Bob, really');
  await handOn(c.incomingId, GRACE, 12);
  const gus = await ask('Globex question', TOKENS.otherOrg, 90, 21);
  await handOn(gus.incomingId, GAIL, 20);

  return {
    h,
    ids: {
      stageA: a.stageId, incomingA: a.incomingId, stageB: b.stageId, incomingB: b.incomingId,
      stageC: c.stageId, incomingForBob: c.incomingId, stageGus: gus.stageId, incomingForGus: gus.incomingId,
    },
  };
}

/** One request, without its Authorization header. */
export interface RequestTemplate {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  /** JSON text, or undefined for no body. */
  readonly body: string | undefined;
}

/** The operations a client calls (every one but the anonymous OpenAPI document). */
export const CLIENT_OPERATIONS: readonly OperationSpec[] = OPERATIONS.filter((operation) => operation.caller !== 'anonymous');

/** Whether the operation's path has an `{id}`. */
export const hasId = (operation: OperationSpec): boolean => operation.path.includes('{id}');

/**
 * For every client operation, a request that Ada's client (100) would have accepted in this world
 * as it stands: a real target of Ada's, the current If-Match, a well-formed Idempotency-Key and a
 * valid body. Replacing the credential then makes the caller the only thing that can be wrong.
 */
export async function validRequests(world: World): Promise<Map<string, RequestTemplate>> {
  const { h, ids } = world;
  const version = (h.db.prepare('SELECT workspace_version AS v FROM organisations WHERE id = 1').get() as { v: number }).v;
  const etag = (task: number) => `"task-${task}-plan-${version}"`;
  // Checked against what Ada reads, so the requests below really are current.
  if ((await taskEtag(h, 1)) !== etag(1)) throw new Error('world: task ETag differs from the workspace version');
  const detailA = must(await h.call('GET', `${BASE_PATH}/human-requests/${ids.stageA}`, { token: TOKENS.ada }), 200, 'GET stageA').json;
  const revisionA = detailA.incomingRevision as string;
  const etagB = await incomingEtag(h, ids.incomingB, TOKENS.ada);

  const json = { 'content-type': 'application/json' };
  const interval = { staffMemberId: 10, start: '2026-11-16T08:00:00', end: '2026-11-16T09:00:00' };
  const bodies: Record<string, { id?: number; ifMatch?: string; body?: unknown; query?: string }> = {
    getIdentity: {},
    listAvailableTasks: {},
    listWaitingTasks: {},
    getTask: { id: 1 },
    patchTask: { id: 1, ifMatch: etag(1), body: { sequence: 11, description: 'changed by the matrix' } },
    replaceActualEffort: { id: 1, ifMatch: etag(1), body: { actualIntervals: [interval] } },
    appendNote: { id: 1, ifMatch: etag(1), body: { text: 'A note from the matrix' } },
    claimTask: { id: 1, ifMatch: etag(1), body: {} },
    renewClaim: { id: 11, ifMatch: etag(11), body: { token: LEASE_11 } },
    releaseClaim: { id: 11, ifMatch: etag(11), body: { token: LEASE_11 } },
    createHumanRequest: { id: 1, ifMatch: etag(1), body: { humanAssigneeId: 11, title: 'Matrix question', estimatedMinutes: 5, isBlocking: false } },
    getHumanRequest: { id: ids.stageA },
    evaluateExternal: { id: 3, ifMatch: etag(3), body: { decision: 'resolve', incomingId: ids.incomingA, revision: revisionA } },
    listIncoming: { query: '?includeAccepted=true' },
    startIncoming: { id: ids.incomingB, ifMatch: etagB, body: {} },
    planIncoming: { id: ids.incomingB, ifMatch: etagB, body: { plannedStart: '2026-11-17T10:00:00' } },
    reassignIncoming: { id: ids.incomingB, ifMatch: etagB, body: { assigneeId: 11 } },
    completeIncoming: { id: ids.incomingB, ifMatch: etagB, body: { response: 'Done by Ada' } },
  };

  const templates = new Map<string, RequestTemplate>();
  for (const operation of CLIENT_OPERATIONS) {
    const spec = bodies[operation.operationId];
    if (spec === undefined) throw new Error(`no matrix request for ${operation.operationId}`);
    const path = operation.path.replace('{id}', String(spec.id ?? ''));
    const headers: Record<string, string> = {};
    if (spec.ifMatch !== undefined) headers['if-match'] = spec.ifMatch;
    if (operation.idempotencyKey !== 'none') headers['idempotency-key'] = `matrix-${operation.operationId}`;
    if (spec.body !== undefined) Object.assign(headers, json);
    templates.set(operation.operationId, {
      method: operation.method,
      url: `${BASE_PATH}${path}${spec.query ?? ''}`,
      headers,
      body: spec.body === undefined ? undefined : JSON.stringify(spec.body),
    });
  }
  return templates;
}

/** Sends a template as the client with `token` (or with no credential when null). */
export function send(h: Harness, template: RequestTemplate, token: string | null): Promise<CallResult> {
  return h.call(template.method, template.url, {
    token,
    headers: { ...template.headers },
    ...(template.body === undefined ? {} : { raw: template.body }),
  });
}

/**
 * A digest of every table: per table, its row count and a SHA-256 over its rows (each row
 * serialised with its column names, the rows sorted), so any insert, update or delete shows.
 */
export function databaseDigest(db: Database.Database): Record<string, string> {
  const digest: Record<string, string> = {};
  for (const [name, statement] of tableReaders(db)) {
    const rows = statement.all() as Record<string, unknown>[];
    // Blobs serialise through Buffer#toJSON, so they are covered byte for byte too.
    const lines = rows.map((row) => JSON.stringify(row)).sort();
    digest[name] = `${rows.length}:${createHash('sha256').update(lines.join('\n')).digest('hex')}`;
  }
  return digest;
}

const readers = new WeakMap<Database.Database, [string, Database.Statement][]>();

/** One prepared `SELECT *` per table (the schema does not change while a test runs). */
function tableReaders(db: Database.Database): [string, Database.Statement][] {
  let found = readers.get(db);
  if (found === undefined) {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[];
    found = tables.map(({ name }) => [name, db.prepare(`SELECT * FROM "${name.replaceAll('"', '""')}"`)]);
    readers.set(db, found);
  }
  return found;
}

/** The table names whose digests differ (empty when the database is unchanged). */
export function changedTables(before: Record<string, string>, after: Record<string, string>): string[] {
  const names = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...names].filter((name) => before[name] !== after[name]).sort();
}
