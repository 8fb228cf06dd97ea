import t from 'tap';
import type { ErrorCode } from '../../lib/domain/errors.js';
import type { OperationSpec } from '../../lib/http/operations.js';
import { expectProblem } from '../helpers/expect-problem.js';
import { TOKENS } from '../helpers/fixture.js';
import type { CallResult } from '../helpers/service.js';
import type { TapTest } from '../helpers/api.js';
import {
  ADA_ONLY_TASKS, changedTables, CLIENT_OPERATIONS, databaseDigest, hasId, hostileWorld, send, validRequests, withoutScopeToken,
  type RequestTemplate,
} from './world.js';

/**
 * The authorisation matrix (spec "Authentication" 3-6, contract 1 steps 3, 5 and 7): every client
 * operation, sent as a request Ada's own client would have had accepted (real target, current
 * If-Match, well-formed Idempotency-Key, valid body), from each kind of caller that must be
 * refused. The control at the end sends the same requests as Ada, each in a fresh copy of the
 * world, to show that the caller is the only thing wrong with them.
 */

const world = await hostileWorld();
const { h, ids } = world;
const requests = await validRequests(world);
const before = databaseDigest(h.db);

function template(operation: OperationSpec): RequestTemplate {
  const found = requests.get(operation.operationId);
  if (found === undefined) throw new Error(`no request for ${operation.operationId}`);
  return found;
}

const label = (operation: OperationSpec) => `${operation.method} ${operation.path} (${operation.operationId})`;

const NOT_FOUND: Record<OperationSpec['target'], ErrorCode | null> = {
  task: 'task_not_found',
  'assistance-stage': 'request_not_found',
  incoming: 'incoming_not_found',
  none: null,
};

/** The ids a 200 list answer holds (tasks or Incoming items). */
function listedIds(response: CallResult): number[] {
  return (response.json as { id: number }[]).map((entry) => entry.id);
}

/**
 * The listed ids that are not the caller's own: tasks not of its organisation or not assigned to
 * its resource, Incoming items not addressed to it.
 */
function notOwn(operation: OperationSpec, response: CallResult, organisationId: number, resourceId: number): number[] {
  const incoming = operation.operationId === 'listIncoming';
  const own = incoming
    ? h.db.prepare('SELECT 1 FROM incoming_items WHERE id = ? AND organisation_id = ? AND recipient_id = ?')
    : h.db.prepare(`SELECT 1 FROM tasks JOIN task_assignments a ON a.task_id = tasks.id
        WHERE tasks.id = ? AND tasks.organisation_id = ? AND a.staff_id = ?`);
  return listedIds(response).filter((id) => own.get(id, organisationId, resourceId) === undefined);
}

/** The lists of a caller that has its own data in each: non-empty, and nothing but its own. */
async function expectOnlyOwnLists(t: TapTest, token: string, who: string, organisationId: number, resourceId: number, forbidden: readonly number[]) {
  for (const operation of CLIENT_OPERATIONS.filter((operation) => !hasId(operation) && operation.operationId !== 'getIdentity')) {
    const response = await send(h, template(operation), token);
    const what = `${label(operation)} as ${who}`;
    t.equal(response.status, 200, `${what}: 200`);
    t.ok(listedIds(response).length > 0, `${what}: its own work is listed (the list is not trivially empty)`);
    t.strictSame(notOwn(operation, response, organisationId, resourceId), [], `${what}: nothing that is not its own is listed`);
    const incoming = operation.operationId === 'listIncoming';
    const adas = listedIds(response).filter((id) => (incoming ? id === ids.incomingA || id === ids.incomingB : forbidden.includes(id)));
    t.strictSame(adas, [], `${what}: none of Ada's tasks, none of the Incoming items of Ada's requests`);
  }
}

t.test("MATRIX: another organisation's client gets not-found on every id-bearing route", async (t) => {
  for (const operation of CLIENT_OPERATIONS.filter(hasId)) {
    const code = NOT_FOUND[operation.target];
    if (code === null) throw new Error(`${operation.operationId} has an id but no target`);
    expectProblem(t, await send(h, template(operation), TOKENS.otherOrg), code, `${label(operation)} as gus-bot (organisation 2)`);
  }
});

t.test("MATRIX: another organisation's client sees only its own organisation on every route without an id", async (t) => {
  const identity = await send(h, template(CLIENT_OPERATIONS.find((operation) => operation.operationId === 'getIdentity')!), TOKENS.otherOrg);
  t.equal(identity.status, 200, 'GET /identity as gus-bot: 200');
  t.equal(identity.json.clientId, 105, 'GET /identity as gus-bot: its own client');
  t.strictSame(identity.json.organisation, { id: 2, name: 'Globex' }, 'GET /identity as gus-bot: its own organisation');
  const organisationOne = (h.db.prepare('SELECT id FROM tasks WHERE organisation_id = 1').all() as { id: number }[]).map((row) => row.id);
  await expectOnlyOwnLists(t, TOKENS.otherOrg, 'gus-bot (organisation 2)', 2, 20, organisationOne);
});

t.test('MATRIX: a client mapped to another resource gets task_not_owned on Ada\'s tasks and requests, incoming_not_found on her Incoming', async (t) => {
  for (const operation of CLIENT_OPERATIONS.filter(hasId)) {
    // Tasks and assistance stages of the caller's organisation that are not its work are 403;
    // an Incoming item addressed to someone else does not exist for the caller.
    const code: ErrorCode = operation.target === 'incoming' ? 'incoming_not_found' : 'task_not_owned';
    expectProblem(t, await send(h, template(operation), TOKENS.bob), code, `${label(operation)} as bob-bot (resource 12)`);
  }
});

t.test("MATRIX: a client mapped to another resource sees only its own work, none of Ada's, on the routes without an id", async (t) => {
  const identity = await send(h, template(CLIENT_OPERATIONS.find((operation) => operation.operationId === 'getIdentity')!), TOKENS.bob);
  t.equal(identity.status, 200, 'GET /identity as bob-bot: 200');
  t.strictSame(identity.json.resource, { id: 12, name: 'Bob' }, 'GET /identity as bob-bot: its own resource');
  await expectOnlyOwnLists(t, TOKENS.bob, 'bob-bot (resource 12)', 1, 12, ADA_ONLY_TASKS);
});

t.test("MATRIX: a client missing the operation's scope gets permission_denied on every operation that needs one", async (t) => {
  const scoped = CLIENT_OPERATIONS.filter((operation) => operation.scope !== null);
  // Only GET /identity needs no named scope (spec "Authentication" 5).
  t.strictSame(CLIENT_OPERATIONS.filter((operation) => operation.scope === null).map((operation) => operation.operationId), ['getIdentity']);
  for (const operation of scoped) {
    const scope = operation.scope!;
    expectProblem(t, await send(h, template(operation), withoutScopeToken(scope)), 'permission_denied', `${label(operation)} without ${scope}`);
  }
  // The further scope of a body member: PATCH with actualIntervals needs tasks:time too.
  const patch = template(CLIENT_OPERATIONS.find((operation) => operation.operationId === 'patchTask')!);
  const withIntervals: RequestTemplate = {
    ...patch,
    body: JSON.stringify({ actualIntervals: [{ staffMemberId: 10, start: '2026-11-16T08:00:00', end: '2026-11-16T09:00:00' }] }),
  };
  expectProblem(t, await send(h, withIntervals, withoutScopeToken('tasks:time')), 'permission_denied', 'PATCH /tasks/{id} with actualIntervals without tasks:time');
});

t.test('MATRIX: the read-only client gets permission_denied on every operation beyond tasks:read', async (t) => {
  for (const operation of CLIENT_OPERATIONS.filter((operation) => operation.scope !== null && operation.scope !== 'tasks:read')) {
    expectProblem(t, await send(h, template(operation), TOKENS.readOnly), 'permission_denied', `${label(operation)} as ada-reader`);
  }
});

t.test('MATRIX: the identity-only client gets permission_denied everywhere except GET /identity', async (t) => {
  for (const operation of CLIENT_OPERATIONS) {
    const response = await send(h, template(operation), TOKENS.identityOnly);
    if (operation.operationId === 'getIdentity') {
      t.equal(response.status, 200, `${label(operation)} as the identity-only client: 200`);
      t.equal(response.json.resource, null, `${label(operation)}: resource null`);
      continue;
    }
    // It holds tasks:read, so even the reads fail only because it has no resource.
    expectProblem(t, response, 'permission_denied', `${label(operation)} as the identity-only client`);
  }
});

t.test('MATRIX: the revoked client gets authentication_failed with WWW-Authenticate: Bearer everywhere', async (t) => {
  for (const operation of CLIENT_OPERATIONS) {
    const response = await send(h, template(operation), TOKENS.revoked);
    expectProblem(t, response, 'authentication_failed', `${label(operation)} as the revoked client`);
    t.equal(response.headers['www-authenticate'], 'Bearer', `${label(operation)}: WWW-Authenticate: Bearer`);
  }
});

t.test('MATRIX: no, an unknown or an inactive credential gets authentication_failed with WWW-Authenticate: Bearer everywhere', async (t) => {
  const credentials: [string, string | null][] = [
    ['no credential', null],
    ['an unknown token', 'wta_test_nobody_at_all'],
    ['an inactive sponsor', TOKENS.inactiveSponsor],
    ['an inactive resource', TOKENS.inactiveResource],
    ['an inactive organisation', TOKENS.inactiveOrg],
  ];
  for (const [what, token] of credentials) {
    for (const operation of CLIENT_OPERATIONS) {
      const response = await send(h, template(operation), token);
      expectProblem(t, response, 'authentication_failed', `${label(operation)} with ${what}`);
      t.equal(response.headers['www-authenticate'], 'Bearer', `${label(operation)} with ${what}: WWW-Authenticate: Bearer`);
    }
  }
});

t.test('MATRIX: the refused calls wrote nothing (every table is unchanged)', async (t) => {
  const after = databaseDigest(h.db);
  t.strictSame(changedTables(before, after), [], 'no table changed');
  t.strictSame(after, before, 'digests equal');
  const receipts = h.db.prepare("SELECT count(*) AS n FROM idempotency_receipts WHERE key LIKE 'matrix-%'").get() as { n: number };
  t.equal(receipts.n, 0, 'no receipt was stored for any matrix key');
});

t.test('MATRIX CONTROL: every request of the matrix is accepted from Ada\'s own client', async (t) => {
  for (const operation of CLIENT_OPERATIONS) {
    // A fresh copy per operation: one write would make the next request's If-Match stale.
    const fresh = await hostileWorld();
    const same = (await validRequests(fresh)).get(operation.operationId)!;
    const untouched = databaseDigest(fresh.h.db);
    const response = await send(fresh.h, same, TOKENS.ada);
    t.equal(response.status, operation.success.status, `${label(operation)} as ada-bot: ${operation.success.status} (${response.text?.slice(0, 120) ?? ''})`);
    t.equal(response.headers['idempotent-replayed'], undefined, `${label(operation)}: not a replay`);
    if (operation.method !== 'GET') {
      t.notSame(changedTables(untouched, databaseDigest(fresh.h.db)), [], `${label(operation)}: the accepted write changed the database`);
    }
    fresh.h.service.close();
  }
});
