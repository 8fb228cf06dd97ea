import t from 'tap';
import type { Harness, CallResult } from '../helpers/service.js';
import { baseFixture, LEASE_11, TEST_NOW, TOKENS, DESK_TOKENS, withDesks } from '../helpers/fixture.js';
import { adaWorld, API, etagOf, expectCode, workspaceVersion } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';

/**
 * The four Incoming actions (spec endpoint rules, contract 1 steps 7-9, contract 3, 4 and 8):
 * scope, Idempotency-Key, If-Match as the quoted Incoming revision, replays, the recipient rule,
 * every transition and the capacity an accepted item reserves. Grace (staff 11) acts through her
 * desk client; the tests run on Monday 16 November 2026 at 10:00 London (GMT).
 */

const GRACE_TOKEN: string = DESK_TOKENS.grace;
const GRACE_READER: string = DESK_TOKENS.graceReader;
const GAIL_TOKEN: string = DESK_TOKENS.gail;
const MINUTE = 60_000;
const NOW_UTC = '2026-11-16T10:00:00.000Z';
const QUOTED_UUID = /^"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"$/;

type Action = 'start' | 'plan' | 'reassign' | 'complete';
type Lifecycle = 'floating' | 'planned' | 'inprogress' | 'completed';

function world(): Harness {
  return adaWorld({ fixture: withDesks(baseFixture()) });
}

interface Created {
  stageId: number;
  incomingId: number;
}

async function ask(h: Harness, taskId = 1, body: Record<string, unknown> = {}, token?: string): Promise<Created> {
  const response = await h.call('POST', `${API}/tasks/${taskId}/human-requests`, {
    headers: { 'if-match': await etagOf(h, taskId, token) },
    body: { humanAssigneeId: 11, title: `Help with task ${taskId}`, estimatedMinutes: 30, ...body },
    ...(token === undefined ? {} : { token }),
  });
  if (response.status !== 201) throw new Error(`ask gave ${response.status} ${response.text}`);
  const stageId = response.json.id as number;
  const read = await h.call('GET', `${API}/human-requests/${stageId}`, token === undefined ? {} : { token });
  return { stageId, incomingId: read.json.incomingId };
}

/** The Incoming item as `token` lists it (every lifecycle), or undefined. */
async function item(h: Harness, incomingId: number, token = GRACE_TOKEN) {
  const list = await h.call('GET', `${API}/incoming?includeAccepted=true`, { token });
  return list.json.find((entry: { id: number }) => entry.id === incomingId);
}

/** The stored row, for values the recipient can no longer list (after a reassign). */
function row(h: Harness, incomingId: number) {
  return h.db.prepare('SELECT lifecycle, recipient_id AS recipientId, revision, actual_effort_minutes AS effort FROM incoming_items WHERE id = ?')
    .get(incomingId) as { lifecycle: Lifecycle; recipientId: number; revision: string; effort: number | null };
}

let keys = 0;
const nextKey = () => `incoming-${(keys += 1)}`;

interface ActOptions {
  token?: string;
  /** null: no If-Match; undefined: the current etag. */
  ifMatch?: string | null;
  /** null: no Idempotency-Key; undefined: a fresh one. */
  key?: string | null;
  body?: unknown;
}

async function act(h: Harness, incomingId: number, action: Action, options: ActOptions = {}): Promise<CallResult> {
  const token = options.token ?? GRACE_TOKEN;
  const headers: Record<string, string> = {};
  const ifMatch = options.ifMatch === undefined ? `"${row(h, incomingId).revision}"` : options.ifMatch;
  if (ifMatch !== null) headers['if-match'] = ifMatch;
  const key = options.key === undefined ? nextKey() : options.key;
  if (key !== null) headers['idempotency-key'] = key;
  const body = options.body === undefined ? (action === 'start' ? undefined : action === 'complete' ? {} : undefined) : options.body;
  return h.call('POST', `${API}/incoming/${incomingId}/${action}`, { token, headers, ...(body === undefined ? {} : { body }) });
}

const BODIES: Record<Action, unknown> = {
  start: {},
  plan: { plannedStart: '2026-11-17T09:00:00' },
  reassign: { assigneeId: 12 },
  complete: { response: 'Done' },
};

/** An item of Grace's brought to `lifecycle` through the API. */
async function itemIn(h: Harness, lifecycle: Lifecycle, taskId = 1): Promise<Created> {
  const created = await ask(h, taskId);
  const action = ({ floating: null, planned: 'plan', inprogress: 'start', completed: 'complete' } as const)[lifecycle];
  if (action !== null) {
    const response = await act(h, created.incomingId, action, { body: BODIES[action] });
    if (response.status !== 204) throw new Error(`${action} gave ${response.status} ${response.text}`);
  }
  return created;
}

t.test('tasks:update is required for every action (403 permission_denied)', async (t) => {
  const h = world();
  const { incomingId } = await ask(h);
  for (const action of ['start', 'plan', 'reassign', 'complete'] as const) {
    expectProblem(t, await act(h, incomingId, action, { token: GRACE_READER, body: BODIES[action] }), 'permission_denied', action);
  }
  t.equal(row(h, incomingId).lifecycle, 'floating', 'nothing happened');
});

t.test('Idempotency-Key is required (422 idempotency_key_required), before If-Match', async (t) => {
  const h = world();
  const { incomingId } = await ask(h);
  for (const action of ['start', 'plan', 'reassign', 'complete'] as const) {
    expectProblem(t, await act(h, incomingId, action, { key: null, body: BODIES[action] }), 'idempotency_key_required', `${action} without a key`);
    expectProblem(t, await act(h, incomingId, action, { key: 'no spaces', body: BODIES[action] }), 'idempotency_key_required', `${action} with a malformed key`);
    expectProblem(t, await act(h, incomingId, action, { key: 'k'.repeat(101), body: BODIES[action] }), 'idempotency_key_required', `${action} with a 101-character key`);
    expectProblem(t, await act(h, incomingId, action, { key: null, ifMatch: null, body: BODIES[action] }), 'idempotency_key_required', `${action} without key or If-Match`);
  }
  t.equal(row(h, incomingId).lifecycle, 'floating');
});

t.test('If-Match is the quoted Incoming revision: missing 428, malformed 412, stale 412 with the current ETag', async (t) => {
  const h = world();
  const { incomingId } = await ask(h);
  const first = row(h, incomingId).revision;
  const taskEtag = await etagOf(h, 1);

  expectProblem(t, await act(h, incomingId, 'start', { ifMatch: null }), 'precondition_required', 'missing');
  for (const [label, value] of [
    ['an unquoted UUID', first], ['*', '*'], ['a task ETag', taskEtag], ['a weak tag', `W/"${first}"`],
    ['a quoted non-UUID', '"not-a-uuid"'], ['two tags', `"${first}", "${first}"`],
  ] as const) {
    const response = await act(h, incomingId, 'start', { ifMatch: value });
    expectProblem(t, response, 'stale_update', label);
    t.equal(response.headers['etag'], `"${first}"`, `${label}: the 412 carries the current revision`);
  }
  const upper = await act(h, incomingId, 'plan', { ifMatch: `"${first.toUpperCase()}"`, body: BODIES.plan });
  t.equal(upper.status, 204, 'UUID case does not matter');
  const second = row(h, incomingId).revision;
  t.not(second, first, 'a new revision');

  const stale = await act(h, incomingId, 'start', { ifMatch: `"${first}"` });
  expectProblem(t, stale, 'stale_update', 'the revision before the last change');
  t.equal(stale.headers['etag'], `"${second}"`, 'the stale 412 carries the current quoted revision');
  t.equal(row(h, incomingId).lifecycle, 'planned', 'the stale start did nothing');

  // Staleness is checked before the state rule: a stale revision on a completed item is 412, not 409.
  const third = await act(h, incomingId, 'complete', { body: {} });
  t.equal(third.status, 204);
  expectProblem(t, await act(h, incomingId, 'complete', { ifMatch: `"${second}"`, body: {} }), 'stale_update', 'stale on a completed item');
});

t.test('every change makes a new revision, returned as the ETag of the 204 and in the list', async (t) => {
  const h = world();
  const { incomingId, stageId } = await ask(h);
  const seen = new Set<string>([(await item(h, incomingId)).etag]);
  for (const [action, body] of [['plan', BODIES.plan], ['plan', { plannedStart: '2026-11-18T09:00:00' }], ['start', undefined], ['complete', { response: 'ok' }]] as const) {
    const response = await act(h, incomingId, action, body === undefined ? {} : { body });
    t.equal(response.status, 204, action);
    t.equal(response.text, undefined, `${action}: no body`);
    const etag = response.headers['etag'] as string;
    t.match(etag, QUOTED_UUID, `${action}: ETag is a quoted UUID`);
    t.notOk(seen.has(etag), `${action}: a new revision`);
    seen.add(etag);
    t.equal((await item(h, incomingId)).etag, etag, `${action}: the list shows the same etag`);
    const detail = (await h.call('GET', `${API}/human-requests/${stageId}`)).json;
    t.equal(`"${detail.incomingRevision}"`, etag, `${action}: the HumanRequest shows the bare revision`);
  }
});

t.test('a replay with the same key returns the stored 204 and applies nothing twice', async (t) => {
  const h = world();
  const { incomingId } = await ask(h);
  const original = await act(h, incomingId, 'start', { key: 'start-once' });
  t.equal(original.status, 204);
  const version = workspaceVersion(h);
  const actualStart = (await item(h, incomingId)).actualStartUtc;

  h.clock.advance(5 * MINUTE);
  const startedRevision = row(h, incomingId).revision;
  const replay = await act(h, incomingId, 'start', { key: 'start-once', ifMatch: original.headers['etag'] as string });
  t.equal(replay.status, 204, 'replayed, not 409 incoming_state_conflict');
  t.equal(replay.headers['idempotent-replayed'], 'true');
  t.equal(replay.headers['etag'], original.headers['etag'], 'the stored ETag');
  t.equal(workspaceVersion(h), version, 'no second bump');
  t.equal(row(h, incomingId).revision, startedRevision, 'no new revision');
  t.equal((await item(h, incomingId)).actualStartUtc, actualStart, 'actualStartUtc unchanged');

  // Later changes make the stored If-Match stale; a replay still answers once it is well-formed.
  const completed = await act(h, incomingId, 'complete', { key: 'complete-once', body: { response: 'first' } });
  t.equal(completed.status, 204);
  const replayStale = await act(h, incomingId, 'start', { key: 'start-once', ifMatch: original.headers['etag'] as string });
  t.equal(replayStale.status, 204, 'a stale If-Match still replays');
  const replayComplete = await act(h, incomingId, 'complete', { key: 'complete-once', ifMatch: `"${startedRevision}"`, body: { response: 'first' } });
  t.equal(replayComplete.status, 204, 'complete replayed');
  t.equal((await item(h, incomingId)).response, 'first');

  expectProblem(t, await act(h, incomingId, 'start', { key: 'start-once', ifMatch: null }), 'precondition_required', 'replay without If-Match');
  expectProblem(t, await act(h, incomingId, 'start', { key: 'start-once', ifMatch: '*' }), 'stale_update', 'replay with a malformed If-Match');
  expectProblem(t, await act(h, incomingId, 'complete', { key: 'complete-once', body: { response: 'second' } }), 'idempotency_conflict', 'same key, other body');
  const other = await ask(h, 2);
  expectProblem(t, await act(h, other.incomingId, 'start', { key: 'start-once' }), 'idempotency_conflict', 'same key, other item');
  t.equal(row(h, other.incomingId).lifecycle, 'floating');
});

t.test('Incoming actions take no task claim: a live lease on the originating task does not matter', async (t) => {
  const h = world();
  const asked = await h.call('POST', `${API}/tasks/11/human-requests`, {
    headers: { 'if-match': await etagOf(h, 11), 'x-task-claim': LEASE_11 },
    body: { humanAssigneeId: 11, title: 'On the claimed task', estimatedMinutes: 30 },
  });
  t.equal(asked.status, 201);
  const incomingId = (await h.call('GET', `${API}/human-requests/${asked.json.id}`)).json.incomingId as number;
  t.equal((await act(h, incomingId, 'start')).status, 204, 'no X-Task-Claim needed');
  const sent = await h.call('POST', `${API}/incoming/${incomingId}/complete`, {
    token: GRACE_TOKEN,
    headers: { 'if-match': `"${row(h, incomingId).revision}"`, 'idempotency-key': nextKey(), 'x-task-claim': '2b1f4c3d-5e6f-4a7b-8c9d-0e1f2a3b4c5d' },
    body: { response: 'ok' },
  });
  t.equal(sent.status, 204, 'a stray X-Task-Claim is not a task write header here');
});

t.test('items of another recipient or organisation are 404 incoming_not_found', async (t) => {
  const h = world();
  const { incomingId } = await ask(h);
  const globex = await ask(h, 90, { humanAssigneeId: 21 }, TOKENS.otherOrg);
  const revision = `"${row(h, incomingId).revision}"`;
  for (const [token, who] of [[TOKENS.ada, 'Ada, the requester'], [TOKENS.bob, 'Bob'], [TOKENS.otherOrg, 'Gus of Globex'], [GAIL_TOKEN, 'Gail of Globex']] as const) {
    expectProblem(t, await act(h, incomingId, 'start', { token, ifMatch: revision }), 'incoming_not_found', who);
  }
  expectProblem(t, await act(h, globex.incomingId, 'start'), 'incoming_not_found', "Grace on Gail's item");
  expectProblem(t, await act(h, 999999, 'start', { ifMatch: revision }), 'incoming_not_found', 'a missing item');
  expectProblem(t, await act(h, globex.stageId, 'start', { ifMatch: revision }), 'incoming_not_found', 'a stage id (not an Incoming id)');
  expectProblem(t, await act(h, incomingId, 'start', { token: TOKENS.identityOnly, ifMatch: revision }), 'permission_denied', 'identity-only');
  t.equal(row(h, incomingId).lifecycle, 'floating');
  t.equal((await act(h, globex.incomingId, 'start', { token: GAIL_TOKEN })).status, 204, 'Gail can act on hers');
});

t.test('start: floating or planned to inprogress with actualStartUtc now; nothing else changes', async (t) => {
  const h = world();
  const floating = await itemIn(h, 'floating', 1);
  const planned = await itemIn(h, 'planned', 2);
  h.clock.advance(7 * MINUTE);
  for (const created of [floating, planned]) {
    const before = await item(h, created.incomingId);
    const response = await act(h, created.incomingId, 'start', { body: {} });
    t.equal(response.status, 204);
    const after = await item(h, created.incomingId);
    t.strictSame(after, {
      ...before, status: 'inprogress', actualStartUtc: '2026-11-16T10:07:00.000Z', etag: response.headers['etag'],
      suggestedStart: null, suggestionReason: null,
    });
    t.equal(after.actualEffortMinutes, null, 'no actual effort inferred');
    t.equal(after.responseState, 'open');
  }
  // An absent body is fine too (EmptyRequest); members are not.
  const third = await itemIn(h, 'floating', 3);
  expectCode(t, await act(h, third.incomingId, 'start', { body: { now: true } }), 400, 'validation_failed', 'start with a member');
  t.equal((await act(h, third.incomingId, 'start')).status, 204, 'no body');
});

t.test('plan: floating or planned to planned at plannedStart (London input converted; nonexistent 422; bad 400)', async (t) => {
  const h = world();
  const { incomingId } = await ask(h);
  const plannedStart = async () => (await item(h, incomingId)).plannedStart;

  t.equal((await act(h, incomingId, 'plan', { body: { plannedStart: '2026-11-17T14:00:00' } })).status, 204, 'floating to planned');
  t.equal(await plannedStart(), '2026-11-17T14:00:00');
  t.equal((await item(h, incomingId)).status, 'planned');

  const cases: [string, string][] = [
    ['2026-11-17T14:00:00Z', '2026-11-17T14:00:00'],
    ['2026-11-17T15:30:00+01:00', '2026-11-17T14:30:00'],
    ['2027-06-01T09:00:00Z', '2027-06-01T10:00:00'],
    ['2027-06-01T09:00:00.250', '2027-06-01T09:00:00'],
    ['2027-03-28T02:30:00', '2027-03-28T02:30:00'],
    ['2027-10-31T01:30:00', '2027-10-31T01:30:00'],
  ];
  for (const [input, stored] of cases) {
    const response = await act(h, incomingId, 'plan', { body: { plannedStart: input } });
    t.equal(response.status, 204, `planned to planned with ${input}`);
    t.equal(await plannedStart(), stored, `${input} is stored as ${stored}`);
  }

  const version = workspaceVersion(h);
  expectProblem(t, await act(h, incomingId, 'plan', { body: { plannedStart: '2027-03-28T01:30:00' } }), 'invalid_field', 'nonexistent spring wall time');
  for (const bad of ['tomorrow', '2026-13-01T09:00:00', '2026-02-30T09:00:00', '2026-11-17 09:00:00', '2026-11-17T09:00', '']) {
    expectProblem(t, await act(h, incomingId, 'plan', { body: { plannedStart: bad } }), 'validation_failed', `bad plannedStart ${JSON.stringify(bad)}`);
  }
  for (const [label, body] of [['no plannedStart', {}], ['null plannedStart', { plannedStart: null }], ['a number', { plannedStart: 1 }], ['an extra member', { plannedStart: '2026-11-17T09:00:00', note: 'x' }]] as const) {
    expectProblem(t, await act(h, incomingId, 'plan', { body }), 'validation_failed', label);
  }
  expectProblem(t, await act(h, incomingId, 'plan'), 'validation_failed', 'no body');
  t.equal(workspaceVersion(h), version, 'refusals bump nothing');
  t.equal(await plannedStart(), '2027-10-31T01:30:00');
  t.equal((await item(h, incomingId)).actualStartUtc, null, 'planning starts nothing');
  t.equal((await item(h, incomingId)).actualEffortMinutes, null);
});

t.test('plan: a plannedStart in the past is taken, and start keeps it', async (t) => {
  const h = world();
  const { incomingId } = await ask(h);
  t.equal((await act(h, incomingId, 'plan', { body: { plannedStart: '2026-11-13T09:00:00' } })).status, 204, 'planned for last Friday');
  t.match(await item(h, incomingId), { status: 'planned', plannedStart: '2026-11-13T09:00:00' });
  t.equal((await act(h, incomingId, 'start')).status, 204);
  t.match(await item(h, incomingId), { status: 'inprogress', plannedStart: '2026-11-13T09:00:00', actualStartUtc: TEST_NOW });
});

t.test('reassign: floating only, to an active human or agent of the organisation; the old recipient loses it and the new one sees it', async (t) => {
  const h = world();
  const { incomingId, stageId } = await ask(h);
  const invalid: [number, string][] = [
    [13, 'an inactive human'], [14, 'an inactive agent'], [21, 'a human of another organisation'],
    [20, 'an agent of another organisation'], [30, 'a human of an inactive organisation'], [99999, 'an unknown staff member'],
    [1, 'a task id'], [stageId, 'the stage id'],
  ];
  for (const [assigneeId, label] of invalid) {
    expectProblem(t, await act(h, incomingId, 'reassign', { body: { assigneeId } }), 'human_assignee_invalid', label);
  }
  for (const [label, body] of [['assigneeId 0', { assigneeId: 0 }], ['assigneeId a string', { assigneeId: '12' }], ['no assigneeId', {}]] as const) {
    expectProblem(t, await act(h, incomingId, 'reassign', { body }), 'validation_failed', label);
  }

  const before = row(h, incomingId).revision;
  const version = workspaceVersion(h);
  const response = await act(h, incomingId, 'reassign', { body: { assigneeId: 12 } });
  t.equal(response.status, 204, 'to Bob, an active agent');
  t.equal(response.headers['etag'], `"${row(h, incomingId).revision}"`);
  t.not(row(h, incomingId).revision, before);
  t.equal(workspaceVersion(h), version + 1);
  t.equal(await item(h, incomingId), undefined, 'Grace no longer lists it');
  expectProblem(t, await act(h, incomingId, 'start'), 'incoming_not_found', 'Grace acts on it');
  const bobs = await item(h, incomingId, TOKENS.bob);
  t.match(bobs, { id: incomingId, status: 'floating', requester: 'Ada' }, 'Bob lists it');
  const detail = (await h.call('GET', `${API}/human-requests/${stageId}`)).json;
  t.match(detail, { assignedHumanId: 12, assignedHumanName: 'Bob', lifecycle: 'floating' });

  // Back to a human: Bob hands it to Grace.
  t.equal((await act(h, incomingId, 'reassign', { token: TOKENS.bob, body: { assigneeId: 11 } })).status, 204, 'Bob reassigns to Grace');
  t.ok(await item(h, incomingId), 'Grace has it again');
  t.equal(await item(h, incomingId, TOKENS.bob), undefined);
  t.equal((await act(h, incomingId, 'reassign', { body: { assigneeId: 10 } })).status, 204, 'to Ada, the requesting agent');
});

t.test('complete: any lifecycle but completed, storing the response (optional, null allowed), responded now', async (t) => {
  const h = world();
  const floating = await itemIn(h, 'floating', 1);
  const planned = await itemIn(h, 'planned', 2);
  const started = await itemIn(h, 'inprogress', 3);
  const noBody = await itemIn(h, 'floating', 4);
  h.clock.advance(20 * MINUTE);
  const completedAt = '2026-11-16T10:20:00.000Z';

  const cases: [Created, unknown, string | null, string | null][] = [
    [floating, { response: 'Yes, go ahead' }, 'Yes, go ahead', null],
    [planned, { response: null }, null, null],
    [started, {}, null, NOW_UTC],
  ];
  for (const [created, body, response, actualStart] of cases) {
    const before = await item(h, created.incomingId);
    const answer = await act(h, created.incomingId, 'complete', { body });
    t.equal(answer.status, 204, `complete from ${before.status}`);
    const after = await item(h, created.incomingId);
    t.match(after, {
      status: 'completed', response, responseState: 'responded', actualStartUtc: actualStart, actualEffortMinutes: null,
      plannedStart: before.plannedStart, suggestedStart: null, suggestionReason: null,
    }, `after ${before.status}`);
    const detail = (await h.call('GET', `${API}/human-requests/${created.stageId}`)).json;
    t.match(detail, { lifecycle: 'completed', status: 'Done', response, responseState: 'responded', respondedAtUtc: completedAt, completedUtc: completedAt, actualEffortMinutes: null });
  }
  expectProblem(t, await act(h, noBody.incomingId, 'complete', { body: { response: 'x'.repeat(20001) } }), 'validation_failed', 'response over 20000');
  expectProblem(t, await act(h, noBody.incomingId, 'complete', { body: { response: 5 } }), 'validation_failed', 'response a number');
  expectProblem(t, await act(h, noBody.incomingId, 'complete', { body: { answer: 'x' } }), 'validation_failed', 'unknown member');
  t.equal((await act(h, noBody.incomingId, 'complete', { body: { response: 'y'.repeat(20000) } })).status, 204, '20000 characters');
});

t.test('every other transition is 409 incoming_state_conflict', async (t) => {
  const h = world();
  const planned = await itemIn(h, 'planned', 1);
  const started = await itemIn(h, 'inprogress', 2);
  const completed = await itemIn(h, 'completed', 3);
  const refused: [Created, Action, string][] = [
    [started, 'start', 'start on inprogress'],
    [completed, 'start', 'start on completed'],
    [started, 'plan', 'plan on inprogress'],
    [completed, 'plan', 'plan on completed'],
    [planned, 'reassign', 'reassign on planned'],
    [started, 'reassign', 'reassign on inprogress'],
    [completed, 'reassign', 'reassign on completed'],
    [completed, 'complete', 'complete on completed'],
  ];
  const version = workspaceVersion(h);
  for (const [created, action, label] of refused) {
    const revision = row(h, created.incomingId).revision;
    expectProblem(t, await act(h, created.incomingId, action, { body: BODIES[action] }), 'incoming_state_conflict', label);
    t.equal(row(h, created.incomingId).revision, revision, `${label}: the revision stays`);
  }
  t.equal(workspaceVersion(h), version, 'refusals bump nothing');
});

t.test('no actual effort is ever inferred: actualEffortMinutes stays null', async (t) => {
  const h = world();
  const { incomingId, stageId } = await ask(h, 1, { estimatedMinutes: 90 });
  await act(h, incomingId, 'plan', { body: { plannedStart: '2026-11-16T10:00:00' } });
  h.clock.advance(30 * MINUTE);
  await act(h, incomingId, 'start');
  h.clock.advance(3 * 60 * MINUTE);
  await act(h, incomingId, 'complete', { body: { response: 'Finished' } });
  t.equal((await item(h, incomingId)).actualEffortMinutes, null);
  t.equal((await h.call('GET', `${API}/human-requests/${stageId}`)).json.actualEffortMinutes, null);
  t.equal(row(h, incomingId).effort, null);
  const intervals = h.db.prepare('SELECT count(*) AS n FROM actual_intervals').get() as { n: number };
  t.equal(intervals.n, 1, 'only the fixture interval of task 6; no intervals were made up');
});

t.test('every action bumps the workspace version once: task ETags of the organisation go stale', async (t) => {
  const h = world();
  const { incomingId } = await ask(h);
  for (const [action, body] of [['plan', BODIES.plan], ['start', undefined], ['complete', BODIES.complete]] as const) {
    const version = workspaceVersion(h);
    const etag3 = await etagOf(h, 3);
    const response = await act(h, incomingId, action, body === undefined ? {} : { body });
    t.equal(response.status, 204);
    t.equal(workspaceVersion(h), version + 1, `${action}: version + 1`);
    t.not(await etagOf(h, 3), etag3, `${action}: task 3's ETag changed`);
    expectProblem(t, await h.call('PATCH', `${API}/tasks/3`, { headers: { 'if-match': etag3 }, body: { sequence: 6 } }), 'stale_update', `${action}: the old task ETag is stale`);
  }
  const other = await ask(h, 2);
  const version = workspaceVersion(h);
  await act(h, other.incomingId, 'reassign', { body: { assigneeId: 12 } });
  t.equal(workspaceVersion(h), version + 1, 'reassign: version + 1');
});

t.test('capacity: a planned item reserves from plannedStart, an in-progress one from now (seen in another floating item\'s suggestion)', async (t) => {
  const h = world();
  const probe = await ask(h, 1, { title: 'Probe', estimatedMinutes: 30 });
  const suggestion = async () => (await item(h, probe.incomingId)).suggestedStart;
  t.equal(await suggestion(), '2026-11-16T10:00:00', 'free now');

  const planned = await ask(h, 2, { title: 'Planned at 10:15', estimatedMinutes: 60 });
  t.equal(await suggestion(), '2026-11-16T10:00:00', 'a floating hour reserves nothing');
  await act(h, planned.incomingId, 'plan', { body: { plannedStart: '2026-11-16T10:15:00' } });
  t.equal(await suggestion(), '2026-11-16T11:15:00', '10:00-10:15 is too short; after the planned 10:15-11:15');
  await act(h, planned.incomingId, 'plan', { body: { plannedStart: '2026-11-16T14:00:00' } });
  t.equal(await suggestion(), '2026-11-16T10:00:00', 're-planned to 14:00: the morning is free again');

  const started = await ask(h, 3, { title: 'Started now', estimatedMinutes: 120 });
  h.clock.advance(10 * MINUTE);
  await act(h, started.incomingId, 'start');
  t.equal(await suggestion(), '2026-11-16T12:10:00', 'in progress from 10:10 for 120 minutes');
  h.clock.advance(50 * MINUTE);
  t.equal(await suggestion(), '2026-11-16T12:10:00', 'an hour later, the rest of it still runs to 12:10');
  await act(h, started.incomingId, 'complete', { body: { response: 'ok' } });
  t.equal(await suggestion(), '2026-11-16T11:00:00', 'completed: capacity is free from now (11:00)');

  await act(h, planned.incomingId, 'start');
  t.equal(await suggestion(), '2026-11-16T12:00:00', 'the planned hour started at 11:00 instead of 14:00');
});

t.test('INCOMING: complete without a response stores none, even after an earlier round had one', async (t) => {
  const h = world();
  const { stageId, incomingId } = await ask(h);
  const complete = async (body: Record<string, unknown>) => {
    const item = (await h.call('GET', `${API}/incoming?includeAccepted=true`, { token: GRACE_TOKEN })).json
      .find((entry: { id: number }) => entry.id === incomingId);
    return h.call('POST', `${API}/incoming/${incomingId}/complete`, {
      token: GRACE_TOKEN, headers: { 'if-match': item.etag, 'idempotency-key': `c-${Object.keys(body).length}-${Date.now()}` }, body,
    });
  };
  t.equal((await complete({ response: 'First answer' })).status, 204);
  const task = (await h.call('GET', `${API}/tasks/1`)).json;
  const revision = task.humanRequests.find((r: { stageId: number }) => r.stageId === stageId).incomingRevision;
  const reopened = await h.call('POST', `${API}/tasks/1/external-evaluation`, {
    headers: { 'if-match': task.etag, 'idempotency-key': 'keep-1' },
    body: { decision: 'keepwaiting', incomingId, revision },
  });
  t.equal(reopened.status, 204);
  t.equal((await complete({})).status, 204);
  const after = (await h.call('GET', `${API}/human-requests/${stageId}`)).json;
  t.equal(after.responseState, 'responded');
  t.equal(after.response, null, 'the old answer is not presented as the new one');
});
