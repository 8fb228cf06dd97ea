import t from 'tap';
import { harness, type Harness } from '../helpers/service.js';
import { baseFixture, TOKENS, type FixtureShape } from '../helpers/fixture.js';
// Direct SQL changes skip the API and so the workspace-version bump every real mutation makes;
// plans are cached per version, so these tests bump it as a mutation would.
import { addAssistance, bumpVersion } from '../helpers/api.js';

/**
 * GET /tasks/available (contract 5): runnable, assigned to the caller, no live lease, in offer
 * order. The base world offers Ada tasks 4, 1, 8 and 3 at Monday 16 November 2026 10:00.
 */

const ids = (body: { id: number }[]) => body.map((task) => task.id);

async function available(h: Harness, token: string = TOKENS.ada): Promise<number[]> {
  const response = await h.call('GET', '/api/v1/tasks/available', { token });
  if (response.status !== 200) throw new Error(`available answered ${response.status}: ${response.text}`);
  return ids(response.json);
}

function withTasks(tasks: Record<string, unknown>[], extra: Partial<FixtureShape> = {}): FixtureShape {
  return { ...baseFixture(), tasks, claims: [], ...extra };
}

t.test('GET /tasks/available: lists exactly the runnable, unclaimed tasks assigned to the caller', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const response = await h.call('GET', '/api/v1/tasks/available');
  t.equal(response.status, 200);
  t.equal(response.headers['content-type'], 'application/json');
  t.strictSame(ids(response.json), [4, 1, 8, 3]);
  for (const task of response.json) {
    t.equal(task.blocked, false, `task ${task.id} is not blocked`);
    t.not(task.status, 'Done');
    t.equal(task.project.isActive, true);
    t.ok(task.assignees.some((a: { staffMemberId: number }) => a.staffMemberId === 10), `task ${task.id} is Ada's`);
  }
  t.strictSame(await available(h, TOKENS.bob), [4, 7], "Bob's list has only Bob's tasks");
  t.strictSame(await available(h, TOKENS.otherOrg), [90], "another organisation's list");
});

t.test('GET /tasks/available: order is project priority, project id, sequence, task id', async (t) => {
  const mine = [{ staffMemberId: 10 }];
  const fixture = withTasks(
    [
      { id: 101, projectId: 21, title: 'p21 s1 b', sequence: 1, estimatedMinutes: 10, assignees: mine },
      { id: 106, projectId: 23, title: 'low', sequence: 0, estimatedMinutes: 10, assignees: mine },
      { id: 103, projectId: 20, title: 'p20 s5 b', sequence: 5, estimatedMinutes: 10, assignees: mine },
      { id: 105, projectId: 22, title: 'critical', sequence: 99, estimatedMinutes: 10, assignees: mine },
      { id: 100, projectId: 21, title: 'p21 s1 a', sequence: 1, estimatedMinutes: 10, assignees: mine },
      { id: 107, projectId: 24, title: 'normal', sequence: 3, estimatedMinutes: 10, assignees: mine },
      { id: 102, projectId: 20, title: 'p20 s5 a', sequence: 5, estimatedMinutes: 10, assignees: mine },
      { id: 104, projectId: 20, title: 'p20 s1', sequence: 1, estimatedMinutes: 10, assignees: mine },
    ],
    {
      projects: [
        { id: 21, organisationId: 1, name: 'High B', priorityName: 'high' },
        { id: 20, organisationId: 1, name: 'High A', priorityName: 'high' },
        { id: 22, organisationId: 1, name: 'Critical', priorityName: 'critical' },
        { id: 23, organisationId: 1, name: 'Low', priorityName: 'low' },
        { id: 24, organisationId: 1, name: 'Normal', priorityName: 'normal' },
      ],
    },
  );
  const h = harness({ fixture, defaultToken: TOKENS.ada });
  t.strictSame(await available(h), [105, 104, 102, 103, 100, 101, 107, 106]);
});

t.test('GET /tasks/available: excludes Done tasks', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  t.notOk((await available(h)).includes(6), 'task 6 is Done');
  h.db.prepare("UPDATE tasks SET status = 'Done', completed_at_local = '2026-11-16T09:30:00' WHERE id = 3").run();
  bumpVersion(h);
  t.strictSame(await available(h), [4, 1, 8]);
});

t.test('GET /tasks/available: excludes a task with an unmet prerequisite, and offers it once the prerequisite is Done', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  t.notOk((await available(h)).includes(2));
  h.db.prepare("UPDATE tasks SET status = 'Done' WHERE id = 1").run();
  bumpVersion(h);
  t.strictSame(await available(h), [4, 2, 8, 3]);
});

t.test('GET /tasks/available: excludes a task blocked by human assistance until the request is resolved', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  addAssistance(h, { stageId: 500, taskId: 1, incomingId: 1 });
  t.strictSame(await available(h), [4, 8, 3], 'open blocking request');
  h.db.prepare("UPDATE incoming_items SET response_state = 'responded' WHERE id = 1").run();
  bumpVersion(h);
  t.strictSame(await available(h), [4, 8, 3], 'a response alone does not unblock');
  h.db.prepare("UPDATE incoming_items SET response_state = 'resolved', lifecycle = 'completed' WHERE id = 1").run();
  bumpVersion(h);
  t.strictSame(await available(h), [4, 1, 8, 3], 'resolved');
  addAssistance(h, { stageId: 501, taskId: 3, incomingId: 2, isBlocking: false });
  t.strictSame(await available(h), [4, 1, 8, 3], 'a non-blocking request does not hold the task back');
});

t.test('GET /tasks/available: excludes a task waiting externally', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  t.notOk((await available(h)).includes(5), 'task 5 is waiting');
  h.db.prepare('UPDATE tasks SET is_waiting = 1 WHERE id = 3').run();
  bumpVersion(h);
  t.strictSame(await available(h), [4, 1, 8]);
  h.db.prepare('UPDATE tasks SET is_waiting = 0 WHERE id = 5').run();
  bumpVersion(h);
  t.strictSame(await available(h), [4, 1, 5, 8]);
});

t.test('GET /tasks/available: excludes tasks of an inactive project', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  t.notOk((await available(h)).includes(10), 'task 10 is on a shelved project');
  h.db.prepare('UPDATE projects SET is_active = 0 WHERE id = 3').run();
  bumpVersion(h);
  t.strictSame(await available(h), [1, 8, 3]);
  h.db.prepare('UPDATE projects SET is_active = 1 WHERE id = 4').run();
  bumpVersion(h);
  t.strictSame(await available(h), [1, 8, 10, 3]);
});

t.test('GET /tasks/available: a future earliestStart holds a task back until the clock reaches it', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  t.notOk((await available(h)).includes(9), 'task 9 may start on 2027-01-04 09:00');
  h.clock.set('2027-01-04T08:59:59.999Z');
  t.notOk((await available(h)).includes(9), 'a millisecond early');
  h.clock.set('2027-01-04T09:00:00.000Z');
  // (The seeded lease on task 11 has long expired by then.)
  t.strictSame(await available(h), [4, 1, 8, 9, 11, 3], 'offered from the earliest start on');
});

t.test('GET /tasks/available: a future releaseDate holds a task back until the clock reaches it', async (t) => {
  const fixture = baseFixture();
  // 2026-11-16 is GMT, so 12:00 London is 12:00Z; the summer case checks the London conversion.
  fixture.tasks.push({ id: 12, projectId: 1, title: 'Released at noon', sequence: 15, estimatedMinutes: 30, releaseDate: '2026-11-16T12:00:00', assignees: [{ staffMemberId: 10 }] });
  fixture.tasks.push({ id: 13, projectId: 1, title: 'Released in summer', sequence: 16, estimatedMinutes: 30, releaseDate: '2027-06-01T09:00:00', assignees: [{ staffMemberId: 10 }] });
  fixture.claims = []; // so task 11 is on offer throughout and only the release dates matter
  const h = harness({ fixture, defaultToken: TOKENS.ada });
  t.strictSame(await available(h), [4, 1, 8, 11, 3]);
  h.clock.set('2026-11-16T11:59:59.999Z');
  t.strictSame(await available(h), [4, 1, 8, 11, 3], 'a millisecond before noon');
  h.clock.set('2026-11-16T12:00:00.000Z');
  t.strictSame(await available(h), [4, 1, 12, 8, 11, 3], 'noon has come');
  h.clock.set('2027-06-01T07:59:59.000Z');
  t.notOk((await available(h)).includes(13), '08:59:59 London (BST)');
  h.clock.set('2027-06-01T08:00:00.000Z');
  t.ok((await available(h)).includes(13), '09:00 London (BST)');
});

t.test('GET /tasks/available: excludes a task under a live lease, and offers it once the lease expires', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  t.notOk((await available(h)).includes(11), 'task 11 is leased until 10:10Z');
  t.notOk((await available(h, TOKENS.readOnly)).includes(11), 'the lease hides the task from every client');
  h.clock.set('2026-11-16T10:09:59.999Z');
  t.notOk((await available(h)).includes(11), 'still live a millisecond before expiry');
  h.clock.set('2026-11-16T10:10:00.000Z');
  t.strictSame(await available(h), [4, 1, 8, 11, 3], 'expired at expiresUtc');
});

t.test('GET /tasks/available: offers a task whose lease was released', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  t.notOk((await available(h)).includes(11));
  h.db.prepare('UPDATE claims SET released_utc = ? WHERE task_id = 11').run(h.clock.now());
  t.strictSame(await available(h), [4, 1, 8, 11, 3]);
  // A fresh live lease on another task hides that one.
  h.db.prepare(`INSERT INTO claims (task_id, client_id, token, acquired_utc, expires_utc)
    VALUES (3, 101, 'a6f1c8a5-3f7e-4a8e-9d1e-2b7f0c4d9a11', ?, ?)`).run(h.clock.now(), h.clock.now() + 15 * 60 * 1000);
  t.strictSame(await available(h), [4, 1, 8, 11]);
});

t.test('GET /tasks/available: offers unfinished zero-estimate tasks', async (t) => {
  const fixture = baseFixture();
  fixture.tasks.push({ id: 12, projectId: 2, title: 'Zero, in progress', status: 'InProgress', startedAt: '2026-11-16T09:00:00', sequence: 9, estimatedMinutes: 0, assignees: [{ staffMemberId: 10 }] });
  fixture.tasks.push({ id: 13, projectId: 2, title: 'Zero, done', status: 'Done', sequence: 9, estimatedMinutes: 0, assignees: [{ staffMemberId: 10 }] });
  const h = harness({ fixture, defaultToken: TOKENS.ada });
  const response = await h.call('GET', '/api/v1/tasks/available');
  t.strictSame(ids(response.json), [4, 1, 8, 3, 12]);
  const reconcile = response.json.find((task: { id: number }) => task.id === 8);
  t.match(reconcile, { estimatedMinutes: 0, remainingMinutes: 0, status: 'Ready' });
});

t.test('GET /tasks/available: notes is [] on every element even when the task has notes', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const insert = h.db.prepare('INSERT INTO notes (task_id, client_id, staff_id, text, created_utc) VALUES (?, 100, 10, ?, ?)');
  for (const id of [1, 4, 8, 3]) insert.run(id, `note on ${id}`, h.clock.now());
  const response = await h.call('GET', '/api/v1/tasks/available');
  t.equal(response.json.length, 4);
  for (const task of response.json) t.strictSame(task.notes, [], `task ${task.id}`);
  const single = await h.call('GET', '/api/v1/tasks/1');
  t.equal(single.json.notes.length, 1, 'the single read still has it');
});

t.test('GET /tasks/available: a task with several assignees appears once', async (t) => {
  const fixture = baseFixture();
  fixture.tasks.push({
    id: 12, projectId: 1, title: 'Everyone', sequence: 12, estimatedMinutes: 30, resourceMode: 'Collaboration',
    assignees: [{ staffMemberId: 12 }, { staffMemberId: 10 }, { staffMemberId: 11 }],
  });
  const h = harness({ fixture, defaultToken: TOKENS.ada });
  const response = await h.call('GET', '/api/v1/tasks/available');
  t.strictSame(ids(response.json), [4, 1, 12, 8, 3]);
  t.equal(new Set(ids(response.json)).size, response.json.length, 'no duplicates');
  const shared = response.json.find((task: { id: number }) => task.id === 12);
  t.strictSame(shared.assignees.map((a: { staffMemberId: number }) => a.staffMemberId), [10, 11, 12]);
  const fix = response.json.find((task: { id: number }) => task.id === 4);
  t.equal(fix.assignees.length, 2);
});

t.test('GET /tasks/available: an empty result is []', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  h.db.prepare("UPDATE tasks SET status = 'Done'").run();
  bumpVersion(h);
  const response = await h.call('GET', '/api/v1/tasks/available');
  t.equal(response.status, 200);
  t.equal(response.text, '[]');
});

t.test('GET /tasks/available: list elements are complete Tasks with their ETag', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const list = await h.call('GET', '/api/v1/tasks/available');
  t.strictSame(list.json.map((task: { id: number }) => task.id), [4, 1, 8, 3], 'the base world\'s offer');
  for (const task of list.json) {
    const single = await h.call('GET', `/api/v1/tasks/${task.id}`);
    t.strictSame(task, single.json, `task ${task.id} equals its single read (both without notes)`);
  }
});

t.test('GET /tasks/available: a task without a current scheduler allocation is not offered, unless its estimate is 0', async (t) => {
  const fixture = baseFixture();
  fixture.staff.push({ id: 15, organisationId: 1, name: 'Idle', kind: 'agent', isActive: true, calendar: {} });
  fixture.clients.push({ id: 109, organisationId: 1, name: 'idle-bot', token: 'wta_test_idle_agent', sponsorId: 11, resourceId: 15, isActive: true, scopes: ['tasks:read'] });
  fixture.tasks.push(
    { id: 40, projectId: 1, title: 'Needs time', estimatedMinutes: 30, assignees: [{ staffMemberId: 15 }] },
    { id: 41, projectId: 1, title: 'Needs none', estimatedMinutes: 0, assignees: [{ staffMemberId: 15 }] },
  );
  const h = harness({ fixture });
  t.strictSame(await available(h, 'wta_test_idle_agent'), [41], 'no working time at all: only the zero-estimate task');
});
