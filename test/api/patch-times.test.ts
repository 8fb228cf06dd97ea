import t from 'tap';
import { harness, type Harness } from '../helpers/service.js';
import { baseFixture, TOKENS, type FixtureShape } from '../helpers/fixture.js';
import { adaWorld, expectCode, patchTask, readTask } from '../helpers/api.js';

/**
 * PATCH of the local-date-time members (contract 6 and 7): startedAt lifecycle rules, offset and
 * fraction input, nonexistent (422) versus malformed (400) wall times, ambiguous autumn times,
 * and earliestStart / releaseDate including their effect on the offer list.
 */

const availableIds = async (h: Harness): Promise<number[]> =>
  (await h.call('GET', '/api/v1/tasks/available')).json.map((task: { id: number }) => task.id);

/** Ready tasks with a start: 12 without intervals, 13 with Ada's, 14 with only Bob's; 15 InProgress. */
function startedFixture(): FixtureShape {
  const fixture = baseFixture();
  const started = { projectId: 1, estimatedMinutes: 60, startedAt: '2026-11-16T09:00:00' };
  fixture.tasks.push(
    { id: 12, title: 'Started, no effort', ...started, assignees: [{ staffMemberId: 10 }] },
    { id: 13, title: 'Started, own effort', ...started, assignees: [{ staffMemberId: 10 }],
      actualIntervals: [{ staffMemberId: 10, start: '2026-11-16T09:00:00', end: '2026-11-16T09:30:00' }] },
    { id: 14, title: "Started, Bob's effort", ...started, resourceMode: 'Collaboration',
      assignees: [{ staffMemberId: 10 }, { staffMemberId: 12 }],
      actualIntervals: [{ staffMemberId: 12, start: '2026-11-16T09:00:00', end: '2026-11-16T09:30:00' }] },
    { id: 15, title: 'In progress', ...started, status: 'InProgress', assignees: [{ staffMemberId: 10 }] },
  );
  return fixture;
}

t.test('PATCH: startedAt null clears the start of a Ready task without actual intervals', async (t) => {
  const h = adaWorld({ fixture: startedFixture() });
  t.equal((await patchTask(h, 12, { startedAt: null })).status, 204);
  t.match(await readTask(h, 12), { status: 'Ready', startedAt: null, remainingMinutes: 60 });
  // Judged on the task as the PATCH leaves it: dropping the caller's only intervals in the same request.
  t.equal((await patchTask(h, 13, { startedAt: null, actualIntervals: [] })).status, 204, 'with its own intervals removed in the same PATCH');
  t.match(await readTask(h, 13), { startedAt: null, actualIntervals: [], actualMinutes: 0 });
  t.equal((await patchTask(h, 15, { status: 'Ready', startedAt: null })).status, 204, 'back to Ready in the same PATCH');
  t.match(await readTask(h, 15), { status: 'Ready', startedAt: null });
});

t.test('PATCH: startedAt null with actual intervals, or on an InProgress task, gives 422 invalid_field', async (t) => {
  const h = adaWorld({ fixture: startedFixture() });
  expectCode(t, await patchTask(h, 13, { startedAt: null }), 422, 'invalid_field', "Ready with the caller's intervals");
  expectCode(t, await patchTask(h, 14, { startedAt: null }), 422, 'invalid_field', "Ready with another contributor's intervals");
  expectCode(t, await patchTask(h, 14, { startedAt: null, actualIntervals: [] }), 422, 'invalid_field', "the other contributor's intervals stay");
  expectCode(t, await patchTask(h, 12, {
    startedAt: null, actualIntervals: [{ staffMemberId: 10, start: '2026-11-16T09:00:00', end: '2026-11-16T09:10:00' }],
  }), 422, 'invalid_field', 'intervals added in the same PATCH');
  expectCode(t, await patchTask(h, 15, { startedAt: null }), 422, 'invalid_field', 'InProgress');
  expectCode(t, await patchTask(h, 12, { startedAt: null, status: 'InProgress' }), 422, 'invalid_field', 'started in the same PATCH');
  for (const id of [12, 13, 14, 15]) t.equal((await readTask(h, id)).startedAt, '2026-11-16T09:00:00', `task ${id} keeps its start`);
});

t.test('PATCH: a startedAt in the future gives 422 invalid_field; now itself is allowed', async (t) => {
  const h = adaWorld({ fixture: startedFixture() });
  for (const startedAt of ['2026-11-16T10:00:01', '2026-11-17T09:00:00', '2026-11-16T10:00:01Z', '2026-11-16T11:00:01+01:00']) {
    expectCode(t, await patchTask(h, 1, { startedAt }), 422, 'invalid_field', startedAt);
  }
  t.equal((await readTask(h, 1)).startedAt, null);
  t.equal((await patchTask(h, 1, { startedAt: '2026-11-16T10:00:00' })).status, 204, 'exactly now');
  t.equal((await patchTask(h, 15, { startedAt: '2026-11-16T11:00:00+01:00' })).status, 204, 'now as an offset instant');
  t.equal((await readTask(h, 15)).startedAt, '2026-11-16T10:00:00');
});

t.test('PATCH: a Z or offset startedAt in the second pass of the autumn repeated hour is judged at the instant sent', async (t) => {
  // 2027-10-31: London repeats 01:00-02:00; 01:10Z is 01:10 in the second (GMT) pass.
  const h = adaWorld({ fixture: startedFixture(), now: '2027-10-31T01:10:00.000Z' });
  expectCode(t, await patchTask(h, 1, { startedAt: '2027-10-31T01:20:00Z' }), 422, 'invalid_field', 'ten minutes ahead, though its wall time 01:20 first passed an hour ago');
  t.equal((await patchTask(h, 1, { startedAt: '2027-10-31T01:05:00+00:00' })).status, 204, 'five minutes ago');
  t.equal((await readTask(h, 1)).startedAt, '2027-10-31T01:05:00', 'stored as the London wall time');
});

// Only Done tasks get a completedAt through the API, and Done tasks refuse PATCH, so this state
// (a completedAt on a task that is not Done) is reachable only through loaded data.
t.test('PATCH: a startedAt after completedAt gives 422 invalid_field (a not-Done task with a completedAt, from a fixture), judged against the completedAt the PATCH leaves', async (t) => {
  const fixture = baseFixture();
  fixture.tasks.push({
    id: 12, projectId: 1, title: 'Reopened', status: 'InProgress', estimatedMinutes: 60,
    startedAt: '2026-11-16T08:00:00', completedAt: '2026-11-16T09:00:00', assignees: [{ staffMemberId: 10 }],
  });
  const h = adaWorld({ fixture });
  expectCode(t, await patchTask(h, 12, { startedAt: '2026-11-16T09:00:01' }), 422, 'invalid_field', 'one second after');
  expectCode(t, await patchTask(h, 12, { startedAt: '2026-11-16T09:30:00Z' }), 422, 'invalid_field', 'as an instant');
  t.equal((await readTask(h, 12)).startedAt, '2026-11-16T08:00:00');
  t.equal((await patchTask(h, 12, { startedAt: '2026-11-16T09:00:00' })).status, 204, 'equal to completedAt');
  t.equal((await patchTask(h, 12, { startedAt: '2026-11-16T07:30:00' })).status, 204, 'before completedAt');
  t.equal((await readTask(h, 12)).startedAt, '2026-11-16T07:30:00');
  // Set Done in the same PATCH, the task completes now: a start after the old completedAt is fine.
  t.equal((await patchTask(h, 12, { status: 'Done', startedAt: '2026-11-16T09:30:00' })).status, 204, 'after the old completedAt, before the new');
  t.match(await readTask(h, 12), { status: 'Done', startedAt: '2026-11-16T09:30:00', completedAt: '2026-11-16T10:00:00' });
});

t.test('PATCH: starting a Ready task loaded with a completedAt (an earlier completion) and no start records the start now, past that completedAt', async (t) => {
  const fixture = baseFixture();
  fixture.tasks.push({
    id: 12, projectId: 1, title: 'Reopened', estimatedMinutes: 60, completedAt: '2026-11-16T09:00:00', assignees: [{ staffMemberId: 10 }],
  });
  const h = adaWorld({ fixture });
  t.equal((await patchTask(h, 12, { status: 'InProgress' })).status, 204);
  t.match(await readTask(h, 12), { status: 'InProgress', startedAt: '2026-11-16T10:00:00', completedAt: '2026-11-16T09:00:00' });
});

t.test('PATCH: Done on a task whose fixture start is still in the future gives 422 invalid_field (it would complete before it started); with a start sent that is not, it is done', async (t) => {
  const fixture = baseFixture();
  fixture.tasks.push({
    id: 12, projectId: 1, title: 'Starts next year', status: 'InProgress', estimatedMinutes: 60,
    startedAt: '2027-11-12T10:00:00', assignees: [{ staffMemberId: 10 }],
  });
  const h = adaWorld({ fixture });
  expectCode(t, await patchTask(h, 12, { status: 'Done' }), 422, 'invalid_field', 'Done before the start');
  const unchanged = await readTask(h, 12);
  t.match(unchanged, { status: 'InProgress', startedAt: '2027-11-12T10:00:00', completedAt: null }, 'nothing written');
  t.equal((await patchTask(h, 12, { status: 'Done', startedAt: '2026-11-16T09:00:00' })).status, 204);
  t.match(await readTask(h, 12), { status: 'Done', startedAt: '2026-11-16T09:00:00', completedAt: '2026-11-16T10:00:00' });
});

t.test('PATCH: an offset or Z startedAt is converted to London wall time, and a fraction (of any length) is dropped', async (t) => {
  const h = adaWorld({ fixture: startedFixture() });
  const cases: [string, string][] = [
    ['2026-11-16T09:00:00Z', '2026-11-16T09:00:00'],
    ['2026-07-01T08:00:00Z', '2026-07-01T09:00:00'],
    ['2026-07-01T10:00:00+02:00', '2026-07-01T09:00:00'],
    ['2026-11-16T04:00:00-05:00', '2026-11-16T09:00:00'],
    ['2026-11-16T09:15:42.987', '2026-11-16T09:15:42'],
    ['2026-11-16T09:15:42.123456789Z', '2026-11-16T09:15:42'],
    ['2026-11-16T09:15:42.1234567890123', '2026-11-16T09:15:42'],
    ['2026-03-29T01:30:00Z', '2026-03-29T02:30:00'],
  ];
  for (const [input, stored] of cases) {
    t.equal((await patchTask(h, 12, { startedAt: input })).status, 204, input);
    t.equal((await readTask(h, 12)).startedAt, stored, `${input} is stored as ${stored}`);
  }
});

t.test('PATCH: a nonexistent spring wall time gives 422 invalid_field', async (t) => {
  const h = adaWorld({ fixture: startedFixture() });
  for (const member of ['startedAt', 'earliestStart', 'releaseDate']) {
    for (const value of ['2026-03-29T01:30:00', '2026-03-29T01:00:00', '2026-03-29T01:59:59.5']) {
      expectCode(t, await patchTask(h, 12, { [member]: value }), 422, 'invalid_field', `${member} ${value}`);
    }
  }
  expectCode(t, await patchTask(h, 12, {
    actualIntervals: [{ staffMemberId: 10, start: '2026-03-29T01:30:00', end: '2026-03-29T03:00:00' }],
  }), 422, 'invalid_field', 'an interval start');
  t.match(await readTask(h, 12), { startedAt: '2026-11-16T09:00:00', earliestStart: null, releaseDate: null, actualIntervals: [] });
  t.equal((await patchTask(h, 12, { startedAt: '2026-03-29T02:00:00' })).status, 204, 'the first wall time after the gap exists');
});

t.test('PATCH: a syntactically bad local-date-time gives 400 validation_failed', async (t) => {
  const h = adaWorld({ fixture: startedFixture() });
  const bad = [
    '2026-02-30T10:00:00', '2026-11-16 10:00:00', '2026-11-16T10:00', '2026-11-16T24:00:00', '2026-13-01T10:00:00',
    '2026-11-16T10:00:00+0100', '2026-11-16T10:00:00z', '2026-11-16', '', '2026-11-16T10:00:00.', 'yesterday',
  ];
  for (const member of ['startedAt', 'earliestStart', 'releaseDate']) {
    for (const value of bad) expectCode(t, await patchTask(h, 12, { [member]: value }), 400, 'validation_failed', `${member} ${JSON.stringify(value)}`);
  }
  expectCode(t, await patchTask(h, 12, { startedAt: 1763283600000 }), 400, 'validation_failed', 'a number');
  expectCode(t, await patchTask(h, 12, {
    actualIntervals: [{ staffMemberId: 10, start: '2026-02-30T09:00:00', end: '2026-11-16T09:10:00' }],
  }), 400, 'validation_failed', 'Feb 30 in an interval');
  // Shape comes before value and business rules (contract 1): the 400 is not masked by a 422 or 409.
  const feb30 = '2026-02-30T10:00:00';
  expectCode(t, await patchTask(h, 12, { title: '   ', releaseDate: feb30 }), 400, 'validation_failed', 'with a blank title');
  expectCode(t, await patchTask(h, 12, { earliestStart: '2026-03-29T01:30:00', releaseDate: feb30 }), 400, 'validation_failed', 'with a nonexistent time');
  expectCode(t, await patchTask(h, 12, { dependencyIds: [9999], startedAt: feb30 }), 400, 'validation_failed', 'with an unknown dependency');
  expectCode(t, await patchTask(h, 6, { startedAt: feb30 }), 400, 'validation_failed', 'on a Done task');
  t.match(await readTask(h, 12), { startedAt: '2026-11-16T09:00:00', earliestStart: null, releaseDate: null });
});

t.test('PATCH: a well-formed offset time whose London wall time falls outside years 0000-9999 gives 400 validation_failed', async (t) => {
  const h = adaWorld({ fixture: startedFixture() });
  // 10000-01-01T04:30 and -0001-12-31T23:00 in London: no local-date-time can name them.
  for (const value of ['9999-12-31T23:30:00-05:00', '0000-01-01T00:00:00+01:00']) {
    for (const member of ['startedAt', 'earliestStart', 'releaseDate']) {
      expectCode(t, await patchTask(h, 12, { [member]: value }), 400, 'validation_failed', `${member} ${value}`);
    }
  }
  t.match(await readTask(h, 12), { startedAt: '2026-11-16T09:00:00', earliestStart: null, releaseDate: null });
});

t.test('PATCH: an ambiguous autumn wall time is stored as that wall time', async (t) => {
  const h = adaWorld({ fixture: startedFixture() });
  t.equal((await patchTask(h, 12, { startedAt: '2026-10-25T01:30:00' })).status, 204);
  t.equal((await readTask(h, 12)).startedAt, '2026-10-25T01:30:00');
  // Either instant of the repeated hour reads as the same wall time.
  for (const instant of ['2026-10-25T00:30:00Z', '2026-10-25T01:30:00Z']) {
    t.equal((await patchTask(h, 12, { startedAt: instant })).status, 204, instant);
    t.equal((await readTask(h, 12)).startedAt, '2026-10-25T01:30:00', `${instant} is 01:30 in London`);
  }
  t.equal((await patchTask(h, 12, { earliestStart: '2026-10-25T01:59:59', releaseDate: '2026-10-25T01:00:00' })).status, 204);
  t.match(await readTask(h, 12), { earliestStart: '2026-10-25T01:59:59', releaseDate: '2026-10-25T01:00:00' });
});

t.test('PATCH: earliestStart and releaseDate are set, converted from offsets, and cleared with null', async (t) => {
  const h = adaWorld();
  t.equal((await patchTask(h, 3, { earliestStart: '2026-11-10T09:00:00', releaseDate: '2026-07-01T08:00:00Z' })).status, 204);
  t.match(await readTask(h, 3), { earliestStart: '2026-11-10T09:00:00', releaseDate: '2026-07-01T09:00:00' });
  t.equal((await patchTask(h, 3, { earliestStart: '2026-12-01T09:00:00.75+00:00' })).status, 204, 'only earliestStart');
  t.match(await readTask(h, 3), { earliestStart: '2026-12-01T09:00:00', releaseDate: '2026-07-01T09:00:00' });
  t.equal((await patchTask(h, 3, { earliestStart: null })).status, 204);
  t.match(await readTask(h, 3), { earliestStart: null, releaseDate: '2026-07-01T09:00:00' });
  t.equal((await patchTask(h, 3, { releaseDate: null })).status, 204);
  t.match(await readTask(h, 3), { earliestStart: null, releaseDate: null });
  t.equal((await patchTask(h, 9, { earliestStart: null })).status, 204, "clears task 9's 2027 earliestStart");
  t.equal((await readTask(h, 9)).earliestStart, null);
});

t.test('PATCH: a future earliestStart or releaseDate removes the task from /tasks/available; clearing it brings it back', async (t) => {
  const h = adaWorld();
  t.ok((await availableIds(h)).includes(3), 'task 3 is offered');
  t.equal((await patchTask(h, 3, { earliestStart: '2026-11-16T10:00:01' })).status, 204);
  t.notOk((await availableIds(h)).includes(3), 'a second ahead is not yet');
  t.equal((await patchTask(h, 3, { earliestStart: '2026-11-16T10:00:00' })).status, 204);
  t.ok((await availableIds(h)).includes(3), 'now itself is fine');
  t.equal((await patchTask(h, 3, { releaseDate: '2026-11-17T09:00:00' })).status, 204);
  t.notOk((await availableIds(h)).includes(3), 'a future releaseDate');
  t.equal((await patchTask(h, 3, { releaseDate: null, earliestStart: null })).status, 204);
  t.ok((await availableIds(h)).includes(3), 'cleared');
  t.notOk((await availableIds(h)).includes(9), "task 9's 2027 earliestStart holds it back");
  t.equal((await patchTask(h, 9, { earliestStart: null })).status, 204);
  t.ok((await availableIds(h)).includes(9));
  h.clock.set('2026-11-17T09:00:00Z');
  t.equal((await patchTask(h, 3, { earliestStart: '2026-11-17T10:00:00' })).status, 204);
  t.notOk((await availableIds(h)).includes(3));
  h.clock.set('2026-11-17T10:00:00Z');
  t.ok((await availableIds(h)).includes(3), 'offered once the clock reaches it');
});

t.test('PATCH: a malformed local date-time is 400 at request validation, before If-Match (428/412) and claim checks', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const stale = await h.call('PATCH', '/api/v1/tasks/1', { headers: { 'if-match': '"task-1-plan-999"' }, body: { startedAt: '2026-02-30T10:00:00' } });
  t.equal(stale.status, 400);
  t.equal(stale.json.code, 'validation_failed');
  const missing = await h.call('PATCH', '/api/v1/tasks/1', { body: { earliestStart: '2026-11-31T10:00:00' } });
  t.equal(missing.status, 400);
  // A nonexistent spring wall time is well formed: the missing If-Match answers first.
  const nonexistent = await h.call('PATCH', '/api/v1/tasks/1', { body: { startedAt: '2026-03-29T01:30:00' } });
  t.equal(nonexistent.status, 428);
});
