import t from 'tap';
import type { ErrorCode } from '../../lib/domain/errors.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { adaWorld, addAssistance, API, bumpVersion, etagOf, LEASE_11, readTask, workspaceVersion } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';
import { baseFixture, DESK_TOKENS, TOKENS, withDesks, type FixtureShape } from '../helpers/fixture.js';
import type { CallResult, Harness } from '../helpers/service.js';
import { sourceWorld, untilAsked, type StubTracker } from '../helpers/stub-tracker.js';

/**
 * README promises about leases on Done tasks, human requests (their order, on a Done task, the
 * reply changes they get), Incoming reassign, and claims and lists that wait on a linked source:
 * each test checks one README sentence through the real service, with the clock injected.
 */

const MINUTE = 60_000;
/** Just past the age at which a refresh still counts (contract 9: at most 15 s old). */
const PAST_MAX_AGE_MS = 15_001;
const GRACE = 11;

let keys = 0;
const nextKey = (what: string) => `${what}-${(keys += 1)}`;

/** POST /tasks/{id}/claim/{renew|release} with the task's current ETag and a fresh key. */
async function lease(h: Harness, action: 'renew' | 'release', taskId: number, token: string): Promise<CallResult> {
  return h.call('POST', `${API}/tasks/${taskId}/claim/${action}`, {
    headers: { 'if-match': await etagOf(h, taskId), 'idempotency-key': nextKey(action) }, body: { token },
  });
}

/** POST /tasks/{id}/claim with the task's current ETag and a fresh key. */
async function claim(h: Harness, taskId: number): Promise<CallResult> {
  return h.call('POST', `${API}/tasks/${taskId}/claim`, {
    headers: { 'if-match': await etagOf(h, taskId), 'idempotency-key': nextKey('claim') },
  });
}

/** Ada asks Grace for help from `taskId`; answers the stage id and the Incoming id. */
async function ask(h: Harness, taskId: number, body: Record<string, unknown> = {}): Promise<{ stageId: number; incomingId: number }> {
  const created = await h.call('POST', `${API}/tasks/${taskId}/human-requests`, {
    headers: { 'if-match': await etagOf(h, taskId) },
    body: { humanAssigneeId: GRACE, title: 'Which tone?', estimatedMinutes: 15, ...body },
  });
  if (created.status !== 201) throw new Error(`human-requests gave ${created.status} ${created.text}`);
  const detail = await h.call('GET', `${API}/human-requests/${created.json.id}`);
  return { stageId: created.json.id, incomingId: detail.json.incomingId };
}

/** POST /tasks/{id}/external-evaluation with the task's current ETag and a fresh key. */
async function evaluate(h: Harness, taskId: number, body: unknown): Promise<CallResult> {
  return h.call('POST', `${API}/tasks/${taskId}/external-evaluation`, {
    headers: { 'if-match': await etagOf(h, taskId), 'idempotency-key': nextKey('evaluate') }, body,
  });
}

const liveLeases = (h: Harness, taskId: number): number =>
  (h.db.prepare('SELECT count(*) AS n FROM claims WHERE task_id = ? AND released_utc IS NULL AND expires_utc > ?').get(taskId, h.clock.now()) as { n: number }).n;

const offeredIds = async (h: Harness): Promise<number[]> => {
  const listed = await h.call('GET', `${API}/tasks/available`);
  if (listed.status !== 200) throw new Error(`available gave ${listed.status}`);
  return listed.json.map((task: { id: number }) => task.id);
};

/** Holds the stub's next answers for `itemId` until the returned function is called. */
function holdRefresh(stub: StubTracker, itemId: string): () => void {
  let open = (): void => undefined;
  stub.failRefresh(itemId, { kind: 'gate', open: new Promise<void>((resolve) => { open = resolve; }) });
  return () => {
    stub.failRefresh(itemId, null);
    open();
  };
}

const rowOf = (rows: Record<string, unknown>[], id: number): Record<string, unknown> => {
  const row = rows.find((candidate) => candidate['id'] === id);
  if (row === undefined) throw new Error(`no row ${id} in the fixture`);
  return row;
};

/** A fixture load that hands task 1 (with its links, as `fixture` has them) from Ada to Bob. */
const handTask1ToBob = (h: Harness, fixture: FixtureShape): void =>
  void loadFixture(h.db, { tasks: [{ ...rowOf(fixture.tasks, 1), assignees: [{ staffMemberId: 12 }] }] }, { now: h.clock.now() });

// README, Leases (~1731-1732).
t.test('CLAIMS: renew and release on a Done task work while the lease is live; PATCH {} is 409 task_completed', async (t) => {
  const h = adaWorld();
  const underLease = async (body: unknown) => h.call('PATCH', `${API}/tasks/11`, {
    headers: { 'if-match': await etagOf(h, 11), 'x-task-claim': LEASE_11 }, body,
  });
  t.equal((await underLease({ status: 'Done' })).status, 204, 'task 11 is set Done under its lease');
  t.equal((await readTask(h, 11)).status, 'Done');
  t.equal(liveLeases(h, 11), 1, 'completing the task does not end its lease');

  h.clock.advance(5 * MINUTE);
  const renewed = await lease(h, 'renew', 11, LEASE_11);
  t.equal(renewed.status, 200, 'renew on the Done task');
  t.strictSame(renewed.json, { token: LEASE_11, expiresUtc: '2026-11-16T10:20:00.000Z' }, 'now + 15 min, the same token');

  expectProblem(t, await underLease({}), 'task_completed', 'PATCH {} of the Done task, with its live lease');

  h.clock.set('2026-11-16T10:12:00.000Z');
  const released = await lease(h, 'release', 11, LEASE_11);
  t.equal(released.status, 200, 'release on the Done task, past the first expiry (10:10): the renewal held');
  t.strictSame(released.json, { released: true, releasedUtc: '2026-11-16T10:12:00.000Z' });
  t.equal(liveLeases(h, 11), 0);
  expectProblem(t, await lease(h, 'release', 11, LEASE_11), 'claim_expired', 'releasing again');
});

// README, Human requests in a task (~1662).
t.test('HUMAN REQUESTS: a task lists its humanRequests in assistance-stage id order, not by Incoming id, request time or insertion', async (t) => {
  const h = adaWorld();
  // Inserted out of order; the Incoming ids and request times run against the stage ids.
  addAssistance(h, { stageId: 702, taskId: 1, incomingId: 50, createdUtc: '2026-11-16T08:00:00.000Z', title: 'Third' });
  addAssistance(h, { stageId: 700, taskId: 1, incomingId: 52, createdUtc: '2026-11-16T09:30:00.000Z', title: 'First' });
  addAssistance(h, { stageId: 701, taskId: 1, incomingId: 51, createdUtc: '2026-11-16T09:00:00.000Z', title: 'Second' });
  bumpVersion(h);
  const { stageId } = await ask(h, 1);
  const expected = [700, 701, 702, stageId].sort((a, b) => a - b);

  const task = await readTask(h, 1);
  t.strictSame(task.humanRequests.map((request: { stageId: number }) => request.stageId), expected, 'GET /tasks/1');
  const waiting = (await h.call('GET', `${API}/tasks/waiting`)).json.find((entry: { id: number }) => entry.id === 1);
  t.strictSame(waiting?.humanRequests.map((request: { stageId: number }) => request.stageId), expected, 'the waiting list too');
});

// README, Human requests (~1751-1754).
t.test('HUMAN REQUESTS: a blocking request raised on a Done task reads blocked: true with ["human assistance"]; the task stays Done', async (t) => {
  const h = adaWorld();
  const before = await readTask(h, 6);
  t.match(before, { status: 'Done', blocked: false });
  t.strictSame(before.blockingReasons, [], 'nothing blocks it before');

  const { stageId } = await ask(h, 6, { title: 'Review the shipped work' });
  const task = await readTask(h, 6);
  t.match(task, { status: 'Done', completedAt: before.completedAt, blocked: true }, 'blocked, and still Done with its completion time');
  t.strictSame(task.blockingReasons, ['human assistance'], 'the one reason');
  t.equal(task.humanRequests.length, 1);
  t.match(task.humanRequests[0], { stageId, isBlocking: true, isOutstandingBlocker: true });
});

// README, the Incoming rules (~458-459 and ~471-473).
t.test('INCOMING: reassign to the current recipient is 204 with a new revision; a replayed reassign after the hand-over is 404 incoming_not_found', async (t) => {
  const h = adaWorld({ fixture: withDesks(baseFixture()) });
  const { incomingId } = await ask(h, 1);
  const graceItem = async () => ((await h.call('GET', `${API}/incoming?includeAccepted=true`, { token: DESK_TOKENS.grace })).json as
    { id: number; etag: string; status: string }[]).find((item) => item.id === incomingId);
  const reassign = (assigneeId: number, ifMatch: string, key: string) => h.call('POST', `${API}/incoming/${incomingId}/reassign`, {
    token: DESK_TOKENS.grace, headers: { 'if-match': ifMatch, 'idempotency-key': key }, body: { assigneeId },
  });

  const first = (await graceItem())?.etag as string;
  const version = workspaceVersion(h);
  const same = await reassign(GRACE, first, nextKey('reassign'));
  t.equal(same.status, 204, 'naming the current recipient is accepted');
  t.not(same.headers['etag'], first, 'a new revision');
  t.match(await graceItem(), { etag: same.headers['etag'], status: 'floating' }, 'still Grace\'s, floating, at the new revision');
  t.equal(workspaceVersion(h), version + 1, 'a change like any reassign');
  expectProblem(t, await reassign(GRACE, first, nextKey('reassign')), 'stale_update', 'the revision before it is stale');

  const handOver = nextKey('reassign');
  const handed = await reassign(12, same.headers['etag'] as string, handOver);
  t.equal(handed.status, 204, 'Grace hands the item to Bob');
  const replay = await reassign(12, same.headers['etag'] as string, handOver);
  expectProblem(t, replay, 'incoming_not_found', 'the same reassign replayed by Grace');
  t.equal(replay.headers['idempotent-replayed'], undefined, 'not answered from the receipt');
  t.ok(((await h.call('GET', `${API}/incoming`, { token: TOKENS.bob })).json as { id: number }[]).some((item) => item.id === incomingId),
    'Bob has it');
});

// README, the Incoming rules (~466-467).
t.test('EVALUATION: an unacknowledged reply change keeps requiresAttention true after resolve; acknowledging it clears it', async (t) => {
  const { h, stub } = await sourceWorld(t);
  const { incomingId } = await ask(h, 1, { publishExternally: true });
  await h.service.idle();
  stub.addReply('T-1', { id: 'reply-1', inReplyTo: stub.refs[0] as string, author: 'Grace', text: 'Warm.' });
  t.equal((await h.call('GET', `${API}/tasks/waiting`)).status, 200, 'polling the waiting list picks the reply up');

  const asked = await readTask(h, 1);
  t.equal(asked.externalChanges.length, 1);
  const reply = asked.externalChanges[0];
  t.match(reply, { kind: 'reply', incomingId, response: 'Warm.', acknowledgedUtc: null });
  const awaiting = asked.responsesAwaitingEvaluation[0];
  t.equal(awaiting?.id, incomingId, 'the reply awaits evaluation');

  t.equal((await evaluate(h, 1, { decision: 'resolve', incomingId, revision: awaiting.revision })).status, 204, 'resolved');
  const resolved = await readTask(h, 1);
  t.match(resolved, { blocked: false, requiresAttention: true }, 'unblocked, and still requiring attention for the unacknowledged reply');
  t.strictSame(resolved.responsesAwaitingEvaluation, [], 'nothing left to evaluate');

  t.equal((await evaluate(h, 1, { decision: 'acknowledge', eventId: reply.id })).status, 204, 'the reply change acknowledged');
  const seen = await readTask(h, 1);
  t.equal(seen.requiresAttention, false, 'nothing left to attend to');
  t.equal(seen.externalChanges[0].acknowledgedUtc, '2026-11-16T10:00:00.000Z');
});

// README, Linked sources (~269-271 and ~1742-1745); the revoked client is in sources-claims.test.ts.
t.test('SOURCES: a claim waiting on a slow source answers as asking again would: 401 for a worker deactivated meanwhile, 403 task_not_owned for a task unassigned, and no lease', async (t) => {
  const changes: ReadonlyArray<readonly [string, (h: Harness, fixture: FixtureShape) => void, ErrorCode]> = [
    ['the worker deactivated', (h, fixture) => {
      loadFixture(h.db, { staff: [{ ...rowOf(fixture.staff, 10), isActive: false }] }, { now: h.clock.now() });
    }, 'authentication_failed'],
    ['the task handed to Bob', handTask1ToBob, 'task_not_owned'],
  ];
  for (const [change, apply, code] of changes) {
    const fixture = baseFixture();
    const { h, stub } = await sourceWorld(t, { fixture });
    const open = holdRefresh(stub, 'T-1');
    const claimed = claim(h, 1);
    await untilAsked(stub, 'T-1', 0);
    apply(h, fixture);
    open();
    expectProblem(t, await claimed, code, `${change}: the claim, once the source has answered`);
    t.equal(liveLeases(h, 1), 0, `${change}: no lease`);
    expectProblem(t, await h.call('GET', `${API}/tasks/1`), code, `${change}: what asking again then gets`);
  }
});

t.test('SOURCES: a task unassigned while the offer list waits on its slow source is left out of /tasks/available', async (t) => {
  const fixture = baseFixture();
  const { h, stub } = await sourceWorld(t, { fixture });
  t.strictSame(await offeredIds(h), [4, 1, 8, 3], 'task 1 is offered, its source fresh and available');
  h.clock.advance(PAST_MAX_AGE_MS);
  const open = holdRefresh(stub, 'T-1');
  const listed = offeredIds(h);
  await untilAsked(stub, 'T-1', 1);
  handTask1ToBob(h, fixture);
  open();
  t.strictSame(await listed, [4, 8, 3], 'the list that waited leaves task 1 out');
  t.strictSame(await offeredIds(h), [4, 8, 3], 'as the next list does');
});

// README, Linked sources (~1770-1772).
t.test('SOURCES: a refresh that only confirms the facts is no mutation: the workspace version and the task ETag stay', async (t) => {
  const { h, stub } = await sourceWorld(t);
  await offeredIds(h);
  const version = workspaceVersion(h);
  const etag = await etagOf(h, 1);
  h.clock.advance(PAST_MAX_AGE_MS);
  t.strictSame(await offeredIds(h), [4, 1, 8, 3]);
  t.equal(stub.gets('T-1').length, 2, 'T-1 was asked again and answered the same facts');
  t.equal((await readTask(h, 1)).externalContext[0].lastSuccessUtc, '2026-11-16T10:00:15.001Z', 'the refresh is on record');
  t.equal(workspaceVersion(h), version, 'the version stays');
  t.equal(await etagOf(h, 1), etag, 'and so does the ETag');
});

t.test('SOURCES: the very first refresh of an item records the replies to published requests (a mutation), not the baseline', async (t) => {
  const { h, stub } = await sourceWorld(t);
  const { stageId, incomingId } = await ask(h, 1, { isBlocking: false, publishExternally: true });
  await h.service.idle();
  t.equal(stub.gets('T-1').length, 0, 'T-1 has never been refreshed');
  stub.addReply('T-1', { id: 'reply-1', inReplyTo: stub.refs[0] as string, author: 'Grace', text: 'Warm.' });
  const version = workspaceVersion(h);

  t.strictSame(await offeredIds(h), [4, 1, 8, 3]);
  t.equal(stub.gets('T-1').length, 1, 'the first refresh');
  const task = await readTask(h, 1);
  t.strictSame(task.externalChanges.map((change: { kind: string; incomingId: number | null }) => [change.kind, change.incomingId]),
    [['reply', incomingId]], 'the reply is recorded; the baseline is no change');
  t.equal(task.humanRequests.length, 1);
  t.match(task.humanRequests[0], { stageId, responseState: 'responded', response: 'Warm.' });
  t.equal(workspaceVersion(h), version + 1, 'recording the reply is one mutation');

  h.clock.advance(PAST_MAX_AGE_MS);
  await offeredIds(h);
  t.equal(stub.gets('T-1').length, 2);
  t.equal((await readTask(h, 1)).externalChanges.length, 1, 'the reply, seen again, is not recorded twice');
  t.equal(workspaceVersion(h), version + 1, 'and that refresh only confirmed');
});
