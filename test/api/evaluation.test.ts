import t from 'tap';
import { baseFixture, TOKENS, type FixtureShape } from '../helpers/fixture.js';
import type { CallResult, Harness } from '../helpers/service.js';
import {
  adaWorld, addAssistance, API, bumpVersion, etagOf, expectCode, LEASE_11, readTask, workspaceVersion, ZERO_UUID,
  type TapTest,
} from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';

/**
 * POST /tasks/{id}/external-evaluation, part 1 (spec "ExternalEvaluation", contract 1, 2 and 8):
 * the task-write pipeline rules, the body shape of the four decision variants, and `acknowledge`.
 * Source changes are built in SQL, as the source-refresh feature does not exist yet.
 */

const RESPONDED_REVISION = '5a4e2c1d-8b7f-4e3a-9c6d-1f2e3d4c5b6a';

/** The shared world, with task 1 holding a responded (completed) Question, incoming 7. */
function world(fixture: FixtureShape = baseFixture()): Harness {
  const h = adaWorld({ fixture });
  addAssistance(h, {
    stageId: 500, taskId: 1, incomingId: 7, lifecycle: 'completed', responseState: 'responded', response: 'Go ahead',
    respondedUtc: '2026-11-16T09:30:00.000Z', completedUtc: '2026-11-16T09:30:00.000Z', revision: RESPONDED_REVISION,
  });
  return h;
}

/** A source item linked to `taskId` (once per item id) and one unacknowledged change of kind `kind` on it. */
function addSourceChange(h: Harness, taskId: number, kind: 'source' | 'reply' = 'source', incomingId: number | null = null): number {
  const itemId = `T-${taskId}`;
  h.db.prepare(`INSERT OR IGNORE INTO source_items (organisation_id, provider_key, item_id, title, has_baseline, is_available)
    VALUES (1, 'http', ?, ?, 1, 1)`).run(itemId, itemId);
  const item = (h.db.prepare("SELECT id FROM source_items WHERE provider_key = 'http' AND item_id = ?").get(itemId) as { id: number }).id;
  h.db.prepare('INSERT OR IGNORE INTO task_sources (task_id, source_item_id, position) VALUES (?, ?, 0)').run(taskId, item);
  const facts = (status: string) => JSON.stringify({ title: itemId, description: null, businessStatus: status });
  const result = h.db.prepare(`INSERT INTO source_changes (task_id, source_item_id, incoming_id, kind, before_facts, after_facts,
      response, author, occurred_utc, received_utc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
    .run(taskId, item, incomingId, kind, kind === 'source' ? facts('open') : null, kind === 'source' ? facts('in review') : null,
      kind === 'reply' ? 'Looks fine' : null, kind === 'reply' ? 'Grace' : null,
      Date.parse('2026-11-16T09:35:00.000Z'), Date.parse('2026-11-16T09:36:00.000Z'));
  return Number(result.lastInsertRowid);
}

function acknowledgedAt(h: Harness, changeId: number): number | null {
  return (h.db.prepare('SELECT acknowledged_utc AS at FROM source_changes WHERE id = ?').get(changeId) as { at: number | null }).at;
}

function itemState(h: Harness, incomingId: number) {
  return h.db.prepare(`SELECT lifecycle, response_state AS responseState, revision, details FROM incoming_items WHERE id = ?`)
    .get(incomingId) as { lifecycle: string; responseState: string; revision: string; details: string | null };
}

let keys = 0;
const nextKey = () => `eval-${(keys += 1)}`;

interface EvaluateOptions {
  token?: string;
  /** null: send no Idempotency-Key. */
  key?: string | null;
  /** null: send no If-Match; default: the task's current ETag as read by the same caller. */
  ifMatch?: string | null;
  claim?: string;
  /** Sent verbatim instead of `body`. */
  raw?: string;
}

async function evaluate(h: Harness, taskId: number, body: unknown, o: EvaluateOptions = {}): Promise<CallResult> {
  const headers: Record<string, string> = {};
  const key = o.key === undefined ? nextKey() : o.key;
  if (key !== null) headers['idempotency-key'] = key;
  const ifMatch = o.ifMatch === undefined ? await etagOf(h, taskId, o.token) : o.ifMatch;
  if (ifMatch !== null) headers['if-match'] = ifMatch;
  if (o.claim !== undefined) headers['x-task-claim'] = o.claim;
  if (o.raw !== undefined) headers['content-type'] = 'application/json';
  return h.call('POST', `${API}/tasks/${taskId}/external-evaluation`, {
    headers,
    ...(o.raw === undefined ? { body } : { raw: o.raw }),
    ...(o.token === undefined ? {} : { token: o.token }),
  });
}

const resolve7 = { decision: 'resolve', incomingId: 7, revision: RESPONDED_REVISION };

/** Nothing was applied: the responded item is as built and the workspace version did not move. */
function unchanged(t: TapTest, h: Harness, version: number, label: string): void {
  t.match(itemState(h, 7), { lifecycle: 'completed', responseState: 'responded', revision: RESPONDED_REVISION }, `${label}: item untouched`);
  t.equal(workspaceVersion(h), version, `${label}: version unchanged`);
}

// ---------------------------------------------------------------------------------------------
// Pipeline rules of a task write.

t.test('EVALUATION: without scope tasks:update the request is 403 permission_denied and nothing changes', async (t) => {
  const h = world();
  const version = workspaceVersion(h);
  const response = await evaluate(h, 1, resolve7, { token: TOKENS.readOnly });
  expectProblem(t, response, 'permission_denied');
  unchanged(t, h, version, 'read-only client');
});

t.test('EVALUATION: Idempotency-Key is required (422 idempotency_key_required when missing or malformed)', async (t) => {
  const h = world();
  const version = workspaceVersion(h);
  expectProblem(t, await evaluate(h, 1, resolve7, { key: null }), 'idempotency_key_required', 'missing');
  expectProblem(t, await evaluate(h, 1, resolve7, { key: 'has space' }), 'idempotency_key_required', 'malformed');
  expectProblem(t, await evaluate(h, 1, resolve7, { key: 'k'.repeat(101) }), 'idempotency_key_required', '101 characters');
  unchanged(t, h, version, 'no key');
});

t.test('EVALUATION: If-Match is the task ETag: missing 428, malformed or stale 412 with the current ETag', async (t) => {
  const h = world();
  expectProblem(t, await evaluate(h, 1, resolve7, { ifMatch: null }), 'precondition_required', 'missing');

  const current = await etagOf(h, 1);
  for (const [label, value] of [
    ['*', '*'],
    ['unquoted', current.slice(1, -1)],
    ['Incoming revision', `"${RESPONDED_REVISION}"`],
    ["another task's ETag", current.replace('task-1-', 'task-2-')],
  ] as const) {
    const response = await evaluate(h, 1, resolve7, { ifMatch: value });
    expectProblem(t, response, 'stale_update', label);
    t.equal(response.headers['etag'], current, `${label}: 412 carries the current ETag`);
  }

  bumpVersion(h); // an unrelated planning edit elsewhere in the organisation
  const fresh = await etagOf(h, 1);
  const stale = await evaluate(h, 1, resolve7, { ifMatch: current });
  expectProblem(t, stale, 'stale_update', 'stale');
  t.equal(stale.headers['etag'], fresh, 'stale: 412 carries the current ETag');
  unchanged(t, h, workspaceVersion(h), 'after the refusals');

  const ok = await evaluate(h, 1, resolve7, { ifMatch: fresh });
  t.equal(ok.status, 204, 'the current ETag is accepted');
  t.equal(ok.headers['etag'], await etagOf(h, 1), 'the 204 carries the new ETag');
});

t.test('EVALUATION: X-Task-Claim rules apply: a live lease needs its token (409 task_claimed without it)', async (t) => {
  const h = world();
  const change = addSourceChange(h, 11); // task 11 carries ada-bot's live lease until 10:10Z
  const acknowledge = { decision: 'acknowledge', eventId: change };
  expectProblem(t, await evaluate(h, 11, acknowledge), 'task_claimed', 'no header');
  expectProblem(t, await evaluate(h, 11, acknowledge, { claim: 'c8d0a0f4-2b51-4c5e-9a0b-7d3f1e2a4b5c' }), 'task_claimed', 'wrong token');
  expectProblem(t, await evaluate(h, 11, acknowledge, { claim: ZERO_UUID }), 'validation_failed', 'all-zero token');
  t.equal(acknowledgedAt(h, change), null, 'nothing acknowledged under the lease without its token');
  t.equal((await evaluate(h, 11, acknowledge, { claim: LEASE_11 })).status, 204, 'the lease token succeeds');
  t.not(acknowledgedAt(h, change), null, 'acknowledged');

  // Without a live lease any token sent is 409 claim_expired; no header is fine.
  expectProblem(t, await evaluate(h, 1, resolve7, { claim: LEASE_11 }), 'claim_expired', 'token without a live lease');
  t.equal((await evaluate(h, 1, resolve7)).status, 204, 'no lease, no header: fine');
});

t.test('EVALUATION: the target task must be owned: 404 task_not_found (missing, other organisation), 403 task_not_owned', async (t) => {
  const h = world();
  addAssistance(h, { stageId: 501, taskId: 7, incomingId: 8, lifecycle: 'completed', responseState: 'responded', revision: RESPONDED_REVISION });
  const version = workspaceVersion(h);
  const foreign = { decision: 'resolve', incomingId: 8, revision: RESPONDED_REVISION };
  expectProblem(t, await evaluate(h, 9999, foreign, { ifMatch: `"task-9999-plan-${version}"` }), 'task_not_found', 'missing task');
  expectProblem(t, await evaluate(h, 90, foreign, { ifMatch: `"task-90-plan-${version}"` }), 'task_not_found', 'Globex task');
  expectProblem(t, await evaluate(h, 7, foreign, { ifMatch: `"task-7-plan-${version}"` }), 'task_not_owned', "Bob's task");
  t.match(itemState(h, 8), { responseState: 'responded', revision: RESPONDED_REVISION }, "Bob's item untouched");
  t.equal(workspaceVersion(h), version, 'version unchanged');
});

// ---------------------------------------------------------------------------------------------
// Body shape (400 validation_failed before any target or business rule).

/** Each body must be a 400 that applies nothing. */
async function expectShapeRefused(t: TapTest, h: Harness, cases: readonly (readonly [string, unknown])[]) {
  const version = workspaceVersion(h);
  for (const [label, body] of cases) {
    expectCode(t, await evaluate(h, 1, body), 400, 'validation_failed', label);
  }
  unchanged(t, h, version, 'after the refusals');
}

t.test('EVALUATION: a body without decision, or with an unknown decision, is 400 validation_failed', async (t) => {
  const h = world();
  await expectShapeRefused(t, h, [
    ['{}', {}],
    ['no decision', { incomingId: 7, revision: RESPONDED_REVISION }],
    ['decision null', { decision: null, incomingId: 7, revision: RESPONDED_REVISION }],
    ['unknown decision', { decision: 'approve', incomingId: 7, revision: RESPONDED_REVISION }],
    ['case variant of a decision', { decision: 'Resolve', incomingId: 7, revision: RESPONDED_REVISION }],
    ['decision as an array', { decision: ['resolve'], incomingId: 7, revision: RESPONDED_REVISION }],
    ['a JSON array', [resolve7]],
  ]);
  expectCode(t, await evaluate(h, 1, undefined, { raw: 'null' }), 400, 'validation_failed', 'null body');
  expectCode(t, await evaluate(h, 1, undefined, {
    raw: `{"decision":"resolve","Decision":"resolve","incomingId":7,"revision":"${RESPONDED_REVISION}"}`,
  }), 400, 'validation_failed', 'duplicate decision (case variant)');
});

t.test('EVALUATION: each variant with a required member missing is 400 validation_failed', async (t) => {
  const h = world();
  const r = RESPONDED_REVISION;
  await expectShapeRefused(t, h, [
    ['acknowledge without eventId', { decision: 'acknowledge' }],
    ['resolve without revision', { decision: 'resolve', incomingId: 7 }],
    ['resolve without incomingId', { decision: 'resolve', revision: r }],
    ['keepwaiting without revision', { decision: 'keepwaiting', incomingId: 7 }],
    ['keepwaiting without incomingId', { decision: 'keepwaiting', revision: r }],
    ['followup without message', { decision: 'followup', incomingId: 7, revision: r }],
    ['followup without revision', { decision: 'followup', incomingId: 7, message: 'Which one?' }],
    ['followup without incomingId', { decision: 'followup', revision: r, message: 'Which one?' }],
  ]);
});

t.test('EVALUATION: each variant with an irrelevant or unknown member is 400 validation_failed', async (t) => {
  const h = world();
  const change = addSourceChange(h, 1);
  const r = RESPONDED_REVISION;
  await expectShapeRefused(t, h, [
    ['acknowledge + incomingId', { decision: 'acknowledge', eventId: change, incomingId: 7 }],
    ['acknowledge + revision', { decision: 'acknowledge', eventId: change, revision: r }],
    ['acknowledge + message', { decision: 'acknowledge', eventId: change, message: 'x' }],
    ['resolve + message', { decision: 'resolve', incomingId: 7, revision: r, message: 'Thanks' }],
    ['resolve + eventId', { decision: 'resolve', incomingId: 7, revision: r, eventId: change }],
    ['keepwaiting + eventId', { decision: 'keepwaiting', incomingId: 7, revision: r, eventId: change }],
    ['keepwaiting + message', { decision: 'keepwaiting', incomingId: 7, revision: r, message: 'Later' }],
    ['followup + eventId', { decision: 'followup', incomingId: 7, revision: r, message: 'Which?', eventId: change }],
    ['unknown member', { decision: 'resolve', incomingId: 7, revision: r, note: 'x' }],
    ['case variant of a member', { decision: 'resolve', incomingId: 7, Revision: r }],
  ]);
  t.equal(acknowledgedAt(h, change), null, 'the change is not acknowledged');
});

t.test('EVALUATION: eventId and incomingId must be integers >= 1 (0 is 400 validation_failed)', async (t) => {
  const h = world();
  const r = RESPONDED_REVISION;
  await expectShapeRefused(t, h, [
    ['eventId 0', { decision: 'acknowledge', eventId: 0 }],
    ['eventId -1', { decision: 'acknowledge', eventId: -1 }],
    ['eventId 1.5', { decision: 'acknowledge', eventId: 1.5 }],
    ['eventId as a string', { decision: 'acknowledge', eventId: '1' }],
    ['eventId null', { decision: 'acknowledge', eventId: null }],
    ['incomingId 0', { decision: 'resolve', incomingId: 0, revision: r }],
    ['incomingId as a string', { decision: 'resolve', incomingId: '7', revision: r }],
    ['incomingId beyond int32', { decision: 'keepwaiting', incomingId: 2147483648, revision: r }],
  ]);
});

t.test('EVALUATION: a revision that is not a uuid is 400 validation_failed', async (t) => {
  const h = world();
  await expectShapeRefused(t, h, [
    ['plain text', { decision: 'resolve', incomingId: 7, revision: 'not-a-uuid' }],
    ['empty', { decision: 'keepwaiting', incomingId: 7, revision: '' }],
    ['quoted (the If-Match form)', { decision: 'resolve', incomingId: 7, revision: `"${RESPONDED_REVISION}"` }],
    ['a number', { decision: 'resolve', incomingId: 7, revision: 7 }],
    ['null', { decision: 'followup', incomingId: 7, revision: null, message: 'Which?' }],
  ]);
});

t.test("EVALUATION: followup message: '' and over 20000 characters are 400, whitespace only is 422 invalid_field", async (t) => {
  const h = world();
  const followup = (message: unknown) => ({ decision: 'followup', incomingId: 7, revision: RESPONDED_REVISION, message });
  await expectShapeRefused(t, h, [
    ['empty message', followup('')],
    ['20001 characters', followup('x'.repeat(20001))],
    ['null message', followup(null)],
  ]);
  const version = workspaceVersion(h);
  expectProblem(t, await evaluate(h, 1, followup('   ')), 'invalid_field', 'spaces');
  expectProblem(t, await evaluate(h, 1, followup('\n\t ')), 'invalid_field', 'newline and tab');
  unchanged(t, h, version, 'after the blank messages');
  t.equal((await evaluate(h, 1, followup('y'.repeat(20000)))).status, 204, '20000 characters are accepted');
});

// ---------------------------------------------------------------------------------------------
// acknowledge.

t.test('EVALUATION: acknowledge sets acknowledgedUtc to now on that change of this task only', async (t) => {
  const h = world();
  const first = addSourceChange(h, 1);
  const second = addSourceChange(h, 1);
  const reply = addSourceChange(h, 1, 'reply', 7);
  h.clock.advance(90_000);
  const version = workspaceVersion(h);

  const response = await evaluate(h, 1, { decision: 'acknowledge', eventId: first });
  t.equal(response.status, 204);
  t.equal(response.text ?? '', '', 'no body');
  t.equal(workspaceVersion(h), version + 1, 'the workspace version moves once');

  const changes = (await readTask(h, 1)).externalChanges as { id: number; acknowledgedUtc: string | null }[];
  t.equal(changes.find((c) => c.id === first)?.acknowledgedUtc, '2026-11-16T10:01:30.000Z', 'acknowledgedUtc is now');
  t.equal(changes.find((c) => c.id === second)?.acknowledgedUtc, null, 'the other source change is untouched');
  t.equal(changes.find((c) => c.id === reply)?.acknowledgedUtc, null, 'the reply change is untouched');

  t.equal((await evaluate(h, 1, { decision: 'acknowledge', eventId: reply })).status, 204, 'a reply change is acknowledged the same way');
  t.equal(acknowledgedAt(h, reply), Date.parse('2026-11-16T10:01:30.000Z'));
  t.match(itemState(h, 7), { responseState: 'responded', lifecycle: 'completed' }, 'acknowledging a reply does not evaluate the response');
});

t.test("EVALUATION: acknowledge of another task's change or of an unknown id is 422 invalid_field", async (t) => {
  const h = world();
  const onTask3 = addSourceChange(h, 3);
  const onBobs = addSourceChange(h, 7);
  const version = workspaceVersion(h);
  expectProblem(t, await evaluate(h, 1, { decision: 'acknowledge', eventId: onTask3 }), 'invalid_field', "another of Ada's tasks");
  expectProblem(t, await evaluate(h, 1, { decision: 'acknowledge', eventId: onBobs }), 'invalid_field', "Bob's task");
  expectProblem(t, await evaluate(h, 1, { decision: 'acknowledge', eventId: 999_999 }), 'invalid_field', 'unknown id');
  expectProblem(t, await evaluate(h, 1, { decision: 'acknowledge', eventId: 9_007_199_254_740_991 }), 'invalid_field', 'int64-sized id');
  t.equal(acknowledgedAt(h, onTask3), null, 'task 3 change untouched');
  t.equal(acknowledgedAt(h, onBobs), null, "Bob's change untouched");
  t.equal(workspaceVersion(h), version, 'version unchanged');
  t.equal((await evaluate(h, 3, { decision: 'acknowledge', eventId: onTask3 })).status, 204, 'on its own task it is acknowledged');
});

t.test('EVALUATION: acknowledge twice is 409 source_context_changed', async (t) => {
  const h = world();
  const change = addSourceChange(h, 1);
  t.equal((await evaluate(h, 1, { decision: 'acknowledge', eventId: change })).status, 204, 'first');
  const at = acknowledgedAt(h, change);
  h.clock.advance(60_000);
  const version = workspaceVersion(h);
  expectProblem(t, await evaluate(h, 1, { decision: 'acknowledge', eventId: change }), 'source_context_changed', 'second, new key');
  t.equal(acknowledgedAt(h, change), at, 'acknowledgedUtc keeps the first time');
  t.equal(workspaceVersion(h), version, 'version unchanged');
});

t.test('EVALUATION: requiresAttention goes false once the last unacknowledged change is acknowledged and nothing else needs attention', async (t) => {
  const h = adaWorld(); // no responded assistance on task 3
  const first = addSourceChange(h, 3);
  const second = addSourceChange(h, 3, 'reply');
  t.equal((await readTask(h, 3)).requiresAttention, true, 'two unacknowledged changes');
  await evaluate(h, 3, { decision: 'acknowledge', eventId: first });
  t.equal((await readTask(h, 3)).requiresAttention, true, 'one still unacknowledged');
  await evaluate(h, 3, { decision: 'acknowledge', eventId: second });
  const task = await readTask(h, 3);
  t.equal(task.requiresAttention, false, 'all acknowledged');
  t.equal(task.externalChanges.length, 2, 'acknowledged changes stay listed');

  // A response awaiting evaluation keeps the task needing attention after its changes are acknowledged.
  const w = world();
  const change = addSourceChange(w, 1);
  await evaluate(w, 1, { decision: 'acknowledge', eventId: change });
  const withResponse = await readTask(w, 1);
  t.equal(withResponse.requiresAttention, true, 'a response still awaits evaluation');
  t.equal(withResponse.responsesAwaitingEvaluation.length, 1);
  await evaluate(w, 1, resolve7);
  t.equal((await readTask(w, 1)).requiresAttention, false, 'after resolve nothing needs attention');
});
