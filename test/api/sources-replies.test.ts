import t from 'tap';
import { API, etagOf, readTask, workspaceVersion, type TapTest } from '../helpers/api.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';
import { expectProblem } from '../helpers/expect-problem.js';
import type { CallOptions, CallResult, Harness } from '../helpers/service.js';
import { sourceWorld, untilAsked, type SourceWorld } from '../helpers/stub-tracker.js';
import type { ProviderPublication, SourceProvider } from '../../lib/sources/provider.js';

/**
 * Publishing assistance requests to linked sources and the replies that come back (contract 8
 * and 9): POST after the 201, retried with back-off when it fails; a reply to the returned ref
 * becomes a `reply` change and marks the request responded, once. And the spec's secrecy rule:
 * "no connection data, correlation or raw provider payload anywhere in a response".
 */

const GRACE = 11;
/** Just past the age at which a refresh still counts (contract 9: at most 15 s old). */
const PAST_MAX_AGE_MS = 15_001;
let keys = 0;
const key = (what: string) => `${what}-${(keys += 1)}`;

interface Asked {
  stageId: number;
  incomingId: number;
}

async function ask(h: Harness, body: Record<string, unknown> = {}, taskId = 1): Promise<Asked> {
  const response = await h.call('POST', `${API}/tasks/${taskId}/human-requests`, {
    headers: { 'if-match': await etagOf(h, taskId), 'idempotency-key': key('ask') },
    body: {
      humanAssigneeId: GRACE, title: 'Which headline?', details: 'A or B?', estimatedMinutes: 20, priority: 'high',
      assistanceKind: 'Review', publishExternally: true, ...body,
    },
  });
  if (response.status !== 201) throw new Error(`asking answered ${response.status}: ${response.text}`);
  const detail = await h.call('GET', `${API}/human-requests/${response.json.id}`);
  return { stageId: response.json.id, incomingId: detail.json.incomingId };
}

const humanRequest = async (h: Harness, stageId: number, token?: string) =>
  (await h.call('GET', `${API}/human-requests/${stageId}`, token === undefined ? {} : { token })).json;

/** A non-blocking request on task 1, published: the world, the request and its ref. */
async function published(t: TapTest, body: Record<string, unknown> = {}): Promise<SourceWorld & Asked & { ref: string }> {
  const world = await sourceWorld(t);
  const asked = await ask(world.h, { isBlocking: false, ...body });
  await world.h.service.idle();
  const ref = world.stub.refs[0];
  if (ref === undefined) throw new Error('nothing was published');
  return { ...world, ...asked, ref };
}

t.test('SOURCES: publishExternally POSTs {title, details, assistanceKind, priority} to the first linked item after the 201', async (t) => {
  const { h, stub } = await sourceWorld(t, { links: { 1: ['T-1', 'T-2'] } });
  const version = workspaceVersion(h);
  await ask(h);
  await h.service.idle();
  t.equal(workspaceVersion(h), version + 1, 'publishing is not a second mutation');
  t.equal(stub.posts('T-1').length, 1, 'one POST to {base}T-1/requests');
  t.strictSame(stub.posts('T-1')[0]?.body, { title: 'Which headline?', details: 'A or B?', assistanceKind: 'Review', priority: 'high' });
  t.equal(stub.posts('T-2').length, 0, 'only the first linked item');

  await ask(h, { publishExternally: false, title: 'Local only' });
  await h.service.idle();
  t.equal(stub.requests.filter((r) => r.method === 'POST').length, 1, 'publishExternally false publishes nothing');

  // Requests raised back to back are all published, also when one is raised while another is in flight.
  let open: () => void = () => undefined;
  stub.failPublish('T-1', { kind: 'gate', open: new Promise<void>((resolve) => { open = resolve; }) });
  await ask(h, { title: 'Second' });
  while (stub.posts('T-1').length < 2) await new Promise((resolve) => setImmediate(resolve));
  await ask(h, { title: 'Third' });
  open();
  await h.service.idle();
  t.strictSame(stub.posts('T-1').map((r) => (r.body as { title: string }).title), ['Which headline?', 'Second', 'Third']);
});

t.test('SOURCES: a failed publication keeps the local request, is logged and is retried after the back-off', async (t) => {
  const { h, stub, logs } = await sourceWorld(t);
  stub.failPublish('T-1', { kind: 'status', status: 500 });
  const { stageId } = await ask(h);
  await h.service.idle();
  t.equal(stub.posts('T-1').length, 1, 'tried once');
  const detail = await h.call('GET', `${API}/human-requests/${stageId}`);
  t.equal(detail.status, 200, 'the local request exists');
  t.match(detail.json, { title: 'Which headline?', responseState: 'open', lifecycle: 'floating' });
  const logged = logs.find((log) => log.level === 'error' && /publishing an assistance request failed/.test(String(log.entry['message'])));
  t.ok(logged, 'the failure is logged');
  t.match(logged?.entry, { stageId, providerKey: 'tracker', attempt: 1, retryAtUtc: '2026-11-16T10:00:30.000Z' });

  stub.failPublish('T-1', null);
  h.clock.advance(29_000);
  await h.call('GET', `${API}/identity`);
  await h.service.idle();
  t.equal(stub.posts('T-1').length, 1, 'not retried before the 30 s back-off');
  h.clock.advance(2_000);
  await h.call('GET', `${API}/identity`);
  await h.service.idle();
  t.equal(stub.posts('T-1').length, 1, 'due at 30 s, but requests look for due publications at most every 5 s (last at 29 s)');
  h.clock.advance(3_000);
  await h.call('GET', `${API}/identity`);
  await h.service.idle();
  t.equal(stub.posts('T-1').length, 2, 'retried by a later request once due');
  t.strictSame(stub.posts('T-1')[1]?.body, stub.posts('T-1')[0]?.body, 'the same request');
  h.clock.advance(120_000);
  await h.call('GET', `${API}/identity`);
  await h.service.idle();
  t.equal(stub.posts('T-1').length, 2, 'published once it succeeded');

  // The back-off doubles: a second failure waits 60 s.
  stub.failPublish('T-1', { kind: 'invalid-json' });
  const second = await ask(h, { title: 'Again' });
  await h.service.idle();
  h.clock.advance(31_000);
  await h.call('GET', `${API}/identity`);
  await h.service.idle();
  t.equal(stub.posts('T-1').length, 4, 'failed twice');
  const failures = logs.filter((log) => log.entry['stageId'] === second.stageId);
  t.equal(failures.at(-1)?.entry['attempt'], 2);
  t.equal(failures.at(-1)?.entry['retryAtUtc'], '2026-11-16T10:04:05.000Z', '60 s after the second failure (10:03:05)');
});

t.test('SOURCES: a reply to a published request becomes a reply change and marks the request responded, once', async (t) => {
  const { h, stub, ref, stageId, incomingId } = await published(t);
  await h.call('GET', `${API}/tasks/available`);
  const version = workspaceVersion(h);
  stub.addReply('T-1', { id: 'reply-1', inReplyTo: ref, author: 'Grace in the tracker', text: 'Go with B', createdUtc: '2026-11-16T09:59:00.000Z' });
  stub.addReply('T-1', { id: 'reply-2', inReplyTo: 'some-other-ref', author: 'Someone', text: 'Unrelated' });
  stub.addReply('T-1', { id: 'reply-3', inReplyTo: null, author: 'Someone', text: 'A comment' });
  h.clock.advance(PAST_MAX_AGE_MS);
  await h.call('GET', `${API}/tasks/available`);
  t.equal(workspaceVersion(h), version + 1, 'the reply bumped the version once');

  const task = await readTask(h, 1);
  t.equal(task.externalChanges.length, 1, 'only the reply to our ref is recorded');
  t.strictSame(task.externalChanges[0], {
    id: task.externalChanges[0].id, incomingId, kind: 'reply', before: null, after: null,
    response: 'Go with B', author: 'Grace in the tracker', occurredUtc: '2026-11-16T09:59:00.000Z',
    receivedUtc: '2026-11-16T10:00:15.001Z', acknowledgedUtc: null,
  });
  t.strictSame(task.sourceActivations, [], 'a reply is not an activation');
  t.equal(task.requiresAttention, true);
  t.match(task.responsesAwaitingEvaluation, [{ id: incomingId, assistanceStageId: stageId, response: 'Go with B', respondedAtUtc: '2026-11-16T10:00:15.001Z' }]);
  const detail = await humanRequest(h, stageId);
  t.match(detail, { responseState: 'responded', response: 'Go with B', lifecycle: 'floating', status: 'Ready', respondedAtUtc: '2026-11-16T10:00:15.001Z' },
    'responded, the lifecycle unchanged');

  h.clock.advance(PAST_MAX_AGE_MS);
  await h.call('GET', `${API}/tasks/available`);
  h.clock.advance(PAST_MAX_AGE_MS);
  await h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': key('claim') } });
  t.ok(stub.gets('T-1').length >= 4, 'seen again by later refreshes');
  t.equal((await readTask(h, 1)).externalChanges.length, 1, 'the reply is recorded once however often it is seen');
  t.equal((await humanRequest(h, stageId)).incomingRevision, detail.incomingRevision, 'and the request is not touched again');
});

t.test('SOURCES: a reply time with an offset is the instant it names; a bare or unreadable one (or one over 64 characters) is the receipt time', async (t) => {
  const { h, stub, ref } = await published(t);
  stub.addReply('T-1', { id: 'offset', inReplyTo: ref, author: 'A', text: 'one', createdUtc: '2026-11-16T10:59:00+01:00' });
  stub.addReply('T-1', { id: 'bare', inReplyTo: ref, author: 'B', text: 'two', createdUtc: '2026-11-16T09:00:00' });
  stub.addReply('T-1', { id: 'beyond', inReplyTo: ref, author: 'C', text: 'three', createdUtc: '0000-01-01T00:30:00+01:00' });
  // Longer than 64 characters is unreadable even when its long fraction would parse; 46 is not.
  const longFraction = `2026-11-16T10:59:00.${'0'.repeat(39)}+01:00`;
  t.equal(longFraction.length, 65);
  stub.addReply('T-1', { id: 'long-time', inReplyTo: ref, author: 'D', text: 'four', createdUtc: longFraction });
  stub.addReply('T-1', { id: 'fits', inReplyTo: ref, author: 'E', text: 'five', createdUtc: longFraction.slice(0, 40) + '+01:00' });
  h.clock.advance(PAST_MAX_AGE_MS);
  await h.call('GET', `${API}/tasks/available`);
  const changes = (await readTask(h, 1)).externalChanges as { author: string; occurredUtc: string }[];
  t.same(changes.map(({ author, occurredUtc }) => [author, occurredUtc]), [
    ['A', '2026-11-16T09:59:00.000Z'],
    ['B', '2026-11-16T10:00:15.001Z'],
    ['C', '2026-11-16T10:00:15.001Z'],
    ['D', '2026-11-16T10:00:15.001Z'],
    ['E', '2026-11-16T09:59:00.000Z'],
  ]);
});

t.test('SOURCES: a reply over 20000 characters is cut to 20000 code points, in the response and in its reply change', async (t) => {
  const { h, stub, ref, stageId } = await published(t);
  const long = `${'a'.repeat(19_999)}\u{1F600}\u{1F600}`;
  stub.addReply('T-1', { id: 'long', inReplyTo: ref, author: 'A', text: long });
  h.clock.advance(PAST_MAX_AGE_MS);
  t.equal((await h.call('GET', `${API}/tasks/available`)).status, 200, 'the refresh that finds it');
  t.equal((await h.call('GET', `${API}/tasks/waiting`)).status, 200);
  const detail = await humanRequest(h, stageId);
  t.equal(detail.responseState, 'responded');
  t.equal(detail.response, `${'a'.repeat(19_999)}\u{1F600}`, '20000 code points, the pair kept whole');
  const task = await readTask(h, 1);
  t.equal(task.externalChanges[0].response, detail.response, 'the reply change holds the same: a source cannot grow the history without bound');
  t.equal(task.responsesAwaitingEvaluation[0].response, detail.response);
  t.strictSame(h.errors, [], 'nothing failed');
});

t.test('SOURCES: a reply alone does not refuse a claim', async (t) => {
  const { h, stub, ref } = await published(t);
  await h.call('GET', `${API}/tasks/available`);
  const etag = await etagOf(h, 1);
  stub.addReply('T-1', { id: 'reply-1', inReplyTo: ref, author: 'Grace', text: 'Done' });
  const response = await h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': etag, 'idempotency-key': key('claim') } });
  t.equal(response.status, 200, `the claim that saw the reply got its lease (${response.json?.code ?? ''})`);
  const task = await readTask(h, 1);
  t.equal(task.externalChanges.length, 1, 'the reply was recorded by the claim\'s refresh');
  t.equal(task.externalChanges[0].kind, 'reply');
});

t.test('SOURCES: a reply recorded by a waiting-list poll running beside the claim does not refuse the claim either', async (t) => {
  const { h, stub, ref } = await published(t);
  await h.call('GET', `${API}/tasks/available`);
  const etag = await etagOf(h, 1);
  stub.addReply('T-1', { id: 'reply-1', inReplyTo: ref, author: 'Grace', text: 'Done' });
  h.clock.advance(PAST_MAX_AGE_MS);
  // The poll asks T-1 first, and the claim while that call is held: they share the answer, and
  // the poll, first, records the reply.
  let open = (): void => undefined;
  stub.failRefresh('T-1', { kind: 'gate', open: new Promise<void>((resolve) => { open = resolve; }) });
  const asked = stub.gets('T-1').length;
  const poll = h.call('GET', `${API}/tasks/waiting`);
  await untilAsked(stub, 'T-1', asked);
  const claim = h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': etag, 'idempotency-key': key('claim') } });
  for (let turn = 0; turn < 20; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  open();
  const [polled, claimed] = await Promise.all([poll, claim]);
  t.equal(polled.status, 200);
  t.equal(stub.gets('T-1').length, asked + 1, 'the claim shared the poll\'s call');
  t.equal(claimed.status, 200, `the claim got its lease (${claimed.json?.code ?? ''})`);
  t.equal((await readTask(h, 1)).externalChanges.length, 1, 'the reply was recorded once');
});

t.test('SOURCES: a version number reached again after the database went back is not taken for a reply\'s step', async (t) => {
  const { h, stub, ref } = await published(t);
  stub.addReply('T-1', { id: 'reply-1', inReplyTo: ref, author: 'Grace', text: 'Done' });
  h.clock.advance(PAST_MAX_AGE_MS);
  await h.call('GET', `${API}/tasks/waiting`);
  const replied = workspaceVersion(h);
  // A restore (or SQL of the embedder's) takes the version back one step.
  h.db.prepare('UPDATE organisations SET workspace_version = workspace_version - 1 WHERE id = 1').run();
  const etag = await etagOf(h, 1);
  let open = (): void => undefined;
  stub.failRefresh('T-1', { kind: 'gate', open: new Promise<void>((resolve) => { open = resolve; }) });
  const asked = stub.gets('T-1').length;
  const claim = h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': etag, 'idempotency-key': key('claim') } });
  await untilAsked(stub, 'T-1', asked);
  // A real write while the claim's source is asked reaches the reply's old number.
  t.equal((await h.call('PATCH', `${API}/tasks/3`, { headers: { 'if-match': await etagOf(h, 3) }, body: { sequence: 6 } })).status, 204);
  t.equal(workspaceVersion(h), replied);
  open();
  expectProblem(t, await claim, 'stale_update', 'the write is not taken for the reply');
});

t.test('SOURCES: a change of facts a refresh recorded on no open task meanwhile is no reply: the claim is 412', async (t) => {
  const world = await sourceWorld(t);
  const { h, stub } = world;
  await h.call('GET', `${API}/tasks/available`); // the items' first facts
  // Task 3's question is published to T-2, and task 3 is finished: the waiting poll still asks T-2.
  await ask(h, { isBlocking: false }, 3);
  await h.service.idle();
  t.equal((await h.call('PATCH', `${API}/tasks/3`, { headers: { 'if-match': await etagOf(h, 3) }, body: { status: 'Done' } })).status, 204);
  const etag = await etagOf(h, 1);
  h.clock.advance(PAST_MAX_AGE_MS);
  let open = (): void => undefined;
  stub.failRefresh('T-1', { kind: 'gate', open: new Promise<void>((resolve) => { open = resolve; }) });
  const asked = stub.gets('T-1').length;
  const claim = h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': etag, 'idempotency-key': key('claim') } });
  await untilAsked(stub, 'T-1', asked);
  stub.setItem('T-2', { title: 'Tracker two, renamed' });
  const version = workspaceVersion(h);
  await h.call('GET', `${API}/tasks/waiting`);
  t.equal(workspaceVersion(h), version + 1, 'the poll recorded the new facts of T-2 (on no open task)');
  open();
  expectProblem(t, await claim, 'stale_update', 'a change of facts is not a reply alone');
});

t.test('SOURCES: a refresh step reaching a remembered version again (the database went back) replaces the remembered one', async (t) => {
  // The clock moves 30 s while the claim's source is held: its deadline must not run out first.
  const world = await sourceWorld(t, { service: { sourceTimeoutMs: 3_600_000 } });
  const { h, stub } = world;
  await h.call('GET', `${API}/tasks/available`); // the items' first facts
  // Two questions on task 1 published to T-1: after a reply to the first, the poll still asks T-1.
  await ask(h, { isBlocking: false });
  await ask(h, { isBlocking: false });
  await h.service.idle();
  const [first] = stub.refs;
  // A claim of task 3 waits on T-2 from version v.
  const etag = await etagOf(h, 3);
  const v = workspaceVersion(h);
  let open = (): void => undefined;
  stub.failRefresh('T-2', { kind: 'gate', open: new Promise<void>((resolve) => { open = resolve; }) });
  const asked = stub.gets('T-2').length;
  const claim = h.call('POST', `${API}/tasks/3/claim`, { headers: { 'if-match': etag, 'idempotency-key': key('claim') } });
  await untilAsked(stub, 'T-2', asked);
  // A reply alone reaches v + 1; the database goes back to v; a change of T-1's facts reaches v + 1 again.
  stub.addReply('T-1', { id: 'reply-1', inReplyTo: first as string, author: 'Grace', text: 'Yes' });
  h.clock.advance(PAST_MAX_AGE_MS);
  await h.call('GET', `${API}/tasks/waiting`);
  t.equal(workspaceVersion(h), v + 1);
  h.db.prepare('UPDATE organisations SET workspace_version = workspace_version - 1 WHERE id = 1').run();
  stub.setItem('T-1', { title: 'Tracker one, renamed' });
  h.clock.advance(PAST_MAX_AGE_MS);
  await h.call('GET', `${API}/tasks/waiting`);
  t.equal(workspaceVersion(h), v + 1, 'the change of facts reached the same number');
  open();
  expectProblem(t, await claim, 'stale_update', 'judged by the change of facts, not by the reply it replaced');
});

t.test('SOURCES: without human-requests:read a reply change shows response and author as null', async (t) => {
  const { h, stub, ref } = await published(t);
  stub.addReply('T-1', { id: 'r', inReplyTo: ref, author: 'Grace', text: 'Secret answer' });
  await h.call('GET', `${API}/tasks/available`);
  const reader = await h.call('GET', `${API}/tasks/1`, { token: TOKENS.readOnly });
  t.equal(reader.status, 200);
  t.match(reader.json.externalChanges, [{ kind: 'reply', response: null, author: null }]);
  t.strictSame(reader.json.responsesAwaitingEvaluation, []);
  t.strictSame(reader.json.humanRequests, []);
  t.equal(reader.json.requiresAttention, true, 'the flag is unchanged');
  t.notOk(reader.text?.includes('Secret answer'), 'the text appears nowhere');
  t.match((await readTask(h, 1)).externalChanges, [{ response: 'Secret answer', author: 'Grace' }], 'visible with the scope');
});

t.test('SOURCES: a followup evaluation on a published request publishes the follow-up message', async (t) => {
  const { h, stub, ref, stageId, incomingId } = await published(t);
  stub.addReply('T-1', { id: 'r1', inReplyTo: ref, author: 'Grace', text: 'A' });
  await h.call('GET', `${API}/tasks/available`);
  const task = await readTask(h, 1);
  const revision = task.responsesAwaitingEvaluation[0].revision;
  const followup = await h.call('POST', `${API}/tasks/1/external-evaluation`, {
    headers: { 'if-match': task.etag, 'idempotency-key': key('followup') },
    body: { decision: 'followup', incomingId, revision, message: 'Why A?' },
  });
  t.equal(followup.status, 204);
  await h.service.idle();
  t.equal(stub.posts('T-1').length, 2, 'published again');
  t.strictSame(stub.posts('T-1')[1]?.body, { title: 'Which headline?', details: 'Why A?', assistanceKind: 'Review', priority: 'high' },
    'the follow-up message is the new question');
  t.match(await humanRequest(h, stageId), { responseState: 'open', details: 'A or B?\n\nFollow-up: Why A?' });

  // A reply to the follow-up's own ref answers the same request.
  const second = stub.refs[1] ?? '';
  stub.addReply('T-1', { id: 'r2', inReplyTo: second, author: 'Grace', text: 'Because' });
  h.clock.advance(PAST_MAX_AGE_MS);
  await h.call('GET', `${API}/tasks/available`);
  t.match(await humanRequest(h, stageId), { responseState: 'responded', response: 'Because' });
  t.equal((await readTask(h, 1)).externalChanges.length, 2);
});

const GRACE_TOKEN = 'wta_test_grace_desk_sources';

/** The world plus a client for Grace, the human, to answer locally through her Incoming list. */
async function withGrace(t: TapTest, options: Omit<Parameters<typeof sourceWorld>[1], 'fixture'> = {}) {
  const fixture = baseFixture();
  fixture.clients.push({
    id: 110, organisationId: 1, name: 'grace-desk', token: GRACE_TOKEN, sponsorId: 11, resourceId: 11, isActive: true,
    scopes: ['tasks:read', 'tasks:update'],
  });
  const world = await sourceWorld(t, { ...options, fixture });
  const completeLocally = async (incomingId: number, response: string) => {
    const items = (await world.h.call('GET', `${API}/incoming?includeAccepted=true`, { token: GRACE_TOKEN })).json;
    const item = items.find((entry: { id: number }) => entry.id === incomingId);
    const done = await world.h.call('POST', `${API}/incoming/${incomingId}/complete`, {
      token: GRACE_TOKEN, headers: { 'if-match': item.etag, 'idempotency-key': key('complete') }, body: { response },
    });
    if (done.status !== 204) throw new Error(`complete answered ${done.status}`);
  };
  const followUp = async (incomingId: number, message: string) => {
    const task = await readTask(world.h, 1);
    const awaiting = task.responsesAwaitingEvaluation.find((entry: { id: number }) => entry.id === incomingId);
    return world.h.call('POST', `${API}/tasks/1/external-evaluation`, {
      headers: { 'if-match': task.etag, 'idempotency-key': key('followup') },
      body: { decision: 'followup', incomingId, revision: awaiting.revision, message },
    });
  };
  return { ...world, completeLocally, followUp };
}

t.test('SOURCES: a publish ref over 1000 characters, which no reply can name, is published once, logged as an error and not kept', async (t) => {
  const posted: { details: string | null }[] = [];
  const longRef = 'r'.repeat(1001);
  const longRefs: SourceProvider = {
    refresh: async () => ({ title: 'Long refs', replies: [{ id: 'x1', inReplyTo: '', author: 'Someone', text: 'Names the empty ref' }] }),
    publish: async (_itemId, request) => ((posted.push(request)), { ref: longRef }),
  };
  const { h, logs, completeLocally, followUp } = await withGrace(t, {
    links: { 1: [{ providerKey: 'long', itemId: 'L-1' }] }, service: { sources: { long: longRefs } },
  });
  const { stageId, incomingId } = await ask(h, { isBlocking: false });
  await h.service.idle();
  t.equal(posted.length, 1);
  const logged = logs.find((log) => log.level === 'error' && /longer than 1000 characters/.test(String(log.entry['message'])));
  t.match(logged?.entry, { stageId, providerKey: 'long' }, 'said at once: replies naming it are skipped');
  t.equal(h.db.prepare('SELECT external_ref FROM source_publications WHERE stage_id = ?').pluck().get(stageId), '',
    'marked as sent, without the ref');
  t.equal(h.db.prepare('SELECT count(*) FROM source_publication_refs').pluck().get(), 0, 'no ref for replies to name');
  h.clock.advance(2 * 3_600_000);
  await h.call('GET', `${API}/tasks/waiting`);
  await h.service.idle();
  t.equal(posted.length, 1, 'not posted again: the source has the request');
  t.match(await humanRequest(h, stageId), { responseState: 'open' }, 'a reply naming an empty ref answers nothing');

  // Still a request the source took: a follow-up sends only the new question.
  await completeLocally(incomingId, 'Answered at the desk');
  t.equal((await followUp(incomingId, 'More?')).status, 204);
  await h.service.idle();
  t.equal(posted.length, 2);
  t.equal(posted[1]?.details, 'More?', 'the source has the question already');
});

t.test('SOURCES: a publish answered 2xx without a ref is a failed publication: logged, retried after the back-off, published once a ref comes', async (t) => {
  // What an untyped provider (or a plain HTTP source) may answer, whatever the interface says.
  const answers = [{}, { ref: null }] as unknown as ProviderPublication[];
  let posts = 0;
  const forgetful: SourceProvider = {
    refresh: async () => ({ title: 'Forgetful' }),
    publish: async () => ((posts += 1), answers.shift() ?? { ref: 'F-1' }),
  };
  const { h, logs } = await sourceWorld(t, { links: { 1: [{ providerKey: 'forgetful', itemId: 'F-1' }] }, service: { sources: { forgetful } } });
  const { stageId } = await ask(h);
  await h.service.idle();
  t.equal(posts, 1);
  const failures = () => logs.filter((log) => log.level === 'error' && /publishing an assistance request failed/.test(String(log.entry['message'])));
  t.match(failures()[0]?.entry, {
    stageId, providerKey: 'forgetful', attempt: 1, retryAtUtc: '2026-11-16T10:00:30.000Z', error: 'the source answered without a ref',
  }, 'the log says why');
  t.equal(h.db.prepare('SELECT external_ref FROM source_publications WHERE stage_id = ?').pluck().get(stageId), null, 'not marked as sent');
  h.clock.advance(31_000);
  await h.call('GET', `${API}/identity`);
  await h.service.idle();
  t.equal(posts, 2, 'retried; a null ref fails the same way');
  t.match(failures()[1]?.entry, { stageId, attempt: 2, retryAtUtc: '2026-11-16T10:01:31.000Z', error: 'the source answered without a ref' },
    'the back-off doubles: 60 s after the second failure (10:00:31)');
  h.clock.advance(55_000);
  await h.call('GET', `${API}/identity`);
  await h.service.idle();
  t.equal(posts, 2, 'not retried before then');
  h.clock.advance(6_000);
  await h.call('GET', `${API}/identity`);
  await h.service.idle();
  t.equal(posts, 3, 'retried once due');
  t.equal(h.db.prepare('SELECT external_ref FROM source_publications WHERE stage_id = ?').pluck().get(stageId), 'F-1', 'sent, with its ref');
  h.clock.advance(2 * 3_600_000);
  await h.call('GET', `${API}/identity`);
  await h.service.idle();
  t.equal(posts, 3, 'not posted again');
});

t.test('SOURCES: a followup on a request the source never took publishes the whole request; an unpublished one publishes nothing', async (t) => {
  const { h, stub, completeLocally, followUp } = await withGrace(t);
  stub.failPublish('T-1', { kind: 'status', status: 500 });
  const failed = await ask(h, { isBlocking: false });
  await h.service.idle();
  t.equal(stub.posts('T-1').length, 1, 'the first attempt failed');
  stub.failPublish('T-1', null);
  await completeLocally(failed.incomingId, 'Answered at the desk');
  t.equal((await followUp(failed.incomingId, 'More?')).status, 204);
  await h.service.idle();
  t.equal(stub.posts('T-1').length, 2);
  t.strictSame(stub.posts('T-1')[1]?.body, { title: 'Which headline?', details: 'A or B?\n\nFollow-up: More?', assistanceKind: 'Review', priority: 'high' },
    'the original question is not lost: the whole request goes, follow-up included');

  const local = await ask(h, { publishExternally: false, isBlocking: false, title: 'Local' });
  await completeLocally(local.incomingId, 'Fine');
  t.equal((await followUp(local.incomingId, 'Sure?')).status, 204);
  await h.service.idle();
  t.equal(stub.posts('T-1').length, 2, 'a request that was not to be published is not published by its follow-up');
});

t.test('SOURCES: a late reply to a resolved request is recorded but does not reopen it, nor refuse the claim that finds it', async (t) => {
  const { h, stub, completeLocally } = await withGrace(t);
  const { stageId, incomingId } = await ask(h, { isBlocking: true });
  await h.service.idle();
  const ref = stub.refs[0] ?? '';
  // Grace answers at her desk and the agent resolves; only then does her tracker reply arrive.
  await completeLocally(incomingId, 'Yes');
  const task = await readTask(h, 1);
  const resolve = await h.call('POST', `${API}/tasks/1/external-evaluation`, {
    headers: { 'if-match': task.etag, 'idempotency-key': key('resolve') },
    body: { decision: 'resolve', incomingId, revision: task.responsesAwaitingEvaluation[0].revision },
  });
  t.equal(resolve.status, 204);
  const resolved = await humanRequest(h, stageId);
  stub.addReply('T-1', { id: 'r1', inReplyTo: ref, author: 'Grace', text: 'Yes, also here' });
  await h.call('GET', `${API}/tasks/available`);
  t.equal(stub.gets('T-1').length, 1, 'the unblocked task was refreshed');
  const after = await readTask(h, 1);
  t.match(after.externalChanges, [{ kind: 'reply', incomingId, response: 'Yes, also here' }], 'the reply is recorded');
  t.match(await humanRequest(h, stageId), { responseState: 'resolved', lifecycle: 'completed', response: 'Yes', incomingRevision: resolved.incomingRevision },
    'the request stays resolved, untouched');
  t.equal(after.blocked, false, 'the task is not blocked again');
  t.strictSame(after.responsesAwaitingEvaluation, []);
  t.equal(after.requiresAttention, true, 'the unacknowledged reply change asks for attention');

  // Found by a claim's own refresh, a late reply does not refuse that claim (contract 9).
  stub.addReply('T-1', { id: 'r2', inReplyTo: ref, author: 'Grace', text: 'And once more' });
  const claim = await h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': after.etag, 'idempotency-key': key('claim') } });
  t.equal(claim.status, 200, `the claim got its lease (${claim.json?.code ?? ''})`);
  t.equal((await readTask(h, 1)).externalChanges.length, 2, 'the claim\'s refresh recorded the second reply');
  t.match(await humanRequest(h, stageId), { responseState: 'resolved', response: 'Yes' });
});

t.test('SOURCES: replies to a blocking request are picked up while the task waits', async (t) => {
  const { h, stub, ref, stageId } = await published(t, { isBlocking: true });
  stub.addReply('T-1', { id: 'r1', inReplyTo: ref, author: 'Grace', text: 'Yes' });
  const waiting = await h.call('GET', `${API}/tasks/waiting`);
  t.ok(waiting.json.some((task: { id: number }) => task.id === 1), 'task 1 is waiting on human assistance');
  t.equal(stub.gets('T-1').length, 1, 'the waiting list refreshed its source');
  t.match(await humanRequest(h, stageId), { responseState: 'responded' });
});

t.test('SOURCES: polling the waiting list picks up replies to a non-blocking request on a leased task it does not list', async (t) => {
  const { h, stub, ref, stageId } = await published(t);
  const claim = await h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': key('claim') } });
  t.equal(claim.status, 200, 'task 1 is leased, so no offer list refreshes it');
  const seen = stub.gets('T-1').length;
  stub.addReply('T-1', { id: 'r1', inReplyTo: ref, author: 'Grace', text: 'Yes' });
  h.clock.advance(PAST_MAX_AGE_MS);
  const waiting = await h.call('GET', `${API}/tasks/waiting`);
  t.notOk(waiting.json.some((task: { id: number }) => task.id === 1), 'task 1 is not waiting');
  t.equal(stub.gets('T-1').length, seen + 1, 'the waiting list refreshed the item a reply is expected from');
  t.match(await humanRequest(h, stageId), { responseState: 'responded', response: 'Yes' });
  t.equal((await readTask(h, 1)).requiresAttention, true, 'the task asks for evaluation');

  await h.call('GET', `${API}/tasks/waiting`);
  t.equal(stub.gets('T-1').length, seen + 1, 'a responded request expects nothing more');
  h.clock.advance(PAST_MAX_AGE_MS);
  await h.call('GET', `${API}/tasks/waiting`);
  t.equal(stub.gets('T-1').length, seen + 1, 'not even once the refresh is old');
});

t.test('SOURCES: no response contains the provider\'s base URL, port, publication refs or raw provider members', async (t) => {
  const fixture = baseFixture();
  fixture.clients.push({
    id: 110, organisationId: 1, name: 'grace-desk', token: GRACE_TOKEN, sponsorId: 11, resourceId: 11, isActive: true,
    scopes: ['tasks:read', 'tasks:update'],
  });
  const { h, stub } = await sourceWorld(t, {
    fixture,
    items: {
      'T-1': { title: 'Tracker one', description: 'D', businessStatus: 'open', rawSecretMember: 'raw-value-1', links: { self: 'raw-link' } },
      'T-2': { title: 'Tracker two', rawSecretMember: 'raw-value-2' },
    },
  });
  const seen: CallResult[] = [];
  const call = async (method: string, path: string, options: CallOptions = {}): Promise<CallResult> => {
    const response = await h.call(method, `${API}${path}`, options);
    seen.push(response);
    return response;
  };

  await call('GET', '/identity');
  await call('GET', '/tasks/available');
  const asked = await call('POST', '/tasks/1/human-requests', {
    headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': key('secrecy') },
    body: { humanAssigneeId: 11, title: 'Q', estimatedMinutes: 5, isBlocking: false, publishExternally: true },
  });
  await h.service.idle();
  const ref = stub.refs[0] ?? 'no-ref';
  const detail = await call('GET', `/human-requests/${asked.json.id}`);
  stub.addReply('T-1', { id: 'reply-1', inReplyTo: ref, author: 'Grace', text: 'Answer', rawReplyMember: 'raw-reply-value' });
  stub.setItem('T-2', { title: 'Tracker two, changed', rawSecretMember: 'raw-value-3' });
  h.clock.advance(PAST_MAX_AGE_MS);
  await call('GET', '/tasks/available');
  await call('GET', '/tasks/waiting');
  await call('GET', '/tasks/1');
  await call('GET', '/tasks/3');
  await call('GET', '/tasks/1', { token: TOKENS.readOnly });
  await call('GET', `/human-requests/${asked.json.id}`);
  await call('GET', '/incoming?includeAccepted=true', { token: GRACE_TOKEN });
  // A followup publishes again (a second ref), then the error paths of a claim.
  const task = await readTask(h, 1);
  await call('POST', '/tasks/1/external-evaluation', {
    headers: { 'if-match': task.etag, 'idempotency-key': key('secrecy') },
    body: { decision: 'followup', incomingId: detail.json.incomingId, revision: task.responsesAwaitingEvaluation[0].revision, message: 'More?' },
  });
  await h.service.idle();
  stub.failRefresh('T-1', { kind: 'status', status: 500 });
  await call('POST', '/tasks/1/claim', { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': key('secrecy') } });
  stub.failRefresh('T-1', null);
  stub.setItem('T-1', { title: 'Tracker one, changed', rawSecretMember: 'raw-value-4' });
  await call('POST', '/tasks/1/claim', { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': key('secrecy') } });
  const granted = await call('POST', '/tasks/1/claim', { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': key('secrecy') } });
  t.equal(granted.status, 200, 'the flow got as far as a lease');
  await call('GET', '/tasks/1');

  t.equal(stub.refs.length, 2, 'two publications happened');
  const forbidden = [
    stub.base, '127.0.0.1', `:${stub.port}`, '/items/', ...stub.refs, 'stub-ref', 'c0ffee', 'trackerUrl', '/secret/',
    'rawSecretMember', 'raw-value', 'raw-link', 'rawReplyMember', 'raw-reply-value', 'inReplyTo', 'reply-1', 'programmed failure',
  ];
  t.ok(seen.length >= 15, `${seen.length} responses scanned`);
  for (const response of seen) {
    const text = `${JSON.stringify(response.headers)}\n${response.text ?? ''}`;
    for (const secret of forbidden) {
      if (text.includes(secret)) t.fail(`a ${response.status} response contains ${JSON.stringify(secret)}`);
    }
  }
  t.pass('scanned');
});

t.test('SOURCES: at most 100 new replies are recorded per refresh of an item; the rest come with the next ones', async (t) => {
  const { h, stub, ref } = await published(t);
  for (let index = 0; index < 150; index += 1) stub.addReply('T-1', { id: `r-${index}`, inReplyTo: ref, author: 'A', text: `reply ${index}` });
  const replies = () => h.db.prepare("SELECT count(*) FROM source_changes WHERE kind = 'reply'").pluck().get();
  h.clock.advance(PAST_MAX_AGE_MS);
  t.equal((await h.call('GET', `${API}/tasks/waiting`)).status, 200);
  t.equal(replies(), 100, 'the first refresh records 100');
  // Answered now, the request owes no reply: the offer list refreshes the task's item.
  h.clock.advance(PAST_MAX_AGE_MS);
  t.equal((await h.call('GET', `${API}/tasks/available`)).status, 200);
  t.equal(replies(), 150, 'the next one the other 50');
  h.clock.advance(PAST_MAX_AGE_MS);
  await h.call('GET', `${API}/tasks/available`);
  t.equal(replies(), 150, 'and each only once');
});

t.test('SOURCES: a reply whose id or inReplyTo is over 1000 characters is skipped; its author is cut to 200', async (t) => {
  const { h, stub, ref, stageId } = await published(t);
  stub.addReply('T-1', { id: 'x'.repeat(1001), inReplyTo: ref, author: 'A', text: 'an id no one can keep' });
  stub.addReply('T-1', { id: 'y', inReplyTo: `${ref}${'z'.repeat(1000)}`, author: 'A', text: 'answers nothing of ours' });
  stub.addReply('T-1', { id: 'z', inReplyTo: ref, author: 'a'.repeat(300), text: 'kept' });
  h.clock.advance(PAST_MAX_AGE_MS);
  t.equal((await h.call('GET', `${API}/tasks/waiting`)).status, 200);
  const changes = (await readTask(h, 1)).externalChanges;
  t.strictSame(changes.map((change: { response: string }) => change.response), ['kept']);
  t.equal(changes[0].author, 'a'.repeat(200));
  t.equal((await humanRequest(h, stageId)).response, 'kept');
});

t.test('SOURCES: a reply to a question asked before the task was finished still comes in when the agent polls its waiting list', async (t) => {
  const { h, stub, ref, stageId } = await published(t);
  const done = await h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': await etagOf(h, 1) }, body: { status: 'Done' } });
  t.equal(done.status, 204, 'finished while its non-blocking question is open');
  stub.addReply('T-1', { id: 'after-done', inReplyTo: ref, author: 'Grace', text: 'Yes' });
  h.clock.advance(PAST_MAX_AGE_MS);
  const asked = stub.gets('T-1').length;
  await h.call('GET', `${API}/tasks/waiting`);
  t.equal(stub.gets('T-1').length, asked + 1, 'the item is refreshed, though the task is in no list');
  t.match(await humanRequest(h, stageId), { responseState: 'responded', response: 'Yes' });
});

t.test('SOURCES: a claim refused 412 because another write committed while its source was asked keeps the reply its refresh recorded', async (t) => {
  const { h, stub, ref, stageId } = await published(t);
  await h.call('GET', `${API}/tasks/available`);
  const claimEtag = await etagOf(h, 1);
  const otherEtag = await etagOf(h, 2);
  stub.addReply('T-1', { id: 'reply-1', inReplyTo: ref, author: 'Grace', text: 'Done' });
  const version = workspaceVersion(h);
  // The claim passes If-Match and asks the source; the PATCH, sent in the same turn, is applied in
  // the open write batch before the source's answer can come back.
  const claiming = h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': claimEtag, 'idempotency-key': key('claim') } });
  const patching = h.call('PATCH', `${API}/tasks/2`, { headers: { 'if-match': otherEtag }, body: { title: 'Review the copy' } });
  const [claimed, patched] = await Promise.all([claiming, patching]);
  t.equal(patched.status, 204, 'the other write');
  t.equal(claimed.status, 412, `the claim, checked again after its refresh (${claimed.json?.code ?? ''})`);
  t.equal(claimed.json?.code, 'stale_update');
  t.equal(workspaceVersion(h), version + 2, 'the PATCH and the refresh\'s record, one step each');
  const task = await readTask(h, 1);
  t.strictSame(task.externalChanges.map((change: { kind: string }) => change.kind), ['reply'], 'the reply stays recorded');
  t.equal(task.requiresAttention, true);
  t.equal((await humanRequest(h, stageId)).responseState, 'responded', 'and its request is responded');
  t.equal((h.db.prepare('SELECT count(*) AS n FROM claims WHERE task_id = 1').get() as { n: number }).n, 0, 'no lease');
});
