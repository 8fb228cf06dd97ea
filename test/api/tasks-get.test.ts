import t from 'tap';
import { harness, type Harness } from '../helpers/service.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';
import { bumpVersion, workspaceVersion, type TapTest } from '../helpers/api.js';

/** GET /tasks/{id}: shape, notes, ETag and conditional reads, not-found and not-owned. */

const LOCAL = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/;
const UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const isInt = (value: unknown) => Number.isInteger(value);
const isString = (value: unknown) => typeof value === 'string';
const isBool = (value: unknown) => typeof value === 'boolean';
const isArray = (value: unknown) => Array.isArray(value);
const isObject = (value: unknown) => typeof value === 'object' && value !== null && !Array.isArray(value);
const orNull = (check: (value: unknown) => boolean) => (value: unknown) => value === null || check(value);
const isLocal = (value: unknown) => typeof value === 'string' && LOCAL.test(value);
const oneOf = (...values: string[]) => (value: unknown) => typeof value === 'string' && values.includes(value);

/** The spec's Task table: every field and its type. */
const TASK_FIELDS: Record<string, (value: unknown) => boolean> = {
  id: isInt,
  title: isString,
  description: orNull(isString),
  status: oneOf('Ready', 'InProgress', 'Done'),
  sequence: isInt,
  estimatedMinutes: isInt,
  remainingMinutes: isInt,
  actualMinutes: (value) => typeof value === 'number',
  actualIntervals: isArray,
  startedAt: orNull(isLocal),
  completedAt: orNull(isLocal),
  earliestStart: orNull(isLocal),
  isWaiting: isBool,
  releaseDate: orNull(isLocal),
  resourceMode: oneOf('Independent', 'Collaboration'),
  project: isObject,
  assignees: isArray,
  dependencies: isArray,
  requiresAttention: isBool,
  externalContext: isArray,
  externalChanges: isArray,
  sourceActivations: isArray,
  responsesAwaitingEvaluation: isArray,
  blocked: isBool,
  blockingReasons: (value) => Array.isArray(value) && value.every(isString),
  humanRequests: isArray,
  notes: isArray,
  etag: isString,
};

const PROJECT_FIELDS: Record<string, (value: unknown) => boolean> = {
  id: isInt,
  name: isString,
  priority: (value) => [0, 50, 100, 101].includes(value as number),
  priorityName: oneOf('critical', 'high', 'normal', 'low'),
  targetDate: orNull(isLocal),
  hardDeadline: orNull(isLocal),
  deadlineReason: orNull(isString),
  isActive: isBool,
};

function checkFields(t: TapTest, value: Record<string, unknown>, fields: Record<string, (value: unknown) => boolean>, label: string) {
  t.strictSame(Object.keys(value).sort(), Object.keys(fields).sort(), `${label}: exactly the spec's fields`);
  for (const [name, check] of Object.entries(fields)) {
    t.ok(name in value, `${label}.${name} is present`);
    t.ok(check(value[name]), `${label}.${name} has the right type (${JSON.stringify(value[name])})`);
  }
}

function insertNote(h: Harness, note: { taskId: number; clientId: number; staffId: number; text: string; createdUtc: string }): number {
  const result = h.db
    .prepare('INSERT INTO notes (task_id, client_id, staff_id, text, created_utc) VALUES (?, ?, ?, ?, ?)')
    .run(note.taskId, note.clientId, note.staffId, note.text, Date.parse(note.createdUtc));
  return Number(result.lastInsertRowid);
}

/** The base world plus a task with every optional field set. */
function richFixture() {
  const fixture = baseFixture();
  fixture.projects.push({
    id: 5, organisationId: 1, name: 'Deadline project', priorityName: 'normal',
    targetDate: '2026-12-10T17:00:00', hardDeadline: '2026-12-18T12:00:00', deadlineReason: 'Contract', isActive: true,
  });
  fixture.tasks.push({
    id: 12, projectId: 5, title: 'Everything set', description: 'All the fields', status: 'InProgress', sequence: 7,
    estimatedMinutes: 240, startedAt: '2026-11-13T09:00:00', earliestStart: '2026-11-12T09:00:00',
    releaseDate: '2026-11-11T09:00:00', resourceMode: 'Collaboration',
    assignees: [{ staffMemberId: 10, estimatedMinutes: 100 }, { staffMemberId: 12 }],
    dependencyIds: [6],
    actualIntervals: [{ staffMemberId: 10, start: '2026-11-13T09:00:00', end: '2026-11-13T10:30:00' }],
    sources: [{ providerKey: 'http', itemId: 'T-12', facts: { title: 'Ticket 12', description: 'From the tracker', businessStatus: 'open' } }],
  });
  return fixture;
}

t.test('GET /tasks/{id}: every field of the Task table is present with its type, nullable ones as null', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const response = await h.call('GET', '/api/v1/tasks/1');
  t.equal(response.status, 200);
  t.equal(response.headers['content-type'], 'application/json');
  const task = response.json;
  checkFields(t, task, TASK_FIELDS, 'task');
  checkFields(t, task.project, PROJECT_FIELDS, 'project');
  t.match(task, {
    id: 1, title: 'Write copy', description: null, status: 'Ready', sequence: 10, estimatedMinutes: 120,
    remainingMinutes: 120, actualMinutes: 0, startedAt: null, completedAt: null, earliestStart: null,
    isWaiting: false, releaseDate: null, resourceMode: 'Independent', requiresAttention: false, blocked: false,
  });
  for (const name of ['actualIntervals', 'dependencies', 'externalContext', 'externalChanges', 'sourceActivations',
    'responsesAwaitingEvaluation', 'blockingReasons', 'humanRequests', 'notes']) {
    t.strictSame(task[name], [], `${name} is []`);
  }
  t.strictSame(task.project, {
    id: 1, name: 'Relaunch', priority: 50, priorityName: 'high', targetDate: '2026-12-01T17:00:00',
    hardDeadline: null, deadlineReason: null, isActive: true,
  });
  t.equal(task.assignees.length, 1);
  t.strictSame(Object.keys(task.assignees[0]).sort(), ['estimatedMinutes', 'name', 'remainingMinutes', 'staffMemberId']);
  t.match(task.assignees[0], { staffMemberId: 10, name: 'Ada', estimatedMinutes: null });
  t.ok(orNull(isInt)(task.assignees[0].remainingMinutes), 'assignee remainingMinutes is an integer or null');
});

t.test('GET /tasks/{id}: a task with every optional field set shows the values', async (t) => {
  const h = harness({ fixture: richFixture(), defaultToken: TOKENS.ada });
  const response = await h.call('GET', '/api/v1/tasks/12');
  t.equal(response.status, 200);
  const task = response.json;
  checkFields(t, task, TASK_FIELDS, 'task');
  t.match(task, {
    id: 12, title: 'Everything set', description: 'All the fields', status: 'InProgress', sequence: 7,
    estimatedMinutes: 240, actualMinutes: 90, startedAt: '2026-11-13T09:00:00', completedAt: null,
    earliestStart: '2026-11-12T09:00:00', releaseDate: '2026-11-11T09:00:00', resourceMode: 'Collaboration',
    blocked: false, requiresAttention: false,
  });
  t.strictSame(task.project, {
    id: 5, name: 'Deadline project', priority: 100, priorityName: 'normal', targetDate: '2026-12-10T17:00:00',
    hardDeadline: '2026-12-18T12:00:00', deadlineReason: 'Contract', isActive: true,
  });
  t.strictSame(task.actualIntervals, [{ staffMemberId: 10, start: '2026-11-13T09:00:00', end: '2026-11-13T10:30:00' }]);
  t.strictSame(task.dependencies, [{ taskId: 6, status: 'Done' }]);
  t.strictSame(task.assignees.map((a: { staffMemberId: number; name: string; estimatedMinutes: number | null }) =>
    [a.staffMemberId, a.name, a.estimatedMinutes]), [[10, 'Ada', 100], [12, 'Bob', null]]);
  t.strictSame(task.externalContext, [{
    providerKey: 'http', itemId: 'T-12',
    facts: { title: 'Ticket 12', description: 'From the tracker', businessStatus: 'open' },
    lastSuccessUtc: null, isAvailable: false,
  }]);
  const done = await h.call('GET', '/api/v1/tasks/6');
  t.match(done.json, { status: 'Done', startedAt: '2026-11-02T09:00:00', completedAt: '2026-11-02T10:00:00', remainingMinutes: 0 });
});

t.test('GET /tasks/{id}: notes are included in id order with clientName and staffName', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const first = insertNote(h, { taskId: 1, clientId: 100, staffId: 10, text: 'Started the draft', createdUtc: '2026-11-16T09:15:00.000Z' });
  const second = insertNote(h, { taskId: 1, clientId: 101, staffId: 10, text: 'Second thought', createdUtc: '2026-11-16T09:45:30.250Z' });
  insertNote(h, { taskId: 3, clientId: 100, staffId: 10, text: 'Another task', createdUtc: '2026-11-16T09:50:00.000Z' });
  const response = await h.call('GET', '/api/v1/tasks/1');
  t.equal(response.status, 200);
  t.strictSame(response.json.notes, [
    { id: first, text: 'Started the draft', createdUtc: '2026-11-16T09:15:00.000Z', clientName: 'ada-bot', staffName: 'Ada' },
    { id: second, text: 'Second thought', createdUtc: '2026-11-16T09:45:30.250Z', clientName: 'ada-reader', staffName: 'Ada' },
  ]);
  for (const note of response.json.notes) t.match(note.createdUtc, UTC);
});

t.test('GET /tasks/{id}: notes are readable with tasks:read alone', async (t) => {
  const h = harness({ defaultToken: TOKENS.readOnly });
  insertNote(h, { taskId: 1, clientId: 100, staffId: 10, text: 'Visible to readers', createdUtc: '2026-11-16T09:15:00.000Z' });
  const response = await h.call('GET', '/api/v1/tasks/1');
  t.equal(response.status, 200);
  t.strictSame(response.json.notes.map((note: { text: string }) => note.text), ['Visible to readers']);
});

t.test('GET /tasks/{id}: the ETag header equals the etag field and is "task-{id}-plan-{version}"', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const version = workspaceVersion(h);
  for (const id of [1, 6, 10]) {
    const response = await h.call('GET', `/api/v1/tasks/${id}`);
    t.equal(response.status, 200);
    t.equal(response.json.etag, `"task-${id}-plan-${version}"`);
    t.equal(response.headers['etag'], response.json.etag);
  }
});

t.test('GET /tasks/{id}: the ETag version follows the organisation workspace version', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const before = await h.call('GET', '/api/v1/tasks/1');
  h.db.prepare('UPDATE organisations SET workspace_version = workspace_version + 3 WHERE id = 2').run();
  const otherOrganisationChanged = await h.call('GET', '/api/v1/tasks/1');
  t.equal(otherOrganisationChanged.headers['etag'], before.headers['etag'], 'another organisation does not matter');
  h.db.prepare('UPDATE organisations SET workspace_version = 41 WHERE id = 1').run();
  const after = await h.call('GET', '/api/v1/tasks/1');
  t.equal(after.json.etag, '"task-1-plan-41"');
  t.equal(after.headers['etag'], '"task-1-plan-41"');
  t.not(after.json.etag, before.json.etag);
});

t.test('GET /tasks/{id}: If-None-Match with the current ETag gives 304 with the ETag and no body', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const etag = `"task-1-plan-${workspaceVersion(h)}"`;
  const response = await h.call('GET', '/api/v1/tasks/1', { headers: { 'if-none-match': etag } });
  t.equal(response.status, 304);
  t.equal(response.headers['etag'], etag);
  t.ok(response.text === undefined || response.text === '', 'no body');
  t.equal(response.headers['content-type'], undefined);
  // One of several listed tags is enough.
  const listed = await h.call('GET', '/api/v1/tasks/1', { headers: { 'if-none-match': `"task-1-plan-0", ${etag}` } });
  t.equal(listed.status, 304);
});

t.test('GET /tasks/{id}: If-None-Match with a stale ETag gives 200', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const current = `"task-1-plan-${workspaceVersion(h)}"`;
  bumpVersion(h);
  const response = await h.call('GET', '/api/v1/tasks/1', { headers: { 'if-none-match': current } });
  t.equal(response.status, 200);
  t.equal(response.json.id, 1);
  t.not(response.headers['etag'], current);
  t.equal(response.headers['etag'], response.json.etag);
  const otherTask = await h.call('GET', '/api/v1/tasks/3', { headers: { 'if-none-match': response.json.etag } });
  t.equal(otherTask.status, 200, "another task's ETag does not match");
});

t.test('GET /tasks/{id}: If-None-Match in the weak form W/ matches', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const etag = `"task-1-plan-${workspaceVersion(h)}"`;
  const response = await h.call('GET', '/api/v1/tasks/1', { headers: { 'if-none-match': `W/${etag}` } });
  t.equal(response.status, 304);
  t.equal(response.headers['etag'], etag);
});

t.test('GET /tasks/{id}: If-None-Match * matches', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const response = await h.call('GET', '/api/v1/tasks/1', { headers: { 'if-none-match': '*' } });
  t.equal(response.status, 304);
  t.equal(response.headers['etag'], `"task-1-plan-${workspaceVersion(h)}"`);
});

t.test('GET /tasks/{id}: a missing task gives 404 task_not_found', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const response = await h.call('GET', '/api/v1/tasks/9999');
  t.equal(response.status, 404);
  t.equal(response.headers['content-type'], 'application/problem+json');
  t.match(response.json, { type: 'about:blank', status: 404, code: 'task_not_found' });
});

t.test('GET /tasks/{id}: a task of another organisation gives 404 task_not_found', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const other = await h.call('GET', '/api/v1/tasks/90');
  const missing = await h.call('GET', '/api/v1/tasks/9999');
  t.equal(other.status, 404);
  t.equal(other.json.code, 'task_not_found');
  const { traceId: _a, ...otherBody } = other.json;
  const { traceId: _b, ...missingBody } = missing.json;
  t.strictSame(otherBody, missingBody, 'indistinguishable from a missing task');
  // And the other way round.
  const reverse = await h.call('GET', '/api/v1/tasks/1', { token: TOKENS.otherOrg });
  t.equal(reverse.status, 404);
  t.equal(reverse.json.code, 'task_not_found');
});

t.test('GET /tasks/{id}: a task of the same organisation assigned only to another resource gives 403 task_not_owned', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const response = await h.call('GET', '/api/v1/tasks/7');
  t.equal(response.status, 403);
  t.match(response.json, { status: 403, code: 'task_not_owned' });
  const bob = await h.call('GET', '/api/v1/tasks/7', { token: TOKENS.bob });
  t.equal(bob.status, 200, "the assignee reads it");
  const shared = await h.call('GET', '/api/v1/tasks/4', { token: TOKENS.bob });
  t.equal(shared.status, 200, 'a co-assignee reads a shared task');
});

t.test('GET /tasks/{id}: an assistance stage id is not a task and gives 404 task_not_found', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  h.db.prepare("INSERT INTO stages (id, kind) VALUES (500, 'assistance')").run();
  h.db.prepare(`INSERT INTO assistance_stages (id, organisation_id, origin_task_id, requested_by_client_id,
    requested_by_staff_id, created_utc) VALUES (500, 1, 1, 100, 10, ?)`).run(Date.parse('2026-11-16T09:00:00Z'));
  const response = await h.call('GET', '/api/v1/tasks/500');
  t.equal(response.status, 404);
  t.equal(response.json.code, 'task_not_found');
});

t.test("GET /tasks/{id}: actualMinutes is the sum of every contributor's interval minutes, in real elapsed time", async (t) => {
  const fixture = baseFixture();
  fixture.tasks.push({
    id: 13, projectId: 1, title: 'Shared effort', estimatedMinutes: 600, resourceMode: 'Collaboration',
    startedAt: '2026-03-28T09:00:00',
    assignees: [{ staffMemberId: 10 }, { staffMemberId: 12 }],
    actualIntervals: [
      { staffMemberId: 10, start: '2026-11-13T09:00:00', end: '2026-11-13T09:30:00' },
      { staffMemberId: 12, start: '2026-11-13T10:00:00', end: '2026-11-13T10:45:00' },
      // Across the spring change: 00:30 GMT to 03:30 BST is two real hours.
      { staffMemberId: 10, start: '2026-03-29T00:30:00', end: '2026-03-29T03:30:00' },
      { staffMemberId: 12, start: '2026-11-14T11:00:00', end: '2026-11-14T11:00:30' },
    ],
  });
  const h = harness({ fixture, defaultToken: TOKENS.ada });
  const response = await h.call('GET', '/api/v1/tasks/13');
  t.equal(response.status, 200);
  t.equal(response.json.actualMinutes, 30 + 45 + 120 + 0.5);
  t.equal(response.json.actualIntervals.length, 4);
  t.strictSame(response.json.actualIntervals[0], { staffMemberId: 10, start: '2026-03-29T00:30:00', end: '2026-03-29T03:30:00' });
  const none = await h.call('GET', '/api/v1/tasks/1');
  t.equal(none.json.actualMinutes, 0);
  const done = await h.call('GET', '/api/v1/tasks/6');
  t.equal(done.json.actualMinutes, 50);
});

t.test('GET /tasks/{id}: dependencies list every prerequisite with its current status', async (t) => {
  const fixture = baseFixture();
  fixture.tasks.push({ id: 14, projectId: 1, title: 'Under way', status: 'InProgress', startedAt: '2026-11-16T09:00:00', estimatedMinutes: 60, assignees: [{ staffMemberId: 12 }] });
  fixture.tasks.push({ id: 15, projectId: 1, title: 'After three', estimatedMinutes: 30, dependencyIds: [14, 6, 1], assignees: [{ staffMemberId: 10 }] });
  const h = harness({ fixture, defaultToken: TOKENS.ada });
  const response = await h.call('GET', '/api/v1/tasks/15');
  t.equal(response.status, 200);
  t.strictSame(response.json.dependencies, [
    { taskId: 1, status: 'Ready' },
    { taskId: 6, status: 'Done' },
    { taskId: 14, status: 'InProgress' },
  ]);
  t.strictSame(response.json.blockingReasons, ['unmet prerequisites']);
  h.db.prepare("UPDATE tasks SET status = 'Done' WHERE id IN (1, 14)").run();
  const later = await h.call('GET', '/api/v1/tasks/15');
  t.strictSame(later.json.dependencies.map((d: { status: string }) => d.status), ['Done', 'Done', 'Done']);
  t.equal(later.json.blocked, false);
  const second = await h.call('GET', '/api/v1/tasks/2');
  t.strictSame(second.json.dependencies, [{ taskId: 1, status: 'Done' }]);
});

t.test('GET /tasks/{id}: project carries its fields and the deprecated numeric priority (critical 0, high 50, normal 100, low 101)', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const expected: [number, string, number, string, boolean][] = [
    [4, 'critical', 0, 'Firefight', true],
    [1, 'high', 50, 'Relaunch', true],
    [10, 'normal', 100, 'Shelved', false],
    [3, 'low', 101, 'Backlog', true],
  ];
  for (const [taskId, priorityName, priority, name, isActive] of expected) {
    const response = await h.call('GET', `/api/v1/tasks/${taskId}`);
    t.equal(response.status, 200);
    checkFields(t, response.json.project, PROJECT_FIELDS, `task ${taskId} project`);
    t.match(response.json.project, { priorityName, priority, name, isActive }, `task ${taskId}`);
  }
});

t.test('GET /tasks/{id}: remainingMinutes is the estimate less the elapsed planned working time since startedAt', async (t) => {
  const fixture = baseFixture();
  // Started Monday 09:00 on a Monday-Friday 09:00-17:00 calendar; at 10:00 one working hour has elapsed.
  fixture.tasks.push({ id: 16, projectId: 1, title: 'Started this morning', status: 'InProgress', startedAt: '2026-11-16T09:00:00', estimatedMinutes: 120, assignees: [{ staffMemberId: 10 }] });
  // Started on Friday: 8 working hours on Friday plus 1 on Monday exceed the estimate.
  fixture.tasks.push({ id: 17, projectId: 1, title: 'Started Friday', status: 'InProgress', startedAt: '2026-11-13T09:00:00', estimatedMinutes: 240, assignees: [{ staffMemberId: 10 }] });
  const h = harness({ fixture, defaultToken: TOKENS.ada });
  t.equal((await h.call('GET', '/api/v1/tasks/16')).json.remainingMinutes, 60);
  t.equal((await h.call('GET', '/api/v1/tasks/17')).json.remainingMinutes, 0);
});
