import t from 'tap';
import type { Harness } from '../helpers/service.js';
import { baseFixture, TOKENS, DESK_TOKENS, withDesks } from '../helpers/fixture.js';
import { adaWorld, addAssistance, API, etagOf, type TapTest } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';

/**
 * GET /incoming (spec endpoint rules, contract 5 and 8): the recipient's items only, the
 * includeAccepted filter, the order, every Incoming field, and suggestions from the recipient's
 * calendar and plan. Grace (staff 11) works the default Monday-Friday 09:00-17:00; the tests run
 * on Monday 16 November 2026 at 10:00 London.
 */

const GRACE_TOKEN: string = DESK_TOKENS.grace;
const GRACE_READER: string = DESK_TOKENS.graceReader;
const GAIL_TOKEN: string = DESK_TOKENS.gail;
const MINUTE = 60_000;

function world(): Harness {
  return adaWorld({ fixture: withDesks(baseFixture()) });
}

interface Created {
  stageId: number;
  incomingId: number;
}

/** Ada (or `token`) asks from `taskId`; answers the stage and Incoming ids. */
async function ask(h: Harness, taskId: number, body: Record<string, unknown>, token?: string): Promise<Created> {
  const response = await h.call('POST', `${API}/tasks/${taskId}/human-requests`, {
    headers: { 'if-match': await etagOf(h, taskId, token) },
    body: { humanAssigneeId: 11, estimatedMinutes: 30, ...body },
    ...(token === undefined ? {} : { token }),
  });
  if (response.status !== 201) throw new Error(`ask gave ${response.status} ${response.text}`);
  const stageId = response.json.id as number;
  const read = await h.call('GET', `${API}/human-requests/${stageId}`, token === undefined ? {} : { token });
  return { stageId, incomingId: read.json.incomingId };
}

const list = (h: Harness, query = '', token = GRACE_TOKEN) => h.call('GET', `${API}/incoming${query}`, { token });
const ids = async (h: Harness, query = '', token = GRACE_TOKEN): Promise<number[]> =>
  (await list(h, query, token)).json.map((item: { id: number }) => item.id);

async function act(h: Harness, incomingId: number, action: string, body?: unknown, token = GRACE_TOKEN) {
  const item = (await list(h, '?includeAccepted=true', token)).json.find((entry: { id: number }) => entry.id === incomingId);
  if (item === undefined) throw new Error(`incoming ${incomingId} is not listed`);
  const response = await h.call('POST', `${API}/incoming/${incomingId}/${action}`, {
    token, headers: { 'if-match': item.etag, 'idempotency-key': `${action}-${incomingId}-${h.clock.now()}` },
    ...(body === undefined ? {} : { body }),
  });
  if (response.status !== 204) throw new Error(`${action} gave ${response.status} ${response.text}`);
}

t.test('only the recipient sees its items; other recipients\' items are invisible', async (t) => {
  const h = world();
  const forGrace = await ask(h, 1, { title: 'For Grace' });
  const forBob = await ask(h, 2, { title: 'For Bob, later' });
  await act(h, forBob.incomingId, 'reassign', { assigneeId: 12 });
  const globex = await ask(h, 90, { title: 'For Gail', humanAssigneeId: 21 }, TOKENS.otherOrg);

  t.strictSame(await ids(h), [forGrace.incomingId], 'Grace sees hers only');
  t.strictSame(await ids(h, '?includeAccepted=true'), [forGrace.incomingId], 'also with includeAccepted');
  t.strictSame(await ids(h, '', TOKENS.bob), [forBob.incomingId], 'Bob (an agent) sees what was reassigned to him');
  t.strictSame(await ids(h, '', GAIL_TOKEN), [globex.incomingId], 'Gail sees the Globex item');
  t.strictSame(await ids(h, '', TOKENS.ada), [], 'Ada, the requester, is not a recipient');
  t.strictSame(await ids(h, '', TOKENS.otherOrg), [], 'Gus is not a recipient either');
  t.strictSame(await ids(h, '', GRACE_READER), [forGrace.incomingId], 'tasks:read is the scope');
  expectProblem(t, await list(h, '', TOKENS.identityOnly), 'permission_denied', 'identity-only client');
});

t.test('tasks:read is required (403 permission_denied without it)', async (t) => {
  const fixture = baseFixture();
  fixture.clients.push({ id: 113, organisationId: 1, name: 'grace-writer', token: 'wta_test_grace_writer', sponsorId: 11, resourceId: 11, isActive: true, scopes: ['tasks:update'] });
  const h = adaWorld({ fixture });
  expectProblem(t, await list(h, '', 'wta_test_grace_writer'), 'permission_denied', 'tasks:update alone');
});

t.test('floating only by default; every lifecycle with includeAccepted=true; false is the default; other values and unknown queries 400', async (t) => {
  const h = world();
  const floating = await ask(h, 1, { title: 'Floating' });
  const planned = await ask(h, 2, { title: 'Planned' });
  const started = await ask(h, 3, { title: 'Started' });
  const completed = await ask(h, 4, { title: 'Completed' });
  await act(h, planned.incomingId, 'plan', { plannedStart: '2026-11-17T09:00:00' });
  await act(h, started.incomingId, 'start');
  await act(h, completed.incomingId, 'complete', { response: 'Done' });

  t.strictSame(await ids(h), [floating.incomingId], 'default: floating only');
  t.strictSame(await ids(h, '?includeAccepted=false'), [floating.incomingId], 'false: the same as the default');
  const all = (await list(h, '?includeAccepted=true')).json;
  t.strictSame(all.map((item: { id: number }) => item.id).sort((a: number, b: number) => a - b),
    [floating.incomingId, planned.incomingId, started.incomingId, completed.incomingId].sort((a, b) => a - b), 'true: every lifecycle');
  t.strictSame(all.map((item: { status: string }) => item.status).sort(), ['completed', 'floating', 'inprogress', 'planned']);

  for (const query of ['?includeAccepted=yes', '?includeAccepted=1', '?includeAccepted=TRUE', '?includeAccepted=', '?includeAccepted=true&includeAccepted=true', '?status=floating', '?includeaccepted=true']) {
    expectProblem(t, await list(h, query), 'validation_failed', query);
  }
});

t.test('order: priority (critical first), then requestedAtUtc, then id', async (t) => {
  const h = world();
  const lowEarly = await ask(h, 1, { title: 'low, 10:00', priority: 'low' });
  h.clock.advance(MINUTE);
  const normalA = await ask(h, 1, { title: 'normal, 10:01 a' });
  const normalB = await ask(h, 2, { title: 'normal, 10:01 b' });
  h.clock.advance(MINUTE);
  const criticalLate = await ask(h, 3, { title: 'critical, 10:02', priority: 'critical' });
  const highLate = await ask(h, 3, { title: 'high, 10:02', priority: 'high' });
  h.clock.advance(MINUTE);
  const normalEarlier = await ask(h, 2, { title: 'normal, 10:03' });
  const criticalLater = await ask(h, 1, { title: 'critical, 10:03', priority: 'critical' });

  t.ok(normalA.incomingId < normalB.incomingId, 'same time: ids decide');
  t.strictSame(await ids(h), [
    criticalLate.incomingId, criticalLater.incomingId, highLate.incomingId,
    normalA.incomingId, normalB.incomingId, normalEarlier.incomingId, lowEarly.incomingId,
  ]);
  // Order across lifecycles as well.
  await act(h, lowEarly.incomingId, 'start');
  const all = await ids(h, '?includeAccepted=true');
  t.equal(all.at(-1), lowEarly.incomingId, 'an accepted low item still sorts last');
});

t.test('order: within a priority an earlier requestedAtUtc comes first, whatever the ids say', async (t) => {
  const h = world();
  addAssistance(h, { stageId: 9001, taskId: 1, incomingId: 9001, createdUtc: '2026-11-16T09:05:00.000Z', title: 'later, lower id' });
  addAssistance(h, { stageId: 9002, taskId: 1, incomingId: 9002, createdUtc: '2026-11-16T09:00:00.000Z', title: 'earlier, higher id' });
  addAssistance(h, { stageId: 9003, taskId: 1, incomingId: 9000, createdUtc: '2026-11-16T09:10:00.000Z', title: 'latest, lowest id' });
  t.strictSame(await ids(h), [9002, 9001, 9000]);
});

t.test('an empty list is []', async (t) => {
  const h = world();
  const response = await list(h);
  t.equal(response.status, 200);
  t.equal(response.text, '[]');
  t.strictSame((await list(h, '?includeAccepted=true')).json, []);
});

t.test('every Incoming field, with etag the quoted revision', async (t) => {
  const h = world();
  const created = await ask(h, 1, { title: 'Check the headline', details: 'Is the tone right?', estimatedMinutes: 30, priority: 'high' });
  const response = await list(h);
  t.equal(response.status, 200);
  t.equal(response.headers['content-type'], 'application/json');
  const item = response.json[0];
  const detail = (await h.call('GET', `${API}/human-requests/${created.stageId}`)).json;
  t.match(item.suggestionReason, /\S/, 'a reason is given');
  t.strictSame(item, {
    id: created.incomingId,
    title: 'Check the headline',
    details: 'Is the tone right?',
    estimatedMinutes: 30,
    priority: 'high',
    requester: 'Ada',
    requestedAtUtc: '2026-11-16T10:00:00.000Z',
    status: 'floating',
    suggestedStart: '2026-11-16T10:00:00',
    suggestionReason: item.suggestionReason,
    plannedStart: null,
    response: null,
    responseState: 'open',
    actualStartUtc: null,
    actualEffortMinutes: null,
    etag: `"${detail.incomingRevision}"`,
  });
  t.match(item.etag, /^"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"$/, 'a quoted UUID');
  t.not(item.id, created.stageId, 'the Incoming id is not the stage id');

  h.clock.advance(2 * MINUTE);
  await act(h, created.incomingId, 'plan', { plannedStart: '2026-11-17T13:30:00' });
  const planned = (await list(h, '?includeAccepted=true')).json[0];
  t.match(planned, { status: 'planned', plannedStart: '2026-11-17T13:30:00', suggestedStart: null, suggestionReason: null });
  t.not(planned.etag, item.etag, 'a new revision');
  h.clock.advance(3 * MINUTE);
  await act(h, created.incomingId, 'complete', { response: 'Looks good' });
  const completed = (await list(h, '?includeAccepted=true')).json[0];
  t.match(completed, {
    status: 'completed', response: 'Looks good', responseState: 'responded', actualStartUtc: null,
    actualEffortMinutes: null, suggestedStart: null, suggestionReason: null, plannedStart: '2026-11-17T13:30:00',
  });
});

t.test('suggestions: floating items get the earliest free time of the recipient\'s calendar and plan; accepted items get null', async (t) => {
  const h = world();
  const half = await ask(h, 1, { title: 'Half an hour', estimatedMinutes: 30 });
  const other = await ask(h, 2, { title: 'Another half hour', estimatedMinutes: 30 });
  const suggested = async () => Object.fromEntries((await list(h, '?includeAccepted=true')).json
    .map((item: { id: number; suggestedStart: string | null; suggestionReason: string | null }) => [item.id, item]));

  let items = await suggested();
  t.equal(items[half.incomingId].suggestedStart, '2026-11-16T10:00:00', 'Monday 10:00, now');
  t.equal(items[other.incomingId].suggestedStart, '2026-11-16T10:00:00', 'floating items reserve nothing');

  const hour = await ask(h, 3, { title: 'An hour', estimatedMinutes: 60 });
  await act(h, hour.incomingId, 'plan', { plannedStart: '2026-11-16T10:00:00' });
  items = await suggested();
  t.equal(items[half.incomingId].suggestedStart, '2026-11-16T11:00:00', 'after the accepted hour');
  t.equal(items[other.incomingId].suggestedStart, '2026-11-16T11:00:00');
  t.equal(items[hour.incomingId].suggestedStart, null, 'planned: no suggestion');
  t.equal(items[hour.incomingId].suggestionReason, null);

  // Completed work reserves nothing; late in the day the next working morning is suggested.
  await act(h, hour.incomingId, 'complete', { response: null });
  h.clock.advance(6 * 60 * MINUTE + 45 * MINUTE); // 16:45
  items = await suggested();
  t.equal(items[half.incomingId].suggestedStart, '2026-11-16T16:45:00', 'the completed hour no longer reserves; work may pause overnight');
  const hour2 = await ask(h, 3, { title: 'Another hour', estimatedMinutes: 60 });
  await act(h, hour2.incomingId, 'start');
  items = await suggested();
  t.equal(items[half.incomingId].suggestedStart, '2026-11-17T09:45:00', 'started at 16:45: 15 minutes today, 45 on Tuesday');
});

const suggestedStartOf = async (h: Harness, incomingId: number): Promise<string | null> =>
  (await list(h)).json.find((item: { id: number }) => item.id === incomingId).suggestedStart;

/** Any write moves the workspace version on, so the next list plans afresh. */
async function anyWrite(t: TapTest, h: Harness): Promise<void> {
  const note = await h.call('POST', `${API}/tasks/3/notes`, { headers: { 'if-match': await etagOf(h, 3) }, body: { text: 'x' } });
  t.equal(note.status, 204, 'a note moves the workspace version on');
}

t.test('suggestions: behind work under way, a suggestion from a plan kept under a minute can be as early as that plan made it (README, Caches)', async (t) => {
  const h = world();
  const started = await ask(h, 1, { title: 'Started', estimatedMinutes: 30 });
  await act(h, started.incomingId, 'start');
  const floating = await ask(h, 2, { title: 'Floating', estimatedMinutes: 30 });
  const suggestion = () => suggestedStartOf(h, floating.incomingId);
  t.equal(await suggestion(), '2026-11-16T10:30:00', 'after the half hour under way');
  h.clock.advance(45_000);
  t.equal(await suggestion(), '2026-11-16T10:30:00', 'the kept plan, 45 s on: the work under way still ends at 10:30');
  await anyWrite(t, h);
  t.equal(await suggestion(), '2026-11-16T10:30:45', 'a plan made now: its 30 whole minutes from 10:00:45');
});

t.test('suggestions: with two items under way, a kept plan ends their work later than a plan made now, so an item that now fits before the next planned work was suggested after it (README, Caches)', async (t) => {
  const h = world();
  for (const [taskId, title] of [[1, 'First'], [2, 'Second']] as const) {
    const under = await ask(h, taskId, { title, estimatedMinutes: 30 });
    await act(h, under.incomingId, 'start');
  }
  const planned = await ask(h, 2, { title: 'At noon', estimatedMinutes: 30 });
  await act(h, planned.incomingId, 'plan', { plannedStart: '2026-11-16T12:00:00' });
  // An hour: it fits before noon only if the hour under way ends by 11:00.
  const hour = await ask(h, 3, { title: 'An hour', estimatedMinutes: 60 });
  const suggestion = () => suggestedStartOf(h, hour.incomingId);
  h.clock.advance(50_000);
  t.equal(await suggestion(), '2026-11-16T12:30:00', 'planned at 10:00:50, no whole minute worked: the work under way ends 11:00:50, so after the noon item');
  h.clock.advance(40_000);
  t.equal(await suggestion(), '2026-11-16T12:30:00', 'the same plan, kept at 10:01:30');
  await anyWrite(t, h);
  t.equal(await suggestion(), '2026-11-16T10:59:30', 'a plan made at 10:01:30: a minute worked on each, 58 left, so the hour fits before noon');
});

t.test('suggestions use the recipient\'s own calendar (not the default); no working time gives null with a reason', async (t) => {
  const withCalendar = (calendar: unknown): Harness => {
    const fixture = baseFixture();
    const grace = fixture.staff.find((member) => member.id === 11) as Record<string, unknown>;
    grace.calendar = calendar;
    fixture.clients.push({ id: 110, organisationId: 1, name: 'grace-desk', token: GRACE_TOKEN, sponsorId: 11, resourceId: 11, isActive: true, scopes: ['tasks:read', 'tasks:update'] });
    return adaWorld({ fixture });
  };
  const afternoons = withCalendar({ mon: [['13:00', '17:00']], wed: [['09:00', '17:00']] });
  await ask(afternoons, 1, { title: 'Short', estimatedMinutes: 30 });
  t.equal((await list(afternoons)).json[0].suggestedStart, '2026-11-16T13:00:00', 'Monday afternoon');

  const wednesdays = withCalendar({ wed: [['09:00', '17:00']] });
  await ask(wednesdays, 1, { title: 'Short', estimatedMinutes: 30 });
  t.equal((await list(wednesdays)).json[0].suggestedStart, '2026-11-18T09:00:00', 'Wednesday');

  const never = withCalendar({});
  await ask(never, 1, { title: 'Short', estimatedMinutes: 30 });
  const item = (await list(never)).json[0];
  t.equal(item.suggestedStart, null, 'no working time at all');
  t.match(item.suggestionReason, /\S/, 'with a reason');
});
