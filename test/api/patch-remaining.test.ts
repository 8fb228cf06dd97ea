import t from 'tap';
import type { Harness } from '../helpers/service.js';
import { baseFixture, type FixtureShape } from '../helpers/fixture.js';
import { API, adaWorld, etagOf, patchTask, readTask, REMAINING_WARNING, type TapTest } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';

/**
 * PATCH remainingMinutes, the deprecated input (contract 5 and 6): alone it becomes elapsed
 * planned duration + value; with estimatedMinutes the latter wins; the 204 carries Warning 299.
 * Elapsed planned duration is the resource's real working time from startedAt to now. Also the
 * extra scope tasks:time for actualIntervals in PATCH.
 */

const OWL = 'wta_test_owl_every_hour';
const PLANNER = 'wta_test_ada_planner_no_time';

/**
 * The base world plus Owl (staff 15), who also works all of Saturday and Sunday, with a client,
 * and a client of Ada's with tasks:update but not tasks:time.
 */
function remainingFixture(): FixtureShape {
  const fixture = baseFixture();
  const weekday = [['09:00', '17:00']];
  const allDay = [['00:00', '24:00']];
  fixture.staff.push({
    id: 15, organisationId: 1, name: 'Owl', kind: 'agent', isActive: true,
    calendar: { mon: weekday, tue: weekday, wed: weekday, thu: weekday, fri: weekday, sat: allDay, sun: allDay },
  });
  fixture.clients.push(
    { id: 110, organisationId: 1, name: 'owl-bot', token: OWL, sponsorId: 11, resourceId: 15, isActive: true, scopes: ['tasks:read', 'tasks:update'] },
    { id: 111, organisationId: 1, name: 'ada-planner', token: PLANNER, sponsorId: 11, resourceId: 10, isActive: true, scopes: ['tasks:read', 'tasks:update'] },
  );
  const started = (id: number, startedAt: string, staffMemberId = 10) => ({
    id, projectId: 1, title: `Started ${startedAt}`, status: 'InProgress', estimatedMinutes: 600, startedAt,
    assignees: [{ staffMemberId }],
  });
  fixture.tasks.push(
    started(12, '2026-11-16T09:00:00'),
    started(13, '2026-11-13T09:00:00'),
    started(14, '2026-10-23T16:00:00'),
    started(15, '2026-10-24T12:00:00', 15),
    started(16, '2026-03-28T12:00:00', 15),
    started(17, '2026-03-27T16:00:00'),
  );
  return fixture;
}

function world(options: { now?: string; token?: string } = {}): Harness {
  return adaWorld({ fixture: remainingFixture(), ...options });
}

/** PATCHes `{ remainingMinutes }` and returns the resulting estimate, checking the 204 and its Warning. */
async function estimateAfter(t: TapTest, h: Harness, id: number, remainingMinutes: number, token?: string): Promise<number> {
  const response = await patchTask(h, id, { remainingMinutes }, token);
  t.equal(response.status, 204, `task ${id}: 204`);
  t.equal(response.headers['warning'], REMAINING_WARNING, `task ${id}: Warning 299`);
  return (await readTask(h, id, token)).estimatedMinutes;
}

t.test('PATCH: remainingMinutes alone on a task that has not started sets estimatedMinutes to the value', async (t) => {
  const h = world();
  t.equal(await estimateAfter(t, h, 1, 45), 45);
  t.match(await readTask(h, 1), { estimatedMinutes: 45, remainingMinutes: 45, startedAt: null });
  t.equal(await estimateAfter(t, h, 1, 0), 0, 'zero');
  // Started in the same PATCH: startedAt becomes now, so nothing has elapsed yet.
  const response = await patchTask(h, 3, { status: 'InProgress', remainingMinutes: 25 });
  t.equal(response.status, 204);
  t.equal(response.headers['warning'], REMAINING_WARNING);
  t.match(await readTask(h, 3), { status: 'InProgress', startedAt: '2026-11-16T10:00:00', estimatedMinutes: 25, remainingMinutes: 25 });
});

t.test('PATCH: remainingMinutes alone on a task started Monday 09:00 (now 10:00, Mon-Fri 09:00-17:00) sets estimatedMinutes to 60 + value', async (t) => {
  const h = world();
  t.equal(await estimateAfter(t, h, 12, 30), 90);
  t.equal(await estimateAfter(t, h, 12, 0), 60, 'zero left: the estimate is what has elapsed');
  const tooMuch = await patchTask(h, 12, { remainingMinutes: 1_000_000 });
  t.equal(tooMuch.status, 422, 'an estimate beyond 1000000 is refused');
  t.equal(tooMuch.json.code, 'invalid_field');
  t.equal((await readTask(h, 12)).estimatedMinutes, 60, 'unchanged');
  h.clock.set('2026-11-16T10:45:30Z');
  t.equal(await estimateAfter(t, h, 12, 30), 105 + 30, 'whole elapsed minutes: 105 at 10:45:30');
});

t.test('PATCH: elapsed planned time counts real working time across a weekend and across both clock changes', async (t) => {
  // Default calendar: Friday 09:00-17:00 (8 h) and Monday 09:00-10:00 (1 h).
  t.equal(await estimateAfter(t, world(), 13, 10), 540 + 10, 'Friday to Monday');
  // Friday 16:00 BST to Monday 09:30 GMT across the autumn change: 60 + 30 working minutes.
  t.equal(await estimateAfter(t, world({ now: '2026-10-26T09:30:00Z' }), 14, 10), 90 + 10, 'weekend with the autumn change');
  // Friday 16:00 GMT to Monday 10:00 BST (09:00 UTC) across the spring change: 60 + 60.
  t.equal(await estimateAfter(t, world({ now: '2026-03-30T09:00:00Z' }), 17, 10), 120 + 10, 'weekend with the spring change');
  // Owl works the whole weekend: Saturday 12:00 to 24:00 (12 h), Sunday 25 h, Monday 09:00-10:00.
  t.equal(await estimateAfter(t, world({ now: '2026-10-26T10:00:00Z', token: OWL }), 15, 10, OWL), (12 + 25 + 1) * 60 + 10,
    'the autumn Sunday has 25 working hours');
  // Saturday 12:00 GMT to 24:00 (12 h), Sunday 23 h, Monday 09:00-10:00 BST.
  t.equal(await estimateAfter(t, world({ now: '2026-03-30T09:00:00Z', token: OWL }), 16, 10, OWL), (12 + 23 + 1) * 60 + 10,
    'the spring Sunday has 23 working hours');
});

t.test('PATCH: with both estimatedMinutes and remainingMinutes, estimatedMinutes wins (and the Warning is still sent)', async (t) => {
  const h = world();
  for (const [id, body, expected] of [
    [12, { estimatedMinutes: 100, remainingMinutes: 5 }, 100],
    [1, { estimatedMinutes: 100, remainingMinutes: 5 }, 100],
    [12, { remainingMinutes: 500, estimatedMinutes: 0 }, 0],
  ] as const) {
    const response = await patchTask(h, id, body);
    t.equal(response.status, 204);
    t.equal(response.headers['warning'], REMAINING_WARNING, `${JSON.stringify(body)}: Warning`);
    t.equal((await readTask(h, id)).estimatedMinutes, expected, `task ${id}: ${JSON.stringify(body)}`);
  }
});

t.test('PATCH: only a PATCH that sends remainingMinutes carries the Warning, exactly worded', async (t) => {
  const h = world();
  for (const body of [{ estimatedMinutes: 70 }, { title: 'No warning' }, { status: 'InProgress' }]) {
    const response = await patchTask(h, 12, body);
    t.equal(response.status, 204);
    t.equal(response.headers['warning'], undefined, `${JSON.stringify(body)}: no Warning`);
  }
  const empty = await patchTask(h, 12, {});
  t.equal(empty.headers['warning'], undefined, '{}: no Warning');
  const withOthers = await patchTask(h, 12, { title: 'Both', remainingMinutes: 20 });
  t.equal(withOthers.status, 204);
  t.equal(withOthers.headers['warning'], REMAINING_WARNING);
  t.match(withOthers.headers['warning'], /^299 worker-task-api "[^"]+"$/, 'warn-code 299, agent naming the service, quoted text');
  const refused = await patchTask(h, 2, { status: 'InProgress', remainingMinutes: 20 });
  t.equal(refused.status, 409);
  t.equal(refused.headers['warning'], undefined, 'a refused PATCH carries no Warning');
});

t.test('GET: remainingMinutes is max(0, estimatedMinutes - elapsed planned time) after a PATCH', async (t) => {
  const h = world();
  t.equal(await estimateAfter(t, h, 12, 30), 90);
  t.match(await readTask(h, 12), { estimatedMinutes: 90, remainingMinutes: 30 });
  h.clock.set('2026-11-16T10:20:00Z');
  t.equal((await readTask(h, 12)).remainingMinutes, 10, 'twenty more working minutes have passed');
  h.clock.set('2026-11-16T11:00:00Z');
  t.equal((await readTask(h, 12)).remainingMinutes, 0, 'never negative');
  t.equal((await patchTask(h, 12, { estimatedMinutes: 30 })).status, 204, 'an estimate below the elapsed time');
  t.match(await readTask(h, 12), { estimatedMinutes: 30, remainingMinutes: 0 });
  h.clock.set('2026-11-16T17:30:00Z');
  t.equal((await patchTask(h, 12, { estimatedMinutes: 500 })).status, 204);
  t.equal((await readTask(h, 12)).remainingMinutes, 20, 'after hours: 480 minutes of the working day elapsed');
  // A start two thousand years ago settles quickly: nothing remains, and no remainder fits the bound.
  t.equal((await patchTask(h, 1, { startedAt: '0001-01-01T00:00:00' })).status, 204);
  t.equal((await readTask(h, 1)).remainingMinutes, 0);
  const beyond = await patchTask(h, 1, { remainingMinutes: 0 });
  t.equal(beyond.status, 422, 'elapsed + 0 is beyond 1000000');
  t.equal(beyond.json.code, 'invalid_field');
});

t.test('GET and PATCH: elapsed planned time skips the break of a day with two working intervals (listed afternoon first)', async (t) => {
  // Contract 11's own example of a split day, listed afternoon first: the loader stores rows, the
  // service reads them back per day, and a break must not count as working time.
  const fixture = remainingFixture();
  fixture.staff.push({
    id: 16, organisationId: 1, name: 'Lena', kind: 'agent', isActive: true,
    calendar: { mon: [['13:30', '17:00'], ['09:00', '12:30']], tue: [['12:00', '17:00'], ['09:00', '12:00']] },
  });
  fixture.clients.push({ id: 112, organisationId: 1, name: 'lena-bot', token: 'wta_test_lena_split_day', sponsorId: 11, resourceId: 16, isActive: true, scopes: ['tasks:read', 'tasks:update'] });
  fixture.tasks.push(
    { id: 18, projectId: 1, title: 'Split Monday', status: 'InProgress', estimatedMinutes: 600, startedAt: '2026-11-16T09:00:00', assignees: [{ staffMemberId: 16 }] },
    { id: 19, projectId: 1, title: 'Touching Tuesday', status: 'InProgress', estimatedMinutes: 600, startedAt: '2026-11-17T09:00:00', assignees: [{ staffMemberId: 16 }] },
  );
  const lena = 'wta_test_lena_split_day';
  const h = adaWorld({ fixture, now: '2026-11-16T15:00:00Z', token: lena });
  // 09:00-12:30 and 13:30-15:00: 210 + 90 minutes, not the 360 of the wall clock.
  t.equal((await readTask(h, 18, lena)).remainingMinutes, 300, 'the lunch break is not working time');
  t.equal(await estimateAfter(t, h, 18, 100, lena), 400, 'remainingMinutes 100 on top of 300 elapsed');
  h.clock.set('2026-11-17T15:00:00Z');
  // Intervals that touch at noon work straight through: 360 minutes by 15:00.
  t.equal((await readTask(h, 19, lena)).remainingMinutes, 240, 'touching intervals count once each');
  // And Monday counts whole: 210 + 210 = 420 minutes, plus Tuesday's 360.
  t.equal((await readTask(h, 18, lena)).remainingMinutes, 0, 'all 400 minutes elapsed');
  t.equal(await estimateAfter(t, h, 18, 0, lena), 780, 'elapsed over both days');
});

t.test('GET: a started task of a resource with no working time at all has its whole estimate remaining', async (t) => {
  const fixture = remainingFixture();
  fixture.staff.push({ id: 16, organisationId: 1, name: 'Idle', kind: 'agent', isActive: true, calendar: {} });
  fixture.clients.push({ id: 112, organisationId: 1, name: 'idle-bot', token: 'wta_test_idle_agent', sponsorId: 11, resourceId: 16, isActive: true, scopes: ['tasks:read', 'tasks:update'] });
  fixture.tasks.push({ id: 18, projectId: 1, title: 'Never worked', status: 'InProgress', estimatedMinutes: 600, startedAt: '2026-11-09T09:00:00', assignees: [{ staffMemberId: 16 }] });
  const idle = 'wta_test_idle_agent';
  const h = adaWorld({ fixture, token: idle });
  t.match(await readTask(h, 18, idle), { estimatedMinutes: 600, remainingMinutes: 600 }, 'a week after its start');
  t.equal(await estimateAfter(t, h, 18, 50, idle), 50, 'no elapsed time to add');
});

t.test('GET: a startedAt in year 0000 on a calendar that works at midnight reads as settled, never 500', async (t) => {
  // Owl works round the clock at weekends: counting from year 0000 starts before London's 1847 switch to GMT.
  const h = world({ token: OWL });
  t.equal((await patchTask(h, 15, { startedAt: '0000-01-01T00:00:00' }, OWL)).status, 204);
  t.match(await readTask(h, 15, OWL), { startedAt: '0000-01-01T00:00:00', remainingMinutes: 0 });
  t.equal((await h.call('GET', `${API}/tasks/available`, { token: OWL })).status, 200, 'the offer list');
  t.equal((await patchTask(h, 15, { remainingMinutes: 0 }, OWL)).status, 422, 'elapsed + 0 is beyond 1000000');
});

t.test('PATCH: actualIntervals needs scope tasks:time as well as tasks:update (403 permission_denied)', async (t) => {
  const h = world();
  const interval = { staffMemberId: 10, start: '2026-11-16T09:00:00', end: '2026-11-16T09:30:00' };
  const before = await readTask(h, 1, PLANNER);
  for (const body of [{ actualIntervals: [interval] }, { actualIntervals: [] }, { title: 'And a title', actualIntervals: [interval] }]) {
    const response = await patchTask(h, 1, body, PLANNER);
    t.equal(response.status, 403, JSON.stringify(body));
    t.equal(response.json.code, 'permission_denied');
  }
  t.strictSame(await readTask(h, 1, PLANNER), before, 'nothing changed');
  const withoutIntervals = await patchTask(h, 1, { title: 'Planned without time scope', estimatedMinutes: 50 }, PLANNER);
  t.equal(withoutIntervals.status, 204, 'the same client may PATCH other members');
  t.match(await readTask(h, 1, PLANNER), { title: 'Planned without time scope', estimatedMinutes: 50 });
  const malformed = await patchTask(h, 1, { actualIntervals: 'none' }, PLANNER);
  t.equal(malformed.status, 400, 'the body is validated before the member scope');
  const full = await patchTask(h, 1, { actualIntervals: [interval] });
  t.equal(full.status, 204, 'a client with tasks:time may send them');
  t.equal((await readTask(h, 1)).actualMinutes, 30);
});

t.test('PATCH: the tasks:time check for actualIntervals is a business rule: target, If-Match and claim header answer first', async (t) => {
  const h = world();
  const body = { actualIntervals: [] };
  const send = (id: number, headers: Record<string, string>) => h.call('PATCH', `${API}/tasks/${id}`, { headers, body, token: PLANNER });
  expectProblem(t, await send(999, { 'if-match': '"task-999-plan-1"' }), 'task_not_found', 'a missing task');
  expectProblem(t, await send(7, { 'if-match': '"task-7-plan-1"' }), 'task_not_owned', "Bob's task");
  expectProblem(t, await send(1, {}), 'precondition_required', 'no If-Match');
  expectProblem(t, await send(1, { 'if-match': '"task-1-plan-0"' }), 'stale_update', 'a stale If-Match');
  expectProblem(t, await send(11, { 'if-match': await etagOf(h, 11, PLANNER) }), 'task_claimed', 'a live lease and no X-Task-Claim');
  expectProblem(t, await send(1, { 'if-match': await etagOf(h, 1, PLANNER) }), 'permission_denied', 'then the member scope');
  t.equal((await readTask(h, 6, PLANNER)).status, 'Done');
  expectProblem(t, await send(6, { 'if-match': await etagOf(h, 6, PLANNER) }), 'permission_denied', 'the first business rule: before a Done task\'s task_completed');
});

t.test('PATCH: a replay with actualIntervals needs tasks:time still (an equivalent retry needs current authorisation)', async (t) => {
  const h = world();
  const body = { actualIntervals: [{ staffMemberId: 10, start: '2026-11-16T09:00:00', end: '2026-11-16T09:30:00' }] };
  const etag = await etagOf(h, 1);
  const send = () => h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': etag, 'idempotency-key': 'time-1' }, body });
  t.equal((await send()).status, 204);
  t.equal((await send()).headers['idempotent-replayed'], 'true', 'replayed while the client has the scope');
  h.db.prepare("DELETE FROM api_client_scopes WHERE client_id = 100 AND scope = 'tasks:time'").run();
  expectProblem(t, await send(), 'permission_denied', 'no replay once tasks:time is withdrawn');
});
