import t from 'tap';
import { harness, type Harness } from '../helpers/service.js';
import { baseFixture, TOKENS, type FixtureShape } from '../helpers/fixture.js';
import { addAssistance } from '../helpers/api.js';

/**
 * GET /tasks/waiting (contract 5): assigned to the caller, not Done, blocked, in offer order, with
 * `blockingReasons` exactly the reasons that hold, in contract order. The base world has task 2
 * (prerequisite 1 not Done) and task 5 (waiting externally).
 */

const ids = (body: { id: number }[]) => body.map((task) => task.id);

async function waiting(h: Harness, token: string = TOKENS.ada) {
  const response = await h.call('GET', '/api/v1/tasks/waiting', { token });
  if (response.status !== 200) throw new Error(`waiting answered ${response.status}: ${response.text}`);
  return response.json as { id: number; blocked: boolean; blockingReasons: string[]; notes: unknown[] }[];
}

t.test('GET /tasks/waiting: lists exactly the blocked, unfinished tasks assigned to the caller', async (t) => {
  const fixture = baseFixture();
  const mine = [{ staffMemberId: 10 }];
  fixture.tasks.push(
    { id: 20, projectId: 1, title: 'Done but flagged waiting', status: 'Done', isWaiting: true, sequence: 1, assignees: mine },
    { id: 21, projectId: 4, title: 'Waiting on a shelved project', isWaiting: true, estimatedMinutes: 30, assignees: mine },
    { id: 22, projectId: 1, title: 'Waiting, not before January', isWaiting: true, sequence: 70, estimatedMinutes: 30, earliestStart: '2027-01-04T09:00:00', assignees: mine },
    { id: 23, projectId: 1, title: "Bob's waiting task", isWaiting: true, sequence: 2, estimatedMinutes: 30, assignees: [{ staffMemberId: 12 }] },
    { id: 24, projectId: 1, title: 'Waiting and leased', isWaiting: true, sequence: 80, estimatedMinutes: 30, assignees: mine },
    { id: 25, projectId: 1, title: 'In progress, waiting', status: 'InProgress', startedAt: '2026-11-16T09:00:00', isWaiting: true, sequence: 90, estimatedMinutes: 30, assignees: mine },
  );
  fixture.claims.push({ taskId: 24, clientId: 100, token: '1d2c3b4a-5e6f-4a7b-8c9d-0e1f2a3b4c5d', expiresUtc: '2026-11-16T10:14:00.000Z' });
  const h = harness({ fixture, defaultToken: TOKENS.ada });
  const list = await waiting(h);
  t.strictSame(ids(list), [2, 5, 22, 24, 25, 21]);
  for (const task of list) t.equal(task.blocked, true, `task ${task.id} is blocked`);
  t.strictSame(ids(await waiting(h, TOKENS.bob)), [23], "Bob's list has only Bob's tasks");
  // Unblocking moves a task from waiting to available.
  h.db.prepare("UPDATE tasks SET status = 'Done' WHERE id = 1").run();
  t.strictSame(ids(await waiting(h)), [5, 22, 24, 25, 21]);
});

t.test('GET /tasks/waiting: blockingReasons uses the contract strings for each reason', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  addAssistance(h, { stageId: 500, taskId: 3, incomingId: 1 });
  const list = await waiting(h);
  t.strictSame(list.map((task) => [task.id, task.blocked, task.blockingReasons]), [
    [2, true, ['unmet prerequisites']],
    [5, true, ['external waiting']],
    [3, true, ['human assistance']],
  ]);
  const available = await h.call('GET', '/api/v1/tasks/available');
  t.ok(available.json.length > 0, 'something is on offer');
  for (const task of available.json) {
    t.equal(task.blocked, false);
    t.strictSame(task.blockingReasons, [], `task ${task.id} on offer has no reasons`);
  }
});

t.test('GET /tasks/waiting: a task blocked for several reasons lists them all, in contract order', async (t) => {
  const fixture = baseFixture();
  const mine = [{ staffMemberId: 10 }];
  fixture.tasks.push(
    { id: 30, projectId: 1, title: 'Two reasons', sequence: 31, estimatedMinutes: 30, isWaiting: true, dependencyIds: [1], assignees: mine },
    { id: 31, projectId: 1, title: 'Three reasons', sequence: 32, estimatedMinutes: 30, isWaiting: true, dependencyIds: [3, 1], assignees: mine },
    { id: 32, projectId: 1, title: 'Human and waiting', sequence: 33, estimatedMinutes: 30, isWaiting: true, assignees: mine },
  );
  const h = harness({ fixture, defaultToken: TOKENS.ada });
  addAssistance(h, { stageId: 500, taskId: 31, incomingId: 1 });
  addAssistance(h, { stageId: 501, taskId: 31, incomingId: 2, responseState: 'responded' });
  addAssistance(h, { stageId: 502, taskId: 32, incomingId: 3 });
  const byId = new Map((await waiting(h)).map((task) => [task.id, task.blockingReasons]));
  t.strictSame(byId.get(30), ['unmet prerequisites', 'external waiting']);
  t.strictSame(byId.get(31), ['unmet prerequisites', 'human assistance', 'external waiting'], 'each reason once');
  t.strictSame(byId.get(32), ['human assistance', 'external waiting']);
  const single = await h.call('GET', '/api/v1/tasks/31');
  t.strictSame(single.json.blockingReasons, ['unmet prerequisites', 'human assistance', 'external waiting'], 'the single read agrees');
});

t.test('GET /tasks/waiting: only blocking assistance that is not resolved blocks', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  addAssistance(h, { stageId: 500, taskId: 1, incomingId: 1, responseState: 'resolved' });
  addAssistance(h, { stageId: 501, taskId: 3, incomingId: 2, isBlocking: false });
  addAssistance(h, { stageId: 502, taskId: 4, incomingId: 3, responseState: 'responded' });
  t.strictSame(ids(await waiting(h)), [4, 2, 5], 'a responded (not yet resolved) request still blocks');
  h.db.prepare("UPDATE incoming_items SET response_state = 'resolved' WHERE id = 3").run();
  t.strictSame(ids(await waiting(h)), [2, 5]);
});

t.test('GET /tasks/waiting: order is project priority, project id, sequence, task id', async (t) => {
  const mine = [{ staffMemberId: 10 }];
  const task = (id: number, projectId: number, sequence: number) => ({ id, projectId, title: `t${id}`, sequence, estimatedMinutes: 5, isWaiting: true, assignees: mine });
  const fixture: FixtureShape = {
    ...baseFixture(),
    projects: [
      { id: 21, organisationId: 1, name: 'High B', priorityName: 'high' },
      { id: 20, organisationId: 1, name: 'High A', priorityName: 'high' },
      { id: 22, organisationId: 1, name: 'Critical', priorityName: 'critical' },
      { id: 23, organisationId: 1, name: 'Low', priorityName: 'low' },
      { id: 24, organisationId: 1, name: 'Normal', priorityName: 'normal', isActive: false },
    ],
    tasks: [task(101, 21, 1), task(106, 23, 0), task(103, 20, 5), task(105, 22, 99), task(100, 21, 1), task(107, 24, 3), task(102, 20, 5), task(104, 20, 1)],
    claims: [],
  };
  const h = harness({ fixture, defaultToken: TOKENS.ada });
  t.strictSame(ids(await waiting(h)), [105, 104, 102, 103, 100, 101, 107, 106]);
});

t.test('GET /tasks/waiting: notes is [] on every element even when the task has notes', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const insert = h.db.prepare('INSERT INTO notes (task_id, client_id, staff_id, text, created_utc) VALUES (?, 100, 10, ?, ?)');
  insert.run(2, 'note on 2', h.clock.now());
  insert.run(5, 'note on 5', h.clock.now());
  const list = await waiting(h);
  t.strictSame(ids(list), [2, 5]);
  for (const task of list) t.strictSame(task.notes, [], `task ${task.id}`);
});

t.test('GET /tasks/waiting: an empty result is []', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  h.db.prepare('UPDATE tasks SET is_waiting = 0').run();
  h.db.prepare("UPDATE tasks SET status = 'Done' WHERE id = 1").run();
  const response = await h.call('GET', '/api/v1/tasks/waiting');
  t.equal(response.status, 200);
  t.equal(response.text, '[]');
});
