import t from 'tap';
import { baseFixture } from '../helpers/fixture.js';
import { adaWorld, addAssistance, API, expectCode, patchTask, postNote, putEffort, readTask } from '../helpers/api.js';

/**
 * PATCH status transitions (contract 6): startedAt and completedAt bookkeeping, blocked starts,
 * completing with human blockers or unfinished prerequisites, and Done as a terminal state for
 * PATCH (notes and effort stay allowed).
 */

t.test('PATCH: Ready to InProgress sets a null startedAt to now as a London wall time in whole seconds', async (t) => {
  const winter = adaWorld({ now: '2026-11-16T10:00:07.654Z' });
  t.equal((await patchTask(winter, 1, { status: 'InProgress' })).status, 204);
  t.match(await readTask(winter, 1), { status: 'InProgress', startedAt: '2026-11-16T10:00:07', completedAt: null });

  const summer = adaWorld({ now: '2026-07-01T08:15:30.999Z' });
  t.equal((await patchTask(summer, 1, { status: 'InProgress' })).status, 204);
  t.equal((await readTask(summer, 1)).startedAt, '2026-07-01T09:15:30', 'BST: London is UTC+1, no offset, no fraction');
});

t.test('PATCH: Ready to InProgress keeps an existing startedAt, or takes one sent with it', async (t) => {
  const fixture = baseFixture();
  fixture.tasks.push({ id: 12, projectId: 1, title: 'Started before', estimatedMinutes: 60, startedAt: '2026-11-13T11:00:00', assignees: [{ staffMemberId: 10 }] });
  const h = adaWorld({ fixture });
  t.equal((await patchTask(h, 12, { status: 'InProgress' })).status, 204);
  t.match(await readTask(h, 12), { status: 'InProgress', startedAt: '2026-11-13T11:00:00' });
  t.equal((await patchTask(h, 3, { status: 'InProgress', startedAt: '2026-11-16T09:45:00' })).status, 204);
  t.match(await readTask(h, 3), { status: 'InProgress', startedAt: '2026-11-16T09:45:00' });
});

t.test('PATCH: status Done sets completedAt to now', async (t) => {
  const fixture = baseFixture();
  fixture.tasks.push({ id: 12, projectId: 1, title: 'Under way', status: 'InProgress', estimatedMinutes: 60, startedAt: '2026-11-16T09:00:00', assignees: [{ staffMemberId: 10 }] });
  const h = adaWorld({ fixture, now: '2026-11-16T10:20:30.400Z' });
  t.equal((await patchTask(h, 12, { status: 'Done' })).status, 204);
  t.match(await readTask(h, 12), { status: 'Done', startedAt: '2026-11-16T09:00:00', completedAt: '2026-11-16T10:20:30', remainingMinutes: 0 });
});

t.test('PATCH: a Ready task may go straight to Done', async (t) => {
  const h = adaWorld();
  t.equal((await patchTask(h, 1, { status: 'Done' })).status, 204);
  const task = await readTask(h, 1);
  t.match(task, { status: 'Done', completedAt: '2026-11-16T10:00:00', remainingMinutes: 0 });
  // Task 2 depended on it and is no longer blocked.
  t.match(await readTask(h, 2), { blocked: false, dependencies: [{ taskId: 1, status: 'Done' }] });
});

t.test('PATCH: starting a blocked task (unmet prerequisite, external waiting, human assistance) gives 409 task_blocked', async (t) => {
  const h = adaWorld();
  addAssistance(h, { stageId: 500, taskId: 1, isBlocking: true, responseState: 'open' });
  addAssistance(h, { stageId: 501, taskId: 3, isBlocking: true, responseState: 'responded' });
  const cases: [number, string][] = [[2, 'unmet prerequisite'], [5, 'external waiting'], [1, 'open human blocker'], [3, 'responded, not resolved, blocker']];
  for (const [id, label] of cases) {
    const before = await readTask(h, id);
    t.equal(before.blocked, true, `${label}: the task reads as blocked`);
    expectCode(t, await patchTask(h, id, { status: 'InProgress' }), 409, 'task_blocked', label);
    t.match(await readTask(h, id), { status: 'Ready', startedAt: null }, `${label}: not started`);
  }
  // A resolved or non-blocking request does not block.
  addAssistance(h, { stageId: 502, taskId: 8, isBlocking: true, responseState: 'resolved' });
  addAssistance(h, { stageId: 503, taskId: 9, isBlocking: false, responseState: 'open' });
  t.equal((await patchTask(h, 8, { status: 'InProgress' })).status, 204, 'resolved blocker');
  t.equal((await patchTask(h, 9, { status: 'InProgress' })).status, 204, 'non-blocking request');
});

t.test('PATCH: a PATCH that clears the block (isWaiting false, or dependencyIds []) and starts in one request succeeds', async (t) => {
  const h = adaWorld();
  t.equal((await patchTask(h, 5, { isWaiting: false, status: 'InProgress' })).status, 204);
  t.match(await readTask(h, 5), { status: 'InProgress', isWaiting: false, startedAt: '2026-11-16T10:00:00', blocked: false });
  t.equal((await patchTask(h, 2, { dependencyIds: [], status: 'InProgress' })).status, 204);
  t.match(await readTask(h, 2), { status: 'InProgress', dependencies: [] });
  // The other way round: blocking in the same request as starting is judged on the result.
  expectCode(t, await patchTask(h, 3, { isWaiting: true, status: 'InProgress' }), 409, 'task_blocked', 'sets isWaiting and starts');
  expectCode(t, await patchTask(h, 8, { dependencyIds: [1], status: 'InProgress' }), 409, 'task_blocked', 'adds an unfinished prerequisite and starts');
  t.match(await readTask(h, 3), { status: 'Ready', isWaiting: false }, 'the refused PATCH changed nothing');
  t.match(await readTask(h, 8), { status: 'Ready', dependencies: [] });
});

t.test('PATCH: InProgress sent again on a started task that became blocked, Done while waiting, and a startedAt alone on a Ready task are accepted; that start counts', async (t) => {
  const fixture = baseFixture();
  fixture.tasks.push({ id: 12, projectId: 1, title: 'Under way', status: 'InProgress', estimatedMinutes: 60, startedAt: '2026-11-16T09:00:00', assignees: [{ staffMemberId: 10 }] });
  const h = adaWorld({ fixture });
  // Blocked after it started: the same status again is no start.
  t.equal((await patchTask(h, 12, { isWaiting: true })).status, 204);
  t.equal((await readTask(h, 12)).blocked, true);
  t.equal((await patchTask(h, 12, { status: 'InProgress', title: 'Still under way' })).status, 204, 'InProgress on a started, blocked task');
  t.match(await readTask(h, 12), { status: 'InProgress', startedAt: '2026-11-16T09:00:00', title: 'Still under way' });
  // External waiting is no human blocker (contract 6 refuses Done for those and prerequisites only).
  t.equal((await patchTask(h, 12, { status: 'Done' })).status, 204, 'Done while isWaiting');
  t.match(await readTask(h, 12), { status: 'Done', isWaiting: true, completedAt: '2026-11-16T10:00:00' });
  t.equal((await readTask(h, 5)).isWaiting, true);
  t.equal((await patchTask(h, 5, { status: 'Done' })).status, 204, 'Done from Ready while isWaiting');
  // A known start recorded without starting: the task stays Ready, as one set back to Ready does.
  t.equal((await patchTask(h, 3, { startedAt: '2026-11-16T09:50:00' })).status, 204);
  t.match(await readTask(h, 3), { status: 'Ready', startedAt: '2026-11-16T09:50:00', remainingMinutes: 20 });
  // Its time counts from that start (contract 5): 10 of the 30 minutes are gone, and a start two
  // weeks back uses them all up.
  const offered = async (): Promise<number[]> => (await h.call('GET', `${API}/tasks/available`)).json.map((task: { id: number }) => task.id);
  t.ok((await offered()).includes(3), 'offered while time remains');
  t.equal((await patchTask(h, 3, { startedAt: '2026-11-02T09:00:00' })).status, 204);
  t.match(await readTask(h, 3), { status: 'Ready', remainingMinutes: 0 });
  t.notOk((await offered()).includes(3), 'nothing remaining: not offered');
  t.equal((await patchTask(h, 3, { estimatedMinutes: 5000 })).status, 204, '10 working days and an hour since then are 4860 minutes');
  t.match(await readTask(h, 3), { status: 'Ready', remainingMinutes: 140 });
  t.ok((await offered()).includes(3), 'offered again once the estimate is raised');
});

t.test('PATCH: Done with an outstanding human blocker gives 409 task_blocked', async (t) => {
  const fixture = baseFixture();
  fixture.tasks.push({ id: 12, projectId: 1, title: 'Under way', status: 'InProgress', estimatedMinutes: 60, startedAt: '2026-11-16T09:00:00', assignees: [{ staffMemberId: 10 }] });
  const h = adaWorld({ fixture });
  addAssistance(h, { stageId: 500, taskId: 12, isBlocking: true, responseState: 'open' });
  addAssistance(h, { stageId: 501, taskId: 1, isBlocking: true, responseState: 'responded' });
  expectCode(t, await patchTask(h, 12, { status: 'Done' }), 409, 'task_blocked', 'InProgress with an open blocker');
  expectCode(t, await patchTask(h, 1, { status: 'Done' }), 409, 'task_blocked', 'Ready with a responded (not resolved) blocker');
  t.match(await readTask(h, 12), { status: 'InProgress', completedAt: null });
  h.db.prepare("UPDATE incoming_items SET response_state = 'resolved' WHERE stage_id = 500").run();
  t.equal((await patchTask(h, 12, { status: 'Done' })).status, 204, 'once resolved, Done is allowed');
});

t.test('PATCH: Done with a prerequisite not Done gives 409 dependency_conflict', async (t) => {
  const h = adaWorld();
  expectCode(t, await patchTask(h, 2, { status: 'Done' }), 409, 'dependency_conflict', 'task 2 after unfinished task 1');
  expectCode(t, await patchTask(h, 3, { dependencyIds: [1], status: 'Done' }), 409, 'dependency_conflict', 'new unfinished prerequisite');
  t.match(await readTask(h, 2), { status: 'Ready', completedAt: null });
  t.equal((await patchTask(h, 3, { dependencyIds: [6], status: 'Done' })).status, 204, 'a Done prerequisite is fine');
  t.equal((await patchTask(h, 1, { status: 'Done' })).status, 204);
  t.equal((await patchTask(h, 2, { status: 'Done' })).status, 204, 'after the prerequisite is Done');
});

t.test('PATCH: a Done task refuses every PATCH, even {}, with 409 task_completed, while notes and effort replacement stay allowed', async (t) => {
  const h = adaWorld();
  const before = await readTask(h, 6);
  for (const [label, body] of [['{}', {}], ['status Ready', { status: 'Ready' }], ['status Done', { status: 'Done' }], ['title', { title: 'Reopened' }]] as const) {
    expectCode(t, await patchTask(h, 6, body), 409, 'task_completed', label);
  }
  t.strictSame(await readTask(h, 6), before, 'unchanged');
  const note = await postNote(h, 6, { text: 'Shipped on time' });
  t.equal(note.status, 204, 'a note on a Done task');
  const effort = await putEffort(h, 6, {
    actualIntervals: [{ staffMemberId: 10, start: '2026-11-02T09:00:00', end: '2026-11-02T09:55:00' }],
  });
  t.equal(effort.status, 204, 'effort replacement on a Done task');
  const after = await readTask(h, 6);
  t.match(after, { status: 'Done', actualMinutes: 55, notes: [{ text: 'Shipped on time' }] });
});
