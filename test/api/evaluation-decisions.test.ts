import t from 'tap';
import { baseFixture, TOKENS } from '../helpers/fixture.js';
import type { CallResult, Harness } from '../helpers/service.js';
import { adaWorld, addAssistance, API, etagOf, expectCode, readTask, workspaceVersion } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';

/**
 * POST /tasks/{id}/external-evaluation, part 2 (contract 8): `resolve`, `keepwaiting` and
 * `followup` on the responses to this task's assistance. Responded assistance is built either
 * through the real endpoints (POST human-requests, then Grace's client completes the Incoming
 * item) or in SQL with `addAssistance` for states the endpoints cannot reach yet (an external
 * reply leaves the item responded without changing its lifecycle).
 */

/** grace-desk (client 110): the human recipient's own client. */
const GRACE = 'wta_test_grace_desk';
const REVISION = '5a4e2c1d-8b7f-4e3a-9c6d-1f2e3d4c5b6a';

function world(): Harness {
  const fixture = baseFixture();
  fixture.clients.push({
    id: 110, organisationId: 1, name: 'grace-desk', token: GRACE, sponsorId: 11, resourceId: 11, isActive: true,
    scopes: ['tasks:read', 'tasks:update'],
  });
  return adaWorld({ fixture });
}

let keys = 0;
const nextKey = () => `decide-${(keys += 1)}`;

async function evaluate(h: Harness, taskId: number, body: unknown, o: { key?: string; ifMatch?: string; token?: string } = {}): Promise<CallResult> {
  return h.call('POST', `${API}/tasks/${taskId}/external-evaluation`, {
    headers: { 'if-match': o.ifMatch ?? (await etagOf(h, taskId, o.token)), 'idempotency-key': o.key ?? nextKey() },
    body,
    ...(o.token === undefined ? {} : { token: o.token }),
  });
}

/** POST human-requests from `taskId` to Grace; answers the stage id and the Incoming id. */
async function ask(h: Harness, taskId: number, details: string | null = 'Headline A or B?'): Promise<{ stageId: number; incomingId: number }> {
  const created = await h.call('POST', `${API}/tasks/${taskId}/human-requests`, {
    headers: { 'if-match': await etagOf(h, taskId) },
    body: { humanAssigneeId: 11, title: 'Pick a headline', details, estimatedMinutes: 15 },
  });
  if (created.status !== 201) throw new Error(`human-requests gave ${created.status}`);
  const stageId = created.json.id as number;
  const request = await h.call('GET', `${API}/human-requests/${stageId}`);
  return { stageId, incomingId: request.json.incomingId as number };
}

/** Grace completes the item with a response, at its current revision. */
async function answer(h: Harness, incomingId: number, response = 'B, definitely'): Promise<void> {
  const listed = await h.call('GET', `${API}/incoming?includeAccepted=true`, { token: GRACE });
  const item = (listed.json as { id: number; etag: string }[]).find((i) => i.id === incomingId);
  if (item === undefined) throw new Error(`incoming ${incomingId} not listed for Grace`);
  const done = await h.call('POST', `${API}/incoming/${incomingId}/complete`, {
    token: GRACE, headers: { 'if-match': item.etag, 'idempotency-key': nextKey() }, body: { response },
  });
  if (done.status !== 204) throw new Error(`complete gave ${done.status} ${done.text}`);
}

/** Ask and answer through the endpoints; answers the Incoming id and the AwaitingEvaluation entry of the task. */
async function respondedRequest(h: Harness, taskId: number, details?: string | null) {
  const { stageId, incomingId } = await ask(h, taskId, details);
  await answer(h, incomingId);
  const task = await readTask(h, taskId);
  const awaiting = (task.responsesAwaitingEvaluation as { id: number; revision: string }[]).find((a) => a.id === incomingId);
  if (awaiting === undefined) throw new Error('the response does not await evaluation');
  return { stageId, incomingId, revision: awaiting.revision };
}

async function humanRequest(h: Harness, stageId: number) {
  const response = await h.call('GET', `${API}/human-requests/${stageId}`);
  if (response.status !== 200) throw new Error(`GET /human-requests/${stageId} gave ${response.status}`);
  return response.json;
}

const listIds = async (h: Harness, list: 'available' | 'waiting') =>
  ((await h.call('GET', `${API}/tasks/${list}`)).json as { id: number }[]).map((task) => task.id);

// ---------------------------------------------------------------------------------------------

t.test('EVALUATION: an incomingId that is not assistance of this task is 422 invalid_field', async (t) => {
  const h = world();
  addAssistance(h, { stageId: 500, taskId: 3, incomingId: 7, lifecycle: 'completed', responseState: 'responded', revision: REVISION });
  addAssistance(h, { stageId: 501, taskId: 7, incomingId: 8, lifecycle: 'completed', responseState: 'responded', revision: REVISION });
  // A legacy Incoming item with no assistance stage behind it.
  h.db.prepare(`INSERT INTO incoming_items (id, organisation_id, stage_id, recipient_id, title, estimated_minutes, requester,
    requested_at_utc, lifecycle, response_state, revision) VALUES (9, 1, NULL, 10, 'Legacy', 5, 'Grace', 0, 'completed', 'responded', ?)`)
    .run(REVISION);
  const version = workspaceVersion(h);
  for (const [label, incomingId] of [["another of Ada's tasks", 7], ["Bob's task", 8], ['legacy item without a stage', 9], ['unknown id', 4242]] as const) {
    for (const decision of ['resolve', 'keepwaiting'] as const) {
      expectProblem(t, await evaluate(h, 1, { decision, incomingId, revision: REVISION }), 'invalid_field', `${decision}: ${label}`);
    }
    expectProblem(t, await evaluate(h, 1, { decision: 'followup', incomingId, revision: REVISION, message: 'Why?' }), 'invalid_field', `followup: ${label}`);
  }
  t.equal(workspaceVersion(h), version, 'version unchanged');
  t.equal((h.db.prepare('SELECT count(*) AS n FROM incoming_items WHERE response_state = ?').get('responded') as { n: number }).n, 3, 'all still responded');
  t.equal((await evaluate(h, 3, { decision: 'resolve', incomingId: 7, revision: REVISION })).status, 204, 'on its own task it resolves');
});

t.test('EVALUATION: a body revision that is not current is 412 stale_update with the task ETag header', async (t) => {
  const h = world();
  const { incomingId, revision } = await respondedRequest(h, 1);
  const stale = '11111111-2222-4333-8444-555555555555';
  const version = workspaceVersion(h);
  for (const body of [
    { decision: 'resolve', incomingId, revision: stale },
    { decision: 'keepwaiting', incomingId, revision: stale },
    { decision: 'followup', incomingId, revision: stale, message: 'And the subtitle?' },
  ]) {
    const response = await evaluate(h, 1, body);
    expectProblem(t, response, 'stale_update', body.decision);
    t.equal(response.headers['etag'], await etagOf(h, 1), `${body.decision}: the ETag header is the task's current ETag`);
  }
  t.equal(workspaceVersion(h), version, 'version unchanged');
  const task = await readTask(h, 1);
  t.same(task.responsesAwaitingEvaluation.map((a: { revision: string }) => a.revision), [revision], 'still awaiting at its revision');
  t.equal((await evaluate(h, 1, { decision: 'resolve', incomingId, revision: revision.toUpperCase() })).status, 204,
    'the current revision in upper case is the same uuid');
});

t.test('EVALUATION: resolve, keepwaiting or followup on an item that is not responded gives 409 incoming_state_conflict', async (t) => {
  const h = world();
  const { stageId, incomingId } = await ask(h, 1); // open and floating
  addAssistance(h, { stageId: 600, taskId: 1, incomingId: 60, lifecycle: 'inprogress', responseState: 'open', revision: REVISION });
  addAssistance(h, { stageId: 601, taskId: 1, incomingId: 61, lifecycle: 'completed', responseState: 'open', revision: REVISION });
  const version = workspaceVersion(h);
  const floatingRevision = (await humanRequest(h, stageId)).incomingRevision as string;
  for (const [label, id, revision] of [['floating', incomingId, floatingRevision], ['inprogress', 60, REVISION], ['completed but open', 61, REVISION]] as const) {
    for (const body of [
      { decision: 'resolve', incomingId: id, revision },
      { decision: 'keepwaiting', incomingId: id, revision },
      { decision: 'followup', incomingId: id, revision, message: 'Any news?' },
    ]) {
      expectProblem(t, await evaluate(h, 1, body), 'incoming_state_conflict', `${body.decision} on ${label}`);
    }
  }
  t.equal(workspaceVersion(h), version, 'version unchanged');
  t.match(await humanRequest(h, stageId), { responseState: 'open', lifecycle: 'floating', incomingRevision: floatingRevision }, 'untouched');
});

t.test('EVALUATION: resolve, keepwaiting or followup on a resolved item gives 409 request_completed', async (t) => {
  const h = world();
  const { stageId, incomingId, revision } = await respondedRequest(h, 1);
  t.equal((await evaluate(h, 1, { decision: 'resolve', incomingId, revision })).status, 204, 'resolved');
  const current = (await humanRequest(h, stageId)).incomingRevision as string;
  const version = workspaceVersion(h);
  for (const body of [
    { decision: 'resolve', incomingId, revision: current },
    { decision: 'keepwaiting', incomingId, revision: current },
    { decision: 'followup', incomingId, revision: current, message: 'One more thing' },
  ]) {
    expectProblem(t, await evaluate(h, 1, body), 'request_completed', body.decision);
  }
  addAssistance(h, { stageId: 600, taskId: 1, incomingId: 60, lifecycle: 'completed', responseState: 'resolved', revision: REVISION });
  expectProblem(t, await evaluate(h, 1, { decision: 'keepwaiting', incomingId: 60, revision: REVISION }), 'request_completed', 'resolved in SQL');
  t.equal(workspaceVersion(h), version, 'version unchanged');
  t.match(await humanRequest(h, stageId), { responseState: 'resolved', lifecycle: 'completed', incomingRevision: current }, 'untouched');
});

t.test('EVALUATION: the item, its revision, its state, then the message: a stale revision of a resolved item is 412, a blank follow-up to an unanswered item 409', async (t) => {
  const h = world();
  const asked = await ask(h, 1); // open and floating: nothing to evaluate yet
  const openRevision = (await humanRequest(h, asked.stageId)).incomingRevision as string;
  const answered = await respondedRequest(h, 2);
  const version = workspaceVersion(h);
  expectProblem(t, await evaluate(h, 1, { decision: 'followup', incomingId: asked.incomingId, revision: openRevision, message: ' \n\t' }),
    'incoming_state_conflict', 'blank message, item not answered: its state answers first');
  expectProblem(t, await evaluate(h, 2, { decision: 'followup', incomingId: answered.incomingId, revision: answered.revision, message: ' \n\t' }),
    'invalid_field', 'blank message, item answered: the message is what is wrong');
  expectProblem(t, await evaluate(h, 1, { decision: 'resolve', incomingId: answered.incomingId, revision: '11111111-2222-4333-8444-555555555555' }),
    'invalid_field', "task 2's item from task 1, with a stale revision: the item answers before the revision (422, not 412)");
  t.equal(workspaceVersion(h), version, 'nothing applied');

  t.equal((await evaluate(h, 2, { decision: 'resolve', incomingId: answered.incomingId, revision: answered.revision })).status, 204, 'resolved');
  expectProblem(t, await evaluate(h, 2, { decision: 'resolve', incomingId: answered.incomingId, revision: answered.revision }),
    'stale_update', 'the revision it was resolved at is no longer current: 412, before the state');
  const current = (await humanRequest(h, answered.stageId)).incomingRevision as string;
  expectProblem(t, await evaluate(h, 2, { decision: 'keepwaiting', incomingId: answered.incomingId, revision: current }),
    'request_completed', 'at the current revision, the state');
});

t.test('EVALUATION: resolve makes the response resolved, the item completed, and unblocks the task', async (t) => {
  const h = world();
  t.ok((await listIds(h, 'available')).includes(1), 'task 1 is offered before any request');
  const { stageId, incomingId, revision } = await respondedRequest(h, 1);

  let task = await readTask(h, 1);
  t.match(task, { blocked: true, blockingReasons: ['human assistance'], requiresAttention: true }, 'a reply alone does not unblock');
  t.ok((await listIds(h, 'waiting')).includes(1), 'waiting while the response awaits evaluation');
  t.notOk((await listIds(h, 'available')).includes(1), 'not offered while blocked');
  const completedUtc = (await humanRequest(h, stageId)).completedUtc as string;

  h.clock.advance(5 * 60_000);
  t.equal((await evaluate(h, 1, { decision: 'resolve', incomingId, revision })).status, 204);

  t.match(await humanRequest(h, stageId), {
    responseState: 'resolved', lifecycle: 'completed', status: 'Done', isOutstandingBlocker: false,
    response: 'B, definitely', completedUtc,
  }, 'resolved; the completion time is the human\'s');
  task = await readTask(h, 1);
  t.match(task, { blocked: false, blockingReasons: [], requiresAttention: false, responsesAwaitingEvaluation: [] });
  t.notOk((await listIds(h, 'waiting')).includes(1), 'leaves /tasks/waiting');
  t.ok((await listIds(h, 'available')).includes(1), 'enters /tasks/available');
});

t.test('EVALUATION: resolve on a responded item that is not completed completes it now', async (t) => {
  const h = world();
  addAssistance(h, { stageId: 600, taskId: 1, incomingId: 60, lifecycle: 'inprogress', responseState: 'responded', response: 'Done upstream', revision: REVISION });
  h.clock.advance(60_000);
  t.equal((await evaluate(h, 1, { decision: 'resolve', incomingId: 60, revision: REVISION })).status, 204);
  t.match(await humanRequest(h, 600), { responseState: 'resolved', lifecycle: 'completed', completedUtc: '2026-11-16T10:01:00.000Z' });
});

t.test('EVALUATION: keepwaiting on a completed responded item reopens it: open, inprogress, completedUtc null, still blocked', async (t) => {
  const h = world();
  const { stageId, incomingId, revision } = await respondedRequest(h, 1);
  t.equal((await evaluate(h, 1, { decision: 'keepwaiting', incomingId, revision })).status, 204);

  t.match(await humanRequest(h, stageId), {
    responseState: 'open', lifecycle: 'inprogress', status: 'InProgress', completedUtc: null, isOutstandingBlocker: true,
    details: 'Headline A or B?',
  });
  const task = await readTask(h, 1);
  t.match(task, { blocked: true, blockingReasons: ['human assistance'], requiresAttention: false, responsesAwaitingEvaluation: [] });
  t.ok((await listIds(h, 'waiting')).includes(1), 'still waiting');
  t.notOk((await listIds(h, 'available')).includes(1), 'still not offered');
  const listed = (await h.call('GET', `${API}/incoming?includeAccepted=true`, { token: GRACE })).json as { id: number; status: string; responseState: string }[];
  t.match(listed.find((i) => i.id === incomingId), { status: 'inprogress', responseState: 'open' }, 'back in Grace\'s accepted work');
});

t.test('EVALUATION: keepwaiting on a responded item that is not completed keeps its lifecycle', async (t) => {
  const h = world();
  // As an external reply leaves it: responded, lifecycle unchanged.
  addAssistance(h, { stageId: 600, taskId: 1, incomingId: 60, lifecycle: 'inprogress', responseState: 'responded', response: 'Soon', revision: REVISION });
  addAssistance(h, {
    stageId: 601, taskId: 1, incomingId: 61, lifecycle: 'floating', responseState: 'responded', response: 'Soon',
    revision: '6b5f3d2e-9c8a-4f4b-8d7e-2a3f4e5d6c7b',
  });
  t.equal((await evaluate(h, 1, { decision: 'keepwaiting', incomingId: 60, revision: REVISION })).status, 204, 'inprogress');
  t.equal((await evaluate(h, 1, { decision: 'keepwaiting', incomingId: 61, revision: '6b5f3d2e-9c8a-4f4b-8d7e-2a3f4e5d6c7b' })).status, 204, 'floating');
  t.match(await humanRequest(h, 600), { responseState: 'open', lifecycle: 'inprogress', completedUtc: null });
  t.match(await humanRequest(h, 601), { responseState: 'open', lifecycle: 'floating', completedUtc: null });
  t.match(await readTask(h, 1), { blocked: true, requiresAttention: false, responsesAwaitingEvaluation: [] });
});

t.test('EVALUATION: a followup that would grow details past 20000 characters gives 422 invalid_field and changes nothing', async (t) => {
  const h = world();
  // 19,980 characters, astral ones included: the limit counts characters (code points), not UTF-16 units.
  const details = '\u{1F600}'.repeat(9_990) + 'x'.repeat(9_990);
  const { stageId, incomingId, revision } = await respondedRequest(h, 1, details);
  const separator = '\n\nFollow-up: '.length;
  const tooLong = 'y'.repeat(20_000 - 19_980 - separator + 1);
  expectProblem(t, await evaluate(h, 1, { decision: 'followup', incomingId, revision, message: tooLong }), 'invalid_field', 'one character over');
  t.match(await humanRequest(h, stageId), { details, responseState: 'responded' }, 'nothing changed');
  const fits = tooLong.slice(1);
  t.equal((await evaluate(h, 1, { decision: 'followup', incomingId, revision, message: fits })).status, 204, 'exactly 20000 characters fit');
  t.equal([...(await humanRequest(h, stageId)).details as string].length, 20_000);
});

t.test('EVALUATION: followup appends the message to details and opens the question again', async (t) => {
  const h = world();
  const { stageId, incomingId, revision } = await respondedRequest(h, 1);
  t.equal((await evaluate(h, 1, { decision: 'followup', incomingId, revision, message: 'Why B over A?' })).status, 204);

  const request = await humanRequest(h, stageId);
  t.match(request, { responseState: 'open', lifecycle: 'inprogress', completedUtc: null, isOutstandingBlocker: true });
  // README behaviour notes: the follow-up is appended as a paragraph starting `Follow-up: `.
  t.equal(request.details, 'Headline A or B?\n\nFollow-up: Why B over A?', 'the new question is appended to the original');
  t.match(await readTask(h, 1), { blocked: true, blockingReasons: ['human assistance'], responsesAwaitingEvaluation: [] });
  const listed = (await h.call('GET', `${API}/incoming?includeAccepted=true`, { token: GRACE })).json as { id: number; details: string }[];
  t.equal(listed.find((i) => i.id === incomingId)?.details, request.details, 'Grace sees the follow-up');

  // Without earlier details the message becomes the details.
  const second = await respondedRequest(h, 3, null);
  t.equal((await evaluate(h, 3, { decision: 'followup', incomingId: second.incomingId, revision: second.revision, message: 'Which colour?' })).status, 204);
  t.equal((await humanRequest(h, second.stageId)).details, 'Which colour?');
  // Nor after blank ones (empty, or whitespace as the nonblank rule knows it): no paragraph to follow.
  for (const [taskId, blank, label] of [[5, '', 'empty'], [8, ' \u0085\u3000', 'space, NEXT LINE, ideographic space']] as const) {
    const asked = await respondedRequest(h, taskId, blank);
    t.equal((await evaluate(h, taskId, { decision: 'followup', incomingId: asked.incomingId, revision: asked.revision, message: 'Which size?' })).status, 204);
    t.equal((await humanRequest(h, asked.stageId)).details, 'Which size?', `after details: ${label}`);
  }

  // Answered again, the follow-up can be evaluated like the first response.
  await answer(h, incomingId, 'B is shorter');
  const again = (await readTask(h, 1)).responsesAwaitingEvaluation as { id: number; response: string; revision: string }[];
  t.match(again, [{ id: incomingId, response: 'B is shorter' }], 'the new response awaits evaluation');
  t.equal((await evaluate(h, 1, { decision: 'resolve', incomingId, revision: again[0]!.revision })).status, 204, 'and resolves');
});

t.test('EVALUATION: each decision gives the Incoming item a new revision (the old one is then stale) and bumps the workspace version once', async (t) => {
  for (const decision of ['acknowledge', 'resolve', 'keepwaiting', 'followup'] as const) {
    const h = world();
    const { stageId, incomingId, revision } = await respondedRequest(h, 1);
    const before = workspaceVersion(h);
    const etagBefore = await etagOf(h, 1);
    let response: CallResult;
    if (decision === 'acknowledge') {
      h.db.prepare(`INSERT INTO source_items (id, organisation_id, provider_key, item_id, title) VALUES (1, 1, 'http', 'T-1', 'T-1')`).run();
      h.db.prepare(`INSERT INTO source_changes (id, task_id, source_item_id, kind, occurred_utc, received_utc) VALUES (5, 1, 1, 'source', 0, 0)`).run();
      response = await evaluate(h, 1, { decision, eventId: 5 });
      t.equal((await humanRequest(h, stageId)).incomingRevision, revision, 'acknowledge: the Incoming item keeps its revision');
    } else {
      response = await evaluate(h, 1, decision === 'followup' ? { decision, incomingId, revision, message: 'More?' } : { decision, incomingId, revision });
      const after = (await humanRequest(h, stageId)).incomingRevision as string;
      t.not(after, revision, `${decision}: new revision`);
      t.match(after, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, `${decision}: a v4 uuid`);
      const again = await evaluate(h, 1, { decision: 'keepwaiting', incomingId, revision });
      expectProblem(t, again, 'stale_update', `${decision}: the old revision is stale`);
    }
    t.equal(response.status, 204, `${decision}: 204`);
    t.equal(workspaceVersion(h), before + 1, `${decision}: version + 1`);
    t.not(await etagOf(h, 1), etagBefore, `${decision}: the task ETag changed`);
    t.equal(response.headers['etag'], await etagOf(h, 1), `${decision}: the 204 carries the new task ETag`);
    expectProblem(t, await evaluate(h, 1, { decision: 'keepwaiting', incomingId, revision }, { ifMatch: etagBefore }), 'stale_update',
      `${decision}: the old task ETag is stale`);
  }
});

t.test('EVALUATION: a replay with the same key returns the stored 204 and applies nothing twice', async (t) => {
  const h = world();
  const { stageId, incomingId, revision } = await respondedRequest(h, 1);
  const etag = await etagOf(h, 1);
  const body = { decision: 'followup', incomingId, revision, message: 'Why B?' };
  const first = await evaluate(h, 1, body, { key: 'followup-once', ifMatch: etag });
  t.equal(first.status, 204);
  const version = workspaceVersion(h);
  const after = await humanRequest(h, stageId);

  // Same key, same body (members in another order), with the now-stale If-Match.
  const replay = await evaluate(h, 1, { message: 'Why B?', revision, incomingId, decision: 'followup' }, { key: 'followup-once', ifMatch: etag });
  t.equal(replay.status, 204, 'the stored status');
  t.equal(replay.headers['idempotent-replayed'], 'true', 'marked as a replay');
  t.equal(replay.headers['etag'], first.headers['etag'], 'the stored ETag');
  t.equal(workspaceVersion(h), version, 'no second version bump');
  const again = await humanRequest(h, stageId);
  t.equal(again.incomingRevision, after.incomingRevision, 'no second revision');
  t.equal(again.details, after.details, 'the message is appended once');
  t.equal((again.details as string).split('Why B?').length - 1, 1);

  expectProblem(t, await evaluate(h, 1, { ...body, message: 'Why not A?' }, { key: 'followup-once' }), 'idempotency_conflict', 'same key, other body');
  expectProblem(t, await evaluate(h, 1, body, { key: 'followup-once', ifMatch: '*' }), 'stale_update', 'a replay needs a well-formed If-Match');
  expectProblem(t, await evaluate(h, 1, body, { key: 'followup-once', token: TOKENS.readOnly }), 'permission_denied', 'a replay needs the scope');

  // Acknowledge: a replay keeps the first acknowledgement time.
  h.db.prepare(`INSERT INTO source_items (id, organisation_id, provider_key, item_id, title) VALUES (1, 1, 'http', 'T-1', 'T-1')`).run();
  h.db.prepare(`INSERT INTO source_changes (id, task_id, source_item_id, kind, occurred_utc, received_utc) VALUES (5, 1, 1, 'source', 0, 0)`).run();
  t.equal((await evaluate(h, 1, { decision: 'acknowledge', eventId: 5 }, { key: 'ack-once' })).status, 204);
  h.clock.advance(60_000);
  const ackReplay = await evaluate(h, 1, { decision: 'acknowledge', eventId: 5 }, { key: 'ack-once' });
  t.equal(ackReplay.status, 204, 'replayed rather than 409 source_context_changed');
  t.equal(ackReplay.headers['idempotent-replayed'], 'true');
  t.equal((await readTask(h, 1)).externalChanges[0].acknowledgedUtc, '2026-11-16T10:00:00.000Z', 'acknowledged once');
});

t.test('EVALUATION: without scope human-requests:read the task still shows requiresAttention and blockingReasons, humanRequests and responsesAwaitingEvaluation are []', async (t) => {
  const h = world();
  const { incomingId, revision } = await respondedRequest(h, 1);
  const full = await readTask(h, 1);
  t.equal(full.responsesAwaitingEvaluation.length, 1, 'ada-bot sees the response');
  const limited = await readTask(h, 1, TOKENS.readOnly);
  t.match(limited, { requiresAttention: true, blocked: true, blockingReasons: ['human assistance'], humanRequests: [], responsesAwaitingEvaluation: [] });
  t.equal(limited.etag, full.etag, 'same task, same ETag');
  t.ok((await h.call('GET', `${API}/tasks/waiting`, { token: TOKENS.readOnly })).json.some((task: { id: number }) => task.id === 1), 'waiting for the reader too');

  await evaluate(h, 1, { decision: 'keepwaiting', incomingId, revision });
  t.match(await readTask(h, 1, TOKENS.readOnly), { requiresAttention: false, blocked: true, blockingReasons: ['human assistance'], humanRequests: [] },
    'after keepwaiting: no attention needed, still blocked');
});

t.test('EVALUATION: completing the originating task while a human blocker is outstanding gives 409 task_blocked, after resolve it succeeds', async (t) => {
  const h = world();
  const done = async () => h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': await etagOf(h, 1) }, body: { status: 'Done' } });
  const { stageId, incomingId } = await ask(h, 1);
  expectCode(t, await done(), 409, 'task_blocked', 'open request');
  await answer(h, incomingId);
  expectCode(t, await done(), 409, 'task_blocked', 'responded: a reply alone does not resolve the blocker');
  const revision = (await humanRequest(h, stageId)).incomingRevision as string;
  t.equal((await evaluate(h, 1, { decision: 'resolve', incomingId, revision })).status, 204, 'resolved');
  t.equal((await done()).status, 204, 'Done now succeeds');
  t.equal((await readTask(h, 1)).status, 'Done');

  // A non-blocking request never holds completion back.
  const h2 = world();
  const created = await h2.call('POST', `${API}/tasks/3/human-requests`, {
    headers: { 'if-match': await etagOf(h2, 3) },
    body: { humanAssigneeId: 11, title: 'FYI', estimatedMinutes: 5, isBlocking: false },
  });
  t.equal(created.status, 201);
  t.equal((await h2.call('PATCH', `${API}/tasks/3`, { headers: { 'if-match': await etagOf(h2, 3) }, body: { status: 'Done' } })).status, 204, 'non-blocking');
});
