import t from 'tap';
import type { Harness } from '../helpers/service.js';
import { baseFixture, TOKENS, type FixtureShape } from '../helpers/fixture.js';
import { adaWorld, expectCode, putEffort, readTask } from '../helpers/api.js';

/**
 * PUT /tasks/{id}/actual-effort (contract 6): replaces exactly the caller's own intervals, never
 * adds to them and never touches another contributor's; every interval is the caller's, ends
 * after it starts and not in the future, and none overlaps another; actualMinutes is the real
 * elapsed sum over all contributors.
 */

const NO_TIME = 'wta_test_ada_no_time_scope';

interface Interval { staffMemberId: number; start: string; end: string }
const ada = (start: string, end: string): Interval => ({ staffMemberId: 10, start, end });
const bob = (start: string, end: string): Interval => ({ staffMemberId: 12, start, end });

/** Task 4 (Collaboration, Ada and Bob) carries intervals of both. */
function effortFixture(): FixtureShape {
  const fixture = baseFixture();
  const task4 = fixture.tasks.find((task) => task.id === 4) as Record<string, unknown>;
  task4['actualIntervals'] = [
    ada('2026-11-13T09:00:00', '2026-11-13T10:00:00'),
    bob('2026-11-13T09:30:00', '2026-11-13T10:15:00'),
    bob('2026-11-12T14:00:00', '2026-11-12T14:20:00'),
  ];
  fixture.clients.push({
    id: 112, organisationId: 1, name: 'ada-no-time', token: NO_TIME, sponsorId: 11, resourceId: 10, isActive: true,
    scopes: ['tasks:read', 'tasks:update', 'tasks:notes'],
  });
  return fixture;
}

function world(): Harness {
  return adaWorld({ fixture: effortFixture() });
}

const put = (h: Harness, id: number, intervals: Interval[], token?: string) => putEffort(h, id, { actualIntervals: intervals }, token);

const intervalsOf = async (h: Harness, id: number, staffMemberId: number): Promise<Interval[]> =>
  (await readTask(h, id)).actualIntervals.filter((interval: Interval) => interval.staffMemberId === staffMemberId);

t.test("PUT actual-effort: replaces exactly the caller's intervals and leaves other contributors' alone", async (t) => {
  const h = world();
  const bobs = await intervalsOf(h, 4, 12);
  t.equal(bobs.length, 2);
  const first = await put(h, 4, [ada('2026-11-16T09:00:00', '2026-11-16T09:40:00'), ada('2026-11-13T13:00:00', '2026-11-13T13:30:00')]);
  t.equal(first.status, 204);
  t.equal(first.text ?? '', '', 'no body');
  t.strictSame(await intervalsOf(h, 4, 10), [ada('2026-11-13T13:00:00', '2026-11-13T13:30:00'), ada('2026-11-16T09:00:00', '2026-11-16T09:40:00')],
    "the caller's list is exactly the new one, in time order");
  t.strictSame(await intervalsOf(h, 4, 12), bobs, "Bob's stay");
  t.equal((await put(h, 4, [ada('2026-11-16T09:45:00', '2026-11-16T09:50:00')])).status, 204);
  t.strictSame(await intervalsOf(h, 4, 10), [ada('2026-11-16T09:45:00', '2026-11-16T09:50:00')], 'a second PUT replaces, never adds');
  // Overlapping another contributor's interval is fine: only the caller's own are compared.
  t.equal((await put(h, 4, [ada('2026-11-13T09:30:00', '2026-11-13T10:15:00')])).status, 204);
  // Bob's own PUT leaves Ada's.
  t.equal((await put(h, 4, [bob('2026-11-16T08:00:00', '2026-11-16T08:30:00')], TOKENS.bob)).status, 204);
  t.strictSame(await intervalsOf(h, 4, 10), [ada('2026-11-13T09:30:00', '2026-11-13T10:15:00')]);
  t.strictSame(await intervalsOf(h, 4, 12), [bob('2026-11-16T08:00:00', '2026-11-16T08:30:00')]);
  // Offsets and fractions are read like every local-date-time input.
  t.equal((await put(h, 3, [{ staffMemberId: 10, start: '2026-07-01T08:00:00Z', end: '2026-07-01T10:30:00.9+01:00' }])).status, 204);
  t.strictSame((await readTask(h, 3)).actualIntervals, [ada('2026-07-01T09:00:00', '2026-07-01T10:30:00')]);
});

t.test('PUT actual-effort: actualMinutes is recomputed as the real elapsed sum over all contributors', async (t) => {
  const h = world();
  t.equal((await readTask(h, 4)).actualMinutes, 60 + 45 + 20);
  t.equal((await put(h, 4, [ada('2026-11-16T09:00:00', '2026-11-16T09:10:30')])).status, 204);
  t.equal((await readTask(h, 4)).actualMinutes, 10.5 + 45 + 20, 'seconds count as fractions of a minute');
  // 00:30 GMT to 03:30 BST on 29 March is two real hours; 00:30 BST to 02:30 GMT on 25 October is three.
  t.equal((await put(h, 4, [ada('2026-03-29T00:30:00', '2026-03-29T03:30:00'), ada('2026-10-25T00:30:00', '2026-10-25T02:30:00')])).status, 204);
  t.equal((await readTask(h, 4)).actualMinutes, 120 + 180 + 45 + 20, 'clock changes count real minutes');
  // An ambiguous autumn wall time is taken at its first occurrence.
  t.equal((await put(h, 4, [ada('2026-10-25T01:10:00', '2026-10-25T01:50:00')])).status, 204);
  t.equal((await readTask(h, 4)).actualMinutes, 40 + 45 + 20);
});

t.test("PUT actual-effort: an empty list removes the caller's intervals", async (t) => {
  const h = world();
  t.equal((await put(h, 4, [])).status, 204);
  const task = await readTask(h, 4);
  t.strictSame(task.actualIntervals.map((interval: Interval) => interval.staffMemberId), [12, 12], "only Bob's remain");
  t.equal(task.actualMinutes, 65);
  t.equal((await put(h, 4, [])).status, 204, 'again, with nothing left of the caller');
  t.equal((await put(h, 1, [])).status, 204, 'on a task without any intervals');
  t.equal((await readTask(h, 1)).actualMinutes, 0);
});

t.test("PUT actual-effort: a staffMemberId that is not the caller's resource gives 422 invalid_field", async (t) => {
  const h = world();
  const before = await readTask(h, 4);
  for (const staffMemberId of [12, 11, 20, 9999]) {
    const response = await put(h, 4, [ada('2026-11-16T09:00:00', '2026-11-16T09:30:00'), { staffMemberId, start: '2026-11-16T08:00:00', end: '2026-11-16T08:30:00' }]);
    expectCode(t, response, 422, 'invalid_field', `staff ${staffMemberId}`);
  }
  t.strictSame(await readTask(h, 4), before, 'nothing replaced');
});

t.test('PUT actual-effort: an interval whose end is not after its start gives 422 invalid_field', async (t) => {
  const h = world();
  expectCode(t, await put(h, 4, [ada('2026-11-16T09:00:00', '2026-11-16T09:00:00')]), 422, 'invalid_field', 'zero length');
  expectCode(t, await put(h, 4, [ada('2026-11-16T09:30:00', '2026-11-16T09:00:00')]), 422, 'invalid_field', 'reversed');
  expectCode(t, await put(h, 4, [ada('2026-11-16T09:00:00.9', '2026-11-16T09:00:00.1')]), 422, 'invalid_field', 'same second once fractions drop');
  t.equal((await readTask(h, 4)).actualMinutes, 125);
});

t.test('PUT actual-effort: an interval that ends in the future gives 422 invalid_field; ending now is fine', async (t) => {
  const h = world();
  expectCode(t, await put(h, 4, [ada('2026-11-16T09:00:00', '2026-11-16T10:00:01')]), 422, 'invalid_field', 'one second ahead');
  expectCode(t, await put(h, 4, [ada('2026-11-16T09:00:00', '2026-11-16T10:00:01Z')]), 422, 'invalid_field', 'as an instant');
  expectCode(t, await put(h, 4, [ada('2026-11-17T09:00:00', '2026-11-17T10:00:00')]), 422, 'invalid_field', 'tomorrow');
  t.equal((await put(h, 4, [ada('2026-11-16T09:00:00', '2026-11-16T10:00:00')])).status, 204, 'ends exactly now');
});

t.test('PUT actual-effort: Z or offset times in the autumn repeated hour are judged, and counted, at the instants sent', async (t) => {
  // 2027-10-31: London repeats 01:00-02:00 (00:00Z-01:00Z first, 01:00Z-02:00Z second pass).
  const h = adaWorld({ fixture: effortFixture(), now: '2027-10-31T01:30:00.000Z' });
  expectCode(t, await put(h, 4, [ada('2027-10-31T00:30:00Z', '2027-10-31T01:40:00Z')]), 422, 'invalid_field', 'ends 10 minutes ahead');
  t.equal((await put(h, 4, [ada('2027-10-31T00:10:00Z', '2027-10-31T00:50:00Z'), ada('2027-10-31T01:15:00Z', '2027-10-31T01:25:00Z')])).status, 204,
    'two intervals apart in real time, though their wall times overlap');
  t.equal((await put(h, 4, [ada('2027-10-31T00:50:00Z', '2027-10-31T01:30:00+00:00')])).status, 204, 'across the change, ending now');
  t.strictSame(await intervalsOf(h, 4, 10), [ada('2027-10-31T01:50:00', '2027-10-31T01:30:00')], 'stored as London wall times');
  t.equal((await readTask(h, 4)).actualMinutes, 40 + 45 + 20, "its 40 real minutes count (besides Bob's 45 and 20)");
  expectCode(t, await put(h, 4, await intervalsOf(h, 4, 10)), 422, 'invalid_field',
    'sent back as read, bare wall times at their first occurrence: the end is before the start');
  t.equal((await put(h, 4, [ada('2027-10-31T00:30:00', '2027-10-31T01:15:00Z')])).status, 204, 'from a bare 00:30 (23:30Z) to 01:15 of the second pass');
  t.strictSame(await intervalsOf(h, 4, 10), [ada('2027-10-31T00:30:00', '2027-10-31T01:15:00')], 'shown as wall times');
  t.equal((await readTask(h, 4)).actualMinutes, 105 + 45 + 20, 'its 105 real minutes count');
  t.equal((await put(h, 4, await intervalsOf(h, 4, 10))).status, 204, 'sent back as read');
  t.equal((await readTask(h, 4)).actualMinutes, 45 + 45 + 20, 'the bare 01:15 is its first occurrence: 45 minutes now');
});

t.test("PUT actual-effort: overlapping intervals of the caller give 422 invalid_field; touching ones are fine", async (t) => {
  const h = world();
  const cases: [string, Interval[]][] = [
    ['overlap', [ada('2026-11-16T08:00:00', '2026-11-16T09:00:00'), ada('2026-11-16T08:30:00', '2026-11-16T09:30:00')]],
    ['contained', [ada('2026-11-16T08:00:00', '2026-11-16T09:30:00'), ada('2026-11-16T08:30:00', '2026-11-16T08:40:00')]],
    ['identical', [ada('2026-11-16T08:00:00', '2026-11-16T09:00:00'), ada('2026-11-16T08:00:00', '2026-11-16T09:00:00')]],
    ['out of order, overlapping the first listed', [
      ada('2026-11-16T08:00:00', '2026-11-16T08:10:00'), ada('2026-11-13T08:00:00', '2026-11-16T07:00:00'),
      ada('2026-11-14T08:00:00', '2026-11-14T09:00:00')]],
    ['the same instant in different notation', [ada('2026-07-01T09:00:00', '2026-07-01T10:00:00'), ada('2026-07-01T08:30:00Z', '2026-07-01T08:45:00Z')]],
  ];
  for (const [label, intervals] of cases) expectCode(t, await put(h, 4, intervals), 422, 'invalid_field', label);
  t.equal((await readTask(h, 4)).actualMinutes, 125, 'nothing replaced');
  t.equal((await put(h, 4, [ada('2026-11-16T09:00:00', '2026-11-16T09:30:00'), ada('2026-11-16T08:30:00', '2026-11-16T09:00:00')])).status, 204,
    'one ending when the next starts');
  t.equal((await readTask(h, 4)).actualMinutes, 60 + 65);
});

t.test('PUT actual-effort: a nonexistent spring wall time gives 422 invalid_field', async (t) => {
  const h = world();
  expectCode(t, await put(h, 4, [ada('2026-03-29T01:30:00', '2026-03-29T03:00:00')]), 422, 'invalid_field', 'start in the gap');
  expectCode(t, await put(h, 4, [ada('2026-03-29T00:30:00', '2026-03-29T01:00:00')]), 422, 'invalid_field', 'end in the gap');
  t.equal((await put(h, 4, [ada('2026-03-29T00:30:00', '2026-03-29T02:00:00')])).status, 204, 'the wall times around the gap exist');
  t.equal((await readTask(h, 4)).actualMinutes, 30 + 65);
});

t.test('PUT actual-effort: a syntactically bad local-date-time gives 400 validation_failed', async (t) => {
  const h = world();
  for (const start of ['2026-02-30T09:00:00', '2026-11-16 09:00:00', '2026-11-16T09:00', '2026-11-16T25:00:00', '', '16/11/2026 09:00']) {
    expectCode(t, await put(h, 4, [ada(start, '2026-11-16T09:30:00')]), 400, 'validation_failed', JSON.stringify(start));
  }
  expectCode(t, await putEffort(h, 4, { actualIntervals: [{ staffMemberId: 10, start: 1, end: 2 }] }), 400, 'validation_failed', 'numbers');
  expectCode(t, await put(h, 4, [bob('2026-11-16T09:00:00', '2026-11-16T09:30:00'), ada('2026-11-16T08:00:00', '2026-02-30T08:30:00')]),
    400, 'validation_failed', "a later malformed time wins over an earlier interval's 422");
  t.equal((await readTask(h, 4)).actualMinutes, 125);
});

t.test('PUT actual-effort: 1000 intervals are accepted and 1001 give 400', async (t) => {
  const h = world();
  const base = Date.parse('2026-11-10T00:00:00Z');
  const many = (count: number) => Array.from({ length: count }, (_, index) =>
    ada(new Date(base + index * 120_000).toISOString().slice(0, 19), new Date(base + index * 120_000 + 60_000).toISOString().slice(0, 19)));
  expectCode(t, await put(h, 4, many(1001)), 400, 'validation_failed', '1001');
  t.equal((await put(h, 4, many(1000))).status, 204, '1000');
  t.equal((await intervalsOf(h, 4, 10)).length, 1000);
  t.equal((await readTask(h, 4)).actualMinutes, 1000 + 65);
});

t.test('PUT actual-effort: scope tasks:time is required (403 permission_denied)', async (t) => {
  const h = world();
  for (const token of [NO_TIME, TOKENS.readOnly]) {
    const response = await put(h, 4, [ada('2026-11-16T09:00:00', '2026-11-16T09:30:00')], token);
    expectCode(t, response, 403, 'permission_denied', token);
  }
  t.equal((await readTask(h, 4)).actualMinutes, 125, 'unchanged');
});

t.test('PUT actual-effort: a body without actualIntervals, or with other members, gives 400', async (t) => {
  const h = world();
  const bodies: [string, unknown][] = [
    ['{}', {}], ['null member', { actualIntervals: null }], ['an object', { actualIntervals: {} }],
    ['extra member', { actualIntervals: [], note: 'x' }], ['a bare array', [ada('2026-11-16T09:00:00', '2026-11-16T09:30:00')]],
    ['interval missing start', { actualIntervals: [{ staffMemberId: 10, end: '2026-11-16T09:30:00' }] }],
  ];
  for (const [label, body] of bodies) expectCode(t, await putEffort(h, 4, body), 400, 'validation_failed', label);
  const { etag } = await readTask(h, 4);
  expectCode(t, await h.call('PUT', '/api/v1/tasks/4/actual-effort', { headers: { 'if-match': etag } }), 400, 'validation_failed', 'no body');
  t.equal((await readTask(h, 4)).actualMinutes, 125);
});
