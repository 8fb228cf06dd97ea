import t, { type Test } from 'tap';
import Database from 'better-sqlite3';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { FixtureError, loadFixture, loadFixtureFile } from '../../lib/fixtures/load.js';
import { hashToken } from '../../lib/auth/token.js';
import { baseFixture, TOKENS, type FixtureShape } from '../helpers/fixture.js';
import { adaWorld, workspaceVersion } from '../helpers/api.js';
import { createService } from '../../lib/service.js';

function freshDb() {
  return new Database(':memory:');
}

function rowCounts(db: Database.Database): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const table of ['organisations', 'staff', 'api_clients', 'projects', 'tasks', 'task_assignments', 'claims', 'calendar_intervals']) {
    counts[table] = (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  }
  return counts;
}

function caught(action: () => unknown): unknown {
  try {
    action();
  } catch (error) {
    return error;
  }
  return undefined;
}

function expectFixtureError(t: Test, mutate: (fixture: FixtureShape) => void, path: string, message?: RegExp) {
  const db = freshDb();
  loadFixture(db, baseFixture());
  const before = rowCounts(db);
  const fixture = baseFixture();
  mutate(fixture);
  const error = caught(() => loadFixture(db, fixture));
  t.ok(error instanceof FixtureError && error.path === path, `error names ${path} (got ${String(error)})`);
  if (message !== undefined) t.match(String(error), message);
  t.same(rowCounts(db), before, 'nothing written');
}

t.test('FIXTURE: a valid fixture loads every entity and reports counts', async (t) => {
  const db = freshDb();
  const summary = loadFixture(db, baseFixture());
  t.same(summary, { organisations: 3, staff: 8, clients: 9, projects: 5, tasks: 12, claims: 1 });
});

t.test('FIXTURE: tokens are stored only as SHA-256 hashes', async (t) => {
  const db = freshDb();
  loadFixture(db, baseFixture());
  const rows = db.prepare('SELECT token_hash FROM api_clients').all() as { token_hash: string }[];
  t.ok(rows.some((row) => row.token_hash === hashToken(TOKENS.ada)));
  const dump = JSON.stringify(db.prepare('SELECT * FROM api_clients').all());
  for (const token of Object.values(TOKENS)) t.notOk(dump.includes(token), `${token} not stored`);
});

t.test('FIXTURE: a staff member without calendar gets Monday-Friday 09:00-17:00, {} means no working time', async (t) => {
  const db = freshDb();
  const fixture = baseFixture();
  fixture.staff.push({ id: 15, organisationId: 1, name: 'Nobody', kind: 'human', calendar: {} });
  fixture.staff.push({ id: 16, organisationId: 1, name: 'Split', kind: 'human', calendar: { tue: [['13:30', '17:00'], ['09:00', '12:30']], sun: [['22:00', '24:00']] } });
  loadFixture(db, fixture);
  const calendar = (id: number) => db.prepare('SELECT weekday, start_minute AS s, end_minute AS e FROM calendar_intervals WHERE staff_id = ? ORDER BY weekday, s').all(id);
  t.same(calendar(10), [1, 2, 3, 4, 5].map((weekday) => ({ weekday, s: 540, e: 1020 })));
  t.same(calendar(15), []);
  t.same(calendar(16), [{ weekday: 2, s: 540, e: 750 }, { weekday: 2, s: 810, e: 1020 }, { weekday: 7, s: 1320, e: 1440 }]);
});

t.test('FIXTURE: loading the same fixture twice upserts instead of duplicating and bumps the workspace version', async (t) => {
  const db = freshDb();
  loadFixture(db, baseFixture());
  const before = rowCounts(db);
  const version = workspaceVersion({ db });
  loadFixture(db, baseFixture());
  t.same(rowCounts(db), before);
  t.equal(workspaceVersion({ db }), version + 1);
});

t.test('FIXTURE: task defaults follow contract 11', async (t) => {
  const db = freshDb();
  const fixture = baseFixture();
  fixture.tasks = [{ id: 50, projectId: 1, title: 'Bare', assignees: [{ staffMemberId: 10 }] }];
  fixture.claims = [];
  loadFixture(db, fixture);
  t.same(db.prepare(`SELECT description, status, sequence, estimated_minutes AS e, started_at_local AS s, completed_at_local AS c,
      earliest_start_local AS es, release_date_local AS r, is_waiting AS w, resource_mode AS m FROM tasks WHERE id = 50`).get(),
    { description: null, status: 'Ready', sequence: 0, e: 0, s: null, c: null, es: null, r: null, w: 0, m: 'Independent' });
});

t.test('FIXTURE: offset times are converted to London wall time', async (t) => {
  const db = freshDb();
  const fixture = baseFixture();
  fixture.tasks[0]!['earliestStart'] = '2026-07-01T08:00:00Z';
  loadFixture(db, fixture);
  t.equal((db.prepare('SELECT earliest_start_local AS v FROM tasks WHERE id = 1').get() as { v: string }).v, '2026-07-01T09:00:00');
});

t.test('FIXTURE: loadFixture runs inside the caller\'s transaction, so two fixtures go in or fail together', async (t) => {
  for (const adoptedFirst of [false, true]) {
    const db = freshDb();
    if (adoptedFirst) loadFixture(db, { organisations: [] });
    const bad = baseFixture();
    bad.tasks[0]!['projectId'] = 999;
    const error = caught(() => db.transaction(() => {
      loadFixture(db, baseFixture());
      loadFixture(db, bad);
    })());
    t.ok(error instanceof FixtureError && error.path === 'tasks[0].projectId', `the second one fails (got ${String(error)})`);
    // On a handle never opened before, the schema itself was made in the transaction and went too.
    const organisations = db.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'organisations'").pluck().get() === 1
      ? (db.prepare('SELECT count(*) AS n FROM organisations').get() as { n: number }).n
      : 0;
    t.equal(organisations, 0, 'and takes the first back with it');
    db.transaction(() => loadFixture(db, baseFixture()))();
    t.equal((db.prepare('SELECT count(*) AS n FROM organisations').get() as { n: number }).n, 3, 'a good one commits with the transaction');
  }
});

t.test('FIXTURE: an unknown member is rejected naming its path', async (t) => {
  expectFixtureError(t, (f) => { f.tasks[2]!['colour'] = 'red'; }, 'tasks[2].colour');
});

t.test('FIXTURE: a wrong type is rejected naming its path', async (t) => {
  expectFixtureError(t, (f) => { f.tasks[1]!['estimatedMinutes'] = '60'; }, 'tasks[1].estimatedMinutes');
});

t.test('FIXTURE: a missing required member is rejected naming the member, not its parent', async (t) => {
  expectFixtureError(t, (f) => { delete f.tasks[1]!['title']; }, 'tasks[1].title');
  expectFixtureError(t, (f) => { f.tasks[0]!['assignees'] = [{}]; }, 'tasks[0].assignees[0].staffMemberId');
  expectFixtureError(t, (f) => { delete f.organisations[0]!['name']; }, 'organisations[0].name');
});

t.test('FIXTURE: an assignee of another organisation is rejected and nothing is written', async (t) => {
  expectFixtureError(t, (f) => { f.tasks[0]!['assignees'] = [{ staffMemberId: 20 }]; }, 'tasks[0].assignees[0].staffMemberId');
});

t.test('FIXTURE: a staff member, client, project or task cannot move to another organisation (rows elsewhere point at it)', async (t) => {
  const indexOf = (rows: { id?: unknown }[], id: number) => rows.findIndex((row) => row.id === id);
  const staff = indexOf(baseFixture().staff, 20);
  expectFixtureError(t, (f) => { f.staff[staff]!['organisationId'] = 1; }, `staff[${staff}].organisationId`);
  const client = indexOf(baseFixture().clients, 105);
  expectFixtureError(t, (f) => { f.clients[client]!['organisationId'] = 1; f.clients[client]!['sponsorId'] = 11; f.clients[client]!['resourceId'] = 10; }, `clients[${client}].organisationId`);
  const project = indexOf(baseFixture().projects, 9);
  expectFixtureError(t, (f) => { f.projects[project]!['organisationId'] = 1; }, `projects[${project}].organisationId`);
  const task = indexOf(baseFixture().tasks, 90);
  expectFixtureError(t, (f) => { f.tasks[task]!['projectId'] = 1; f.tasks[task]!['assignees'] = [{ staffMemberId: 10 }]; }, `tasks[${task}].projectId`);
  const db = freshDb();
  loadFixture(db, baseFixture());
  const moved = baseFixture();
  moved.tasks[indexOf(moved.tasks, 1)]!['projectId'] = 2;
  t.doesNotThrow(() => loadFixture(db, moved), 'a task may move to another project of its own organisation');
});

t.test('FIXTURE: a sponsor that is not human is rejected', async (t) => {
  expectFixtureError(t, (f) => { f.clients[0]!['sponsorId'] = 12; }, 'clients[0].sponsorId');
});

t.test('FIXTURE: an unknown dependency is rejected', async (t) => {
  expectFixtureError(t, (f) => { f.tasks[0]!['dependencyIds'] = [999]; }, 'tasks[0].dependencyIds[0]');
});

t.test('FIXTURE: a dependency cycle is rejected', async (t) => {
  expectFixtureError(t, (f) => { f.tasks[0]!['dependencyIds'] = [2]; }, 'tasks[0].dependencyIds');
});

t.test('FIXTURE: a nonexistent spring wall time is rejected', async (t) => {
  expectFixtureError(t, (f) => { f.tasks[0]!['startedAt'] = '2026-03-29T01:30:00'; }, 'tasks[0].startedAt');
});

t.test('FIXTURE: an interval whose end is not after its start is rejected', async (t) => {
  expectFixtureError(t, (f) => {
    f.tasks[5]!['actualIntervals'] = [{ staffMemberId: 10, start: '2026-11-02T10:00:00', end: '2026-11-02T09:00:00' }];
  }, 'tasks[5].actualIntervals[0].end');
});

t.test('FIXTURE: an interval time given as an instant in the autumn repeated hour keeps its pass, as the API keeps it', async (t) => {
  const db = freshDb();
  const fixture = baseFixture();
  const taskId = fixture.tasks[5]!['id'] as number;
  fixture.tasks[5]!['actualIntervals'] = [
    // 01:50 BST to 01:10 GMT: twenty real minutes, though the wall clock reads backwards.
    { staffMemberId: 10, start: '2026-10-25T00:50:00Z', end: '2026-10-25T01:10:00Z' },
    // A bare 01:30 is the first pass (00:30Z); the end names the second pass of 01:45. The two
    // overlap, which a fixture takes as given.
    { staffMemberId: 10, start: '2026-10-25T01:30:00', end: '2026-10-25T01:45:00Z' },
  ];
  loadFixture(db, fixture);
  const rows = db.prepare('SELECT start_local AS start, end_local AS end, start_utc AS startUtc, end_utc AS endUtc FROM actual_intervals WHERE task_id = ? ORDER BY start_utc')
    .all(taskId) as { start: string; end: string; startUtc: number; endUtc: number }[];
  t.strictSame(rows, [
    { start: '2026-10-25T01:30:00', end: '2026-10-25T01:45:00', startUtc: Date.parse('2026-10-25T00:30:00Z'), endUtc: Date.parse('2026-10-25T01:45:00Z') },
    { start: '2026-10-25T01:50:00', end: '2026-10-25T01:10:00', startUtc: Date.parse('2026-10-25T00:50:00Z'), endUtc: Date.parse('2026-10-25T01:10:00Z') },
  ], 'wall times as stored, instants as sent');
  t.strictSame(rows.map((row) => (row.endUtc - row.startUtc) / 60_000), [75, 20], 'minutes as really elapsed');
});

t.test('FIXTURE: one item linked from two tasks takes one set of facts: different ones are refused, the same ones load', async (t) => {
  const link = (title: string) => ({ providerKey: 'jira', itemId: 'T-1', facts: { title, description: null, businessStatus: 'open' } });
  expectFixtureError(t, (f) => {
    f.tasks[0]!['sources'] = [link('A title')];
    f.tasks[2]!['sources'] = [link('B title')];
  }, 'tasks[2].sources[0].facts');

  const db = freshDb();
  const fixture = baseFixture();
  fixture.tasks[0]!['sources'] = [link('A title')];
  fixture.tasks[1]!['sources'] = [{ providerKey: 'jira', itemId: 'T-1' }];
  fixture.tasks[2]!['sources'] = [link('A title')];
  loadFixture(db, fixture);
  t.strictSame(db.prepare("SELECT title, business_status AS status FROM source_items WHERE item_id = 'T-1'").all(), [{ title: 'A title', status: 'open' }],
    'the same facts twice, and a link without facts, are one item');
});

t.test('FIXTURE: one item linked twice from one task is refused as linked twice, with or without facts', async (t) => {
  const link = (title?: string) => ({ providerKey: 'jira', itemId: 'T-1', ...(title === undefined ? {} : { facts: { title } }) });
  for (const [first, second] of [[undefined, undefined], ['A title', 'B title'], ['A title', 'A title'], [undefined, 'A title']] as const) {
    expectFixtureError(t, (f) => { f.tasks[0]!['sources'] = [link(first), link(second)]; }, 'tasks[0].sources[1]', /linked twice/);
  }
});

t.test('FIXTURE: overlapping calendar intervals are rejected', async (t) => {
  expectFixtureError(t, (f) => { f.staff[0]!['calendar'] = { mon: [['09:00', '12:00'], ['11:00', '13:00']] }; }, 'staff[0].calendar.mon');
});

t.test('FIXTURE: a token shared by two clients is rejected', async (t) => {
  expectFixtureError(t, (f) => { f.clients[1]!['token'] = TOKENS.ada; }, 'clients[1].token');
});

t.test('FIXTURE: a file with duplicate members is rejected by the strict reader, naming the repeated member', async (t) => {
  const dir = t.testdir({
    'dup.json': '{"organisations": [], "Organisations": []}',
    'deep.json': '{"staff": [{"id": 1}, {"id": 2, "calendar": {"mon": [], "MON": []}}]}',
  });
  const db = freshDb();
  const top = caught(() => loadFixtureFile(db, join(dir, 'dup.json')));
  t.ok(top instanceof FixtureError && top.path === 'Organisations', `names Organisations (got ${String(top)})`);
  const deep = caught(() => loadFixtureFile(db, join(dir, 'deep.json')));
  t.ok(deep instanceof FixtureError && deep.path === 'staff[1].calendar.MON', `names staff[1].calendar.MON (got ${String(deep)})`);
});

t.test('FIXTURE: each reference and time rule the schema cannot express is refused naming its path, and nothing is written', async (t) => {
  const cases: ReadonlyArray<readonly [string, (fixture: FixtureShape) => void, string, RegExp]> = [
    ['an interval time in the spring gap', (f) => {
      f.tasks[5]!['actualIntervals'] = [{ staffMemberId: 10, start: '2026-03-29T01:30:00', end: '2026-03-29T03:00:00' }];
    }, 'tasks[5].actualIntervals[0].start', /nonexistent Europe\/London wall time/],
    ['a project of an organisation nobody defined', (f) => { f.projects[0]!['organisationId'] = 99; }, 'projects[0].organisationId', /no organisation 99/],
    ['a calendar interval ending where it starts', (f) => { f.staff[0]!['calendar'] = { mon: [['09:00', '12:00'], ['13:00', '13:00']] }; }, 'staff[0].calendar.mon[1]', /start must be before end/],
    ['a calendar interval ending before it starts', (f) => { f.staff[0]!['calendar'] = { fri: [['17:00', '09:00']] }; }, 'staff[0].calendar.fri[0]', /start must be before end/],
    ['a staff member assigned twice to one task', (f) => { f.tasks[0]!['assignees'] = [{ staffMemberId: 10 }, { staffMemberId: 10 }]; }, 'tasks[0].assignees[1].staffMemberId', /assigned twice/],
    ['a task depending on itself', (f) => { f.tasks[2]!['dependencyIds'] = [3]; }, 'tasks[2].dependencyIds[0]', /cannot depend on itself/],
    ['a claim on a task nobody defined', (f) => { f.claims[0]!['taskId'] = 999; }, 'claims[0].taskId', /no task 999/],
    ['a claim by a client of another organisation', (f) => { f.claims[0]!['clientId'] = 105; }, 'claims[0].clientId', /no client 105 in the task's organisation/],
    ['a claim expiring on a day no calendar has', (f) => { f.claims[0]!['expiresUtc'] = '2026-02-30T00:00:00Z'; }, 'claims[0].expiresUtc', /not a UTC instant/],
  ];
  for (const [name, mutate, path, message] of cases) t.test(name, async (t) => expectFixtureError(t, mutate, path, message));
});

t.test('FIXTURE: a task id the database already holds as an assistance stage is refused, and nothing is written', async (t) => {
  const db = freshDb();
  loadFixture(db, baseFixture());
  db.prepare("INSERT INTO stages (id, kind) VALUES (500, 'assistance')").run();
  const before = rowCounts(db);
  const fixture = baseFixture();
  fixture.tasks.push({ id: 500, projectId: 1, title: 'Taken id', assignees: [{ staffMemberId: 10 }] });
  const error = caught(() => loadFixture(db, fixture));
  t.ok(error instanceof FixtureError && error.path === `tasks[${fixture.tasks.length - 1}].id`, `names the task's id (got ${String(error)})`);
  t.match(String(error), /500 is an assistance stage/);
  t.same(rowCounts(db), before, 'nothing written');
});

t.test('FIXTURE: a file that cannot be read is refused as such, naming the file', async (t) => {
  const missing = join(t.testdir(), 'absent.json');
  const error = caught(() => loadFixtureFile(freshDb(), missing));
  t.ok(error instanceof FixtureError && error.path === '(file)', `names (file) (got ${String(error)})`);
  t.match(String(error), `cannot read ${missing}`);
});

t.test('FIXTURE: defaults: a project\'s priorityName is normal, its dates and deadline reason null, and every isActive true', async (t) => {
  const fixture = baseFixture();
  fixture.organisations.push({ id: 4, name: 'Bare' });
  fixture.staff.push({ id: 40, organisationId: 4, name: 'Bare human', kind: 'human' });
  fixture.clients.push({ id: 140, organisationId: 4, name: 'bare-bot', token: 'wta_test_bare_defaults', sponsorId: 40 });
  fixture.projects.push({ id: 40, organisationId: 4, name: 'Bare project' });
  const db = freshDb();
  loadFixture(db, fixture);
  t.strictSame(db.prepare(`SELECT priority_name AS priorityName, target_date_local AS targetDate, hard_deadline_local AS hardDeadline,
      deadline_reason AS deadlineReason, is_active AS isActive FROM projects WHERE id = 40`).get(),
  { priorityName: 'normal', targetDate: null, hardDeadline: null, deadlineReason: null, isActive: 1 }, 'the project');
  t.equal(db.prepare('SELECT is_active FROM organisations WHERE id = 4').pluck().get(), 1, 'the organisation is active');
  t.equal(db.prepare('SELECT is_active FROM staff WHERE id = 40').pluck().get(), 1, 'the staff member is active');
  t.equal(db.prepare('SELECT is_active FROM api_clients WHERE id = 140').pluck().get(), 1, 'the client is active');
});

t.test('FIXTURE: states the API would never make load as given and are read back as stored (README, Fixtures)', async (t) => {
  const fixture = baseFixture();
  const task = (id: number, fields: Record<string, unknown>) =>
    fixture.tasks.push({ id, projectId: 1, title: `Task ${id}`, estimatedMinutes: 60, assignees: [{ staffMemberId: 10 }], ...fields });
  task(40, { status: 'Done' });
  task(41, { startedAt: '2026-11-17T09:00:00' });
  task(42, { status: 'InProgress', startedAt: '2026-11-16T09:00:00', actualIntervals: [{ staffMemberId: 10, start: '2026-11-16T09:00:00', end: '2026-11-16T11:00:00' }] });
  task(43, { status: 'InProgress', startedAt: '2026-11-16T08:00:00', actualIntervals: [
    { staffMemberId: 10, start: '2026-11-16T08:00:00', end: '2026-11-16T09:00:00' },
    { staffMemberId: 10, start: '2026-11-16T08:30:00', end: '2026-11-16T09:30:00' },
  ] });
  task(44, { status: 'InProgress', startedAt: '2026-11-16T08:00:00', actualIntervals: [{ staffMemberId: 12, start: '2026-11-16T08:00:00', end: '2026-11-16T08:30:00' }] });
  task(45, { title: ' \t ' });
  task(46, { completedAt: '2026-11-16T09:00:00' });
  task(47, { status: 'InProgress' });
  task(48, { status: 'Done', startedAt: '2026-11-16T09:30:00', completedAt: '2026-11-16T09:00:00' });
  const h = adaWorld({ fixture });
  const read = async (id: number) => {
    const response = await h.call('GET', `/api/v1/tasks/${id}`);
    t.equal(response.status, 200, `task ${id} is read`);
    return response.json;
  };
  t.match(await read(40), { status: 'Done', completedAt: null }, 'a Done task without completedAt');
  t.match(await read(41), { status: 'Ready', startedAt: '2026-11-17T09:00:00' }, 'a start after the load');
  t.match(await read(42), { actualMinutes: 120, actualIntervals: [{ end: '2026-11-16T11:00:00' }] }, 'an interval end after the load');
  t.match(await read(43), { actualMinutes: 120 }, 'overlapping intervals of one contributor each count');
  t.match(await read(44), { actualIntervals: [{ staffMemberId: 12 }], assignees: [{ staffMemberId: 10 }] }, 'an interval of a staff member who is not an assignee');
  t.match(await read(45), { title: ' \t ' }, 'a whitespace-only title');
  t.match(await read(46), { status: 'Ready', completedAt: '2026-11-16T09:00:00' }, 'a Ready task with a completedAt');
  t.match(await read(47), { status: 'InProgress', startedAt: null }, 'an InProgress task without startedAt');
  t.match(await read(48), { status: 'Done', startedAt: '2026-11-16T09:30:00', completedAt: '2026-11-16T09:00:00' }, 'a start after the completion');
  t.equal((await h.call('GET', '/api/v1/tasks/available')).status, 200, 'and the offer is read beside them');
});

t.test('FIXTURE: a seeded claim is acquired at the load that first seeds it, or at its expiry if that is earlier; a reload changes the expiry only', async (t) => {
  const now = Date.parse('2026-11-16T10:00:00.000Z');
  const live = { taskId: 11, clientId: 100, token: '5b1e8c3a-2f4d-4a6b-9c8d-7e6f5a4b3c2d', expiresUtc: '2026-11-16T10:10:00.000Z' };
  const expired = { taskId: 11, clientId: 100, token: '6c2f9d4b-3a5e-4b7c-8d9e-8f7a6b5c4d3e', expiresUtc: '2026-11-16T09:58:30.250Z' };
  const db = freshDb();
  loadFixture(db, { ...baseFixture(), claims: [live, expired] }, { now });
  const lease = (token: string) => db.prepare('SELECT acquired_utc AS acquired, expires_utc AS expires FROM claims WHERE token = ?').get(token);
  t.strictSame(lease(live.token), { acquired: now, expires: Date.parse(live.expiresUtc) }, 'a live claim: acquired at the load');
  t.strictSame(lease(expired.token), { acquired: Date.parse(expired.expiresUtc), expires: Date.parse(expired.expiresUtc) }, 'an expired claim: at its expiry');
  loadFixture(db, { claims: [{ ...live, expiresUtc: '2026-11-16T10:20:00.000Z' }] } as unknown as FixtureShape, { now: now + 60_000 });
  t.strictSame(lease(live.token), { acquired: now, expires: Date.parse('2026-11-16T10:20:00.000Z') }, 'reloaded a minute later');
});

t.test('FIXTURE: a client whose sponsor is a human of another organisation is refused at its sponsorId', async (t) => {
  // Gail (staff 21) is a human of organisation 2; the client is of organisation 1.
  expectFixtureError(t, (f) => {
    f.clients.push({ id: 120, organisationId: 1, name: 'cross-bot', token: 'wta_test_cross_sponsor', sponsorId: 21, resourceId: 10, scopes: ['tasks:read'] });
  }, `clients[${baseFixture().clients.length}].sponsorId`);
});

t.test('FIXTURE: the contract\'s own example fixture loads as written, twice, and its client works', async (t) => {
  const contract = readFileSync(new URL('../../docs/design/contract.md', import.meta.url), 'utf8');
  const example = /```json\n([\s\S]*?)\n```/.exec(contract)?.[1];
  if (example === undefined) {
    t.fail('contract.md has no json example');
    return;
  }
  const db = freshDb();
  const counts = { organisations: 1, staff: 2, clients: 1, projects: 1, tasks: 1, claims: 1 };
  t.strictSame(loadFixture(db, JSON.parse(example)), counts);
  t.strictSame(loadFixture(db, JSON.parse(example)), counts, 'and again, as an upsert');
  const service = createService({ db });
  t.teardown(() => service.close());
  const identity = await service.handle({ method: 'GET', url: '/api/v1/identity', headers: { authorization: 'Bearer wta_example_ada' } });
  t.equal(identity.status, 200);
  t.match(JSON.parse(String(identity.body)), { clientName: 'ada-bot' });
});

t.test('FIXTURE: a fixture file loads like the object', async (t) => {
  const dir = t.testdir();
  const file = join(dir, 'world.json');
  writeFileSync(file, JSON.stringify(baseFixture()));
  const db = freshDb();
  t.equal(loadFixtureFile(db, file).tasks, 12);
  // Saved by an editor that writes a UTF-8 byte order mark first.
  const marked = join(dir, 'bom.json');
  writeFileSync(marked, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(JSON.stringify(baseFixture()))]));
  t.equal(loadFixtureFile(freshDb(), marked).tasks, 12, 'a leading byte order mark is ignored');
});

t.test('FIXTURE: two claims whose tokens differ only in case are rejected naming the second', async (t) => {
  expectFixtureError(t, (f) => {
    f.claims.push({ taskId: 1, clientId: 100, token: '6F1C8A52-3F7E-4A8E-9D1E-2B7F0C4D9A10', expiresUtc: '2026-11-16T09:00:00.000Z' });
  }, 'claims[1].token');
});

t.test('FIXTURE: a client token is any visible ASCII without spaces, however short, and works as written in Authorization: Bearer', async (t) => {
  const tokens = ['a', 'acme:ada', 'tok!"#$%&\'()*,;<>?@[\\]^`{|}', 'x'.repeat(512)];
  const db = freshDb();
  const fixture = baseFixture();
  const template = fixture.clients[0] as Record<string, unknown>;
  fixture.clients.push(...tokens.map((token, index) => ({ ...template, id: 900 + index, name: `short-${index}`, token })));
  loadFixture(db, fixture);
  const service = createService({ db });
  for (const [index, token] of tokens.entries()) {
    const identity = await service.handle({ method: 'GET', url: '/api/v1/identity', headers: { authorization: `Bearer ${token}` } });
    t.equal(identity.status, 200, `${token.slice(0, 20)} authenticates`);
    t.match(JSON.parse(identity.body ?? '{}'), { clientId: 900 + index, clientName: `short-${index}` });
  }
});

t.test('FIXTURE: a client token that Authorization: Bearer could not carry (empty, a space, non-ASCII, over 512 characters) is refused, saying why', async (t) => {
  for (const token of ['', 'acme ada', 'adé', 'tab\there', 'x'.repeat(513)]) {
    expectFixtureError(t, (f) => { f.clients[0]!['token'] = token; }, 'clients[0].token');
  }
  const fixture = baseFixture();
  fixture.clients[0]!['token'] = 'acme ada';
  t.match(String(caught(() => loadFixture(freshDb(), fixture))), /clients\[0\]\.token: a client token is visible ASCII characters without spaces/);
});

t.test('FIXTURE: a client without resourceId or scopes is an identity-only client with no scopes', async (t) => {
  const db = freshDb();
  const fixture = baseFixture();
  const { resourceId: _resource, scopes: _scopes, ...bare } = fixture.clients[0] as Record<string, unknown>;
  loadFixture(db, { ...fixture, clients: [...fixture.clients, { ...bare, id: 900, name: 'bare', token: 'wta_bare_client_token_1' }] } as unknown as FixtureShape);
  t.equal(db.prepare('SELECT resource_id FROM api_clients WHERE id = 900').pluck().get(), null, 'no resource');
  t.equal(db.prepare('SELECT count(*) FROM api_client_scopes WHERE client_id = 900').pluck().get(), 0, 'no scopes');
  const service = createService({ db });
  const as = (url: string) => service.handle({ method: 'GET', url, headers: { authorization: 'Bearer wta_bare_client_token_1' } });
  const identity = await as('/api/v1/identity');
  t.equal(identity.status, 200, 'GET /identity works');
  t.match(JSON.parse(identity.body ?? '{}'), { resource: null });
  t.equal((await as('/api/v1/tasks/available')).status, 403, 'anything else is 403');
});

t.test('FIXTURE: a claim token the API refuses (all-zero or no UUID) is rejected, so no lease is seeded that nobody can use', async (t) => {
  for (const token of ['00000000-0000-0000-0000-000000000000', 'not-a-uuid']) {
    t.test(token, async (t) => {
      expectFixtureError(t, (f) => { f.claims[0]!['token'] = token; }, 'claims[0].token');
      const fixture = baseFixture();
      fixture.claims[0]!['token'] = token;
      t.match(String(caught(() => loadFixture(freshDb(), fixture))), token.startsWith('0') ? /claims\[0\]\.token: the all-zero UUID is no lease token/ : /claims\[0\]\.token: /, 'the message names the token and says what is wrong');
    });
  }
});

t.test('FIXTURE: a claim token already used by another lease is rejected', async (t) => {
  expectFixtureError(t, (f) => { f.claims[0]!['taskId'] = 1; }, 'claims[0].token');
});

t.test('FIXTURE: an id listed twice is rejected for every kind of entity, naming the second', async (t) => {
  for (const kind of ['organisations', 'staff', 'clients', 'projects', 'tasks'] as const) {
    t.test(kind, async (t) => {
      expectFixtureError(t, (f) => {
        const rows = f[kind] as Record<string, unknown>[];
        rows.push({ ...rows[0] });
      }, `${kind}[${(baseFixture()[kind] as unknown[]).length}].id`);
    });
  }
});

t.test('FIXTURE: a staff member who sponsors a client (in the database, not the file) cannot become an agent', async (t) => {
  const db = freshDb();
  loadFixture(db, baseFixture());
  const grace = baseFixture().staff.find((member) => member.id === 11) as Record<string, unknown>;
  const error = caught(() => loadFixture(db, { staff: [{ ...grace, kind: 'agent' }] } as unknown as FixtureShape));
  t.ok(error instanceof FixtureError && error.path === 'staff[0].kind', `error names staff[0].kind (got ${String(error)})`);
  t.match(String(error), /sponsors client 100/);
  t.equal(db.prepare('SELECT kind FROM staff WHERE id = 11').pluck().get(), 'human', 'nothing written');
});

/** A fresh database with the base fixture loaded at `now` (Monday 16 November 2026 10:00 UTC). */
function baseLoaded(): { db: Database.Database; now: number; fixture: FixtureShape } {
  const db = freshDb();
  const now = Date.parse('2026-11-16T10:00:00.000Z');
  const fixture = baseFixture();
  loadFixture(db, fixture, { now });
  return { db, now, fixture };
}

const API_TOKEN = '7d2e4c1a-5b6f-4a8e-9c3d-2e1f0a9b8c7d';

/**
 * What an agent does after the base fixture's load at `now`: releases the seeded lease on task 11
 * a second later, and claims the task again through the API (client 100) a second after that.
 */
function leaseAgainThroughApi(db: Database.Database, now: number): string {
  db.prepare('UPDATE claims SET released_utc = ? WHERE task_id = 11').run(now + 1000);
  db.prepare('INSERT INTO claims (task_id, client_id, token, acquired_utc, expires_utc) VALUES (11, 100, ?, ?, ?)').run(API_TOKEN, now + 2000, now + 2000 + 15 * 60_000);
  return API_TOKEN;
}

t.test('FIXTURE: a live claim replaces the live lease taken on its task since the last load, so a file seeding live claims loads again at every start', async (t) => {
  const { db, now, fixture } = baseLoaded();
  const apiToken = leaseAgainThroughApi(db, now);

  t.doesNotThrow(() => loadFixture(db, fixture, { now: now + 3000 }), 'the file loads again');
  const leases = db.prepare('SELECT token, released_utc AS releasedUtc, expires_utc AS expiresUtc FROM claims WHERE task_id = 11 ORDER BY acquired_utc').all();
  t.same(leases, [
    { token: String(fixture.claims[0]!['token']).toLowerCase(), releasedUtc: null, expiresUtc: Date.parse('2026-11-16T10:10:00.000Z') },
    { token: apiToken, releasedUtc: now + 3000, expiresUtc: now + 2000 + 15 * 60_000 },
  ], "the file's lease is live again and the API's lease is released at the load");

  // A file whose claim has expired leaves a live lease alone.
  db.prepare('UPDATE claims SET released_utc = NULL, expires_utc = ? WHERE token = ?').run(now + 3_600_000, apiToken);
  db.prepare('UPDATE claims SET released_utc = ? WHERE token <> ?').run(now + 4000, apiToken);
  loadFixture(db, fixture, { now: now + 20 * 60_000 });
  t.equal(db.prepare('SELECT released_utc FROM claims WHERE token = ?').pluck().get(apiToken), null, 'an expired claim in the file releases nothing');
});

t.test('FIXTURE: a live claim ends an expired lease of its task at its expiry, so a clock set back cannot revive it beside the seeded one', async (t) => {
  const { db, now, fixture } = baseLoaded();
  const apiToken = leaseAgainThroughApi(db, now);
  const later = { ...fixture, claims: [{ ...fixture.claims[0], expiresUtc: '2026-11-16T18:00:00.000Z' }] };
  loadFixture(db, later, { now: now + 20 * 60_000 });
  t.equal(db.prepare('SELECT released_utc FROM claims WHERE token = ?').pluck().get(apiToken), now + 2000 + 15 * 60_000,
    "the API's expired lease is recorded as ended when it expired");
});

t.test('FIXTURE: an expired claim of the file is seeded as ended, after a live one or on a reload, so no clock set back makes two live leases', async (t) => {
  const db = freshDb();
  const now = Date.parse('2026-11-16T10:00:00.000Z');
  const fixture = baseFixture();
  const live = { taskId: 11, clientId: 100, token: '5b1e8c3a-2f4d-4a6b-9c8d-7e6f5a4b3c2d', expiresUtc: '2026-11-16T10:10:00.000Z' };
  const expired = { taskId: 11, clientId: 100, token: '6c2f9d4b-3a5e-4b7c-8d9e-8f7a6b5c4d3e', expiresUtc: '2026-11-16T09:58:00.000Z' };
  loadFixture(db, { ...fixture, claims: [live, expired] }, { now });
  const liveAt = (instant: number) => db.prepare('SELECT token FROM claims WHERE task_id = 11 AND released_utc IS NULL AND expires_utc > ?').pluck().all(instant);
  t.strictSame(liveAt(now - 3 * 60_000), [live.token], 'three minutes back, only the live claim is live');
  t.equal(db.prepare('SELECT released_utc FROM claims WHERE token = ?').pluck().get(expired.token), Date.parse(expired.expiresUtc), 'ended at its expiry');

  loadFixture(db, { ...fixture, claims: [live, expired] }, { now: now + 1000 });
  t.strictSame(liveAt(now - 3 * 60_000), [live.token], 'a reload reopens the expired claim only to end it again');
});

t.test('FIXTURE: a live claim its client could not use displaces no live lease: the file is refused, as before', async (t) => {
  const { db, now, fixture } = baseLoaded();
  const apiToken = leaseAgainThroughApi(db, now);
  // Client 101 is read-only: it could neither renew, release nor write under the seeded lease.
  const readOnly = { ...fixture, claims: [{ taskId: 11, clientId: 101, token: '3c9a7e21-4b8d-4f6a-a1c2-9d8e7f6a5b4c', expiresUtc: '2026-11-16T18:00:00.000Z' }] };
  const error = caught(() => loadFixture(db, readOnly, { now: now + 3000 }));
  t.ok(error instanceof FixtureError && error.path === 'claims[0].taskId', `refused at claims[0].taskId (got ${String(error)})`);
  t.equal(db.prepare('SELECT released_utc FROM claims WHERE token = ?').pluck().get(apiToken), null, "Ada's lease is kept");
});

t.test('FIXTURE: a file of claims alone bumps the workspace version of the organisation whose lease it changes', async (t) => {
  const { db, now, fixture } = baseLoaded();
  db.prepare('UPDATE claims SET released_utc = ? WHERE task_id = 11').run(now + 1000);
  const before = workspaceVersion({ db }, 1);
  loadFixture(db, { claims: fixture.claims } as unknown as FixtureShape, { now: now + 2000 });
  t.equal(db.prepare('SELECT released_utc FROM claims WHERE task_id = 11').pluck().get(), null, 'the lease is seeded again');
  t.ok(workspaceVersion({ db }, 1) > before, 'and the version moved on, so ETags and offers see it');
});

t.test('FIXTURE: a second live lease on a task is rejected; an expired one beside a live one is fine', async (t) => {
  const later = '2030-01-01T00:00:00.000Z';
  expectFixtureError(t, (f) => {
    f.claims[0]!['expiresUtc'] = later;
    f.claims.push({ taskId: 11, clientId: 100, token: '0b3f6c1e-9a7d-4e2b-8c5a-1d9e7f3a2b4c', expiresUtc: later });
  }, 'claims[1].taskId');
  const db = freshDb();
  const fixture = baseFixture();
  fixture.claims[0]!['expiresUtc'] = later;
  fixture.claims.push({ taskId: 11, clientId: 100, token: '0b3f6c1e-9a7d-4e2b-8c5a-1d9e7f3a2b4c', expiresUtc: '2026-01-01T00:00:00.000Z' });
  t.doesNotThrow(() => loadFixture(db, fixture), 'an expired lease does not count');
  t.doesNotThrow(() => loadFixture(db, fixture), 'and a reload re-seeds the same live lease');
});

t.test('FIXTURE: a string holding a lone surrogate or U+0000 is refused at its path, as the file reader refuses it', async (t) => {
  expectFixtureError(t, (f) => { f.tasks[0]!['title'] = 'x\ud800'; }, 'tasks[0].title');
  expectFixtureError(t, (f) => { f.staff[1]!['name'] = 'a\udc00b'; }, 'staff[1].name');
  expectFixtureError(t, (f) => { f.tasks[0]!['title'] = '\u0000x'; }, 'tasks[0].title');
  expectFixtureError(t, (f) => { f.tasks[1]!['description'] = 'a\u0000'; }, 'tasks[1].description');
  const db = freshDb();
  const fixture = baseFixture();
  fixture.tasks[0]!['title'] = 'pair \ud83d\ude00 kept';
  loadFixture(db, fixture);
  t.equal(db.prepare('SELECT title FROM tasks WHERE id = 1').pluck().get(), 'pair \ud83d\ude00 kept', 'a surrogate pair is fine');
});

t.test('FIXTURE: a file with a lone surrogate or U+0000 in a value is refused at its path; in a member name, at its offset', async (t) => {
  const dir = t.testdir({
    'nul.json': String.raw`{"tasks": [{"id": 1}, {"id": 2, "title": "\u0000x"}]}`,
    'surrogate.json': String.raw`{"staff": [{"name": "a\udc00b"}]}`,
    'name.json': String.raw`{"staff": [{"\u0000": 1}]}`,
  });
  const db = freshDb();
  const nul = caught(() => loadFixtureFile(db, join(dir, 'nul.json')));
  t.ok(nul instanceof FixtureError && nul.path === 'tasks[1].title', `names tasks[1].title (got ${String(nul)})`);
  t.match(String(nul), /U\+0000/, 'says what is wrong');
  const surrogate = caught(() => loadFixtureFile(db, join(dir, 'surrogate.json')));
  t.ok(surrogate instanceof FixtureError && surrogate.path === 'staff[0].name', `names staff[0].name (got ${String(surrogate)})`);
  t.match(String(surrogate), /lone UTF-16 surrogate/);
  const name = caught(() => loadFixtureFile(db, join(dir, 'name.json')));
  t.ok(name instanceof FixtureError && name.path === '(file)', `a member name is located by offset (got ${String(name)})`);
  t.match(String(name), /nul_character at offset 13/);
});

t.test('FIXTURE: a file number that would be read as an integer it does not name is refused with its offset, and nothing is loaded', async (t) => {
  const dir = t.testdir({ 'rounded.json': '{"organisations": [{"id": 1, "name": "Acme"}], "staff": [{"id": 4.9999999999999999}]}' });
  const db = freshDb();
  const error = caught(() => loadFixtureFile(db, join(dir, 'rounded.json')));
  t.ok(error instanceof FixtureError && error.path === '(file)', `located by offset (got ${String(error)})`);
  t.match(String(error), /inexact_integer at offset 64/);
  t.equal(db.prepare('SELECT count(*) FROM sqlite_master').pluck().get(), 0, 'the file was refused before anything was written');
});

t.test('FIXTURE: options.now must be epoch milliseconds, and no other option is known', async (t) => {
  for (const now of [Number.NaN, Number.POSITIVE_INFINITY, -1, '2026-11-16T10:00:00Z']) {
    t.throws(() => loadFixture(freshDb(), baseFixture(), { now } as { now: number }), new TypeError('loadFixture: options.now must be epoch milliseconds'), String(now));
  }
  t.throws(() => loadFixture(freshDb(), baseFixture(), { nw: 1 } as { now?: number }), new TypeError('loadFixture: unknown option "nw"'));
  t.throws(() => loadFixture(freshDb(), baseFixture(), 5 as { now?: number }), new TypeError('loadFixture: options must be an object'));
  t.throws(() => loadFixtureFile(freshDb(), '/nonexistent.json', { nw: 1 } as { now?: number }), new TypeError('loadFixtureFile: unknown option "nw"'),
    'checked before the file is read');
  t.throws(() => loadFixtureFile(freshDb(), '/nonexistent.json', { now: 'x' } as unknown as { now: number }),
    new TypeError('loadFixtureFile: options.now must be epoch milliseconds'), 'named after the function called');
});

t.test('FIXTURE: the db argument must be an open better-sqlite3 Database, not a path (which would leave a connection open)', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'by-path.sqlite');
  const closed = freshDb();
  closed.close();
  for (const [label, database] of [['a number', 42], ['null', null], ['a path', path], ['a closed Database', closed]] as const) {
    t.throws(() => loadFixture(database as unknown as Database.Database, baseFixture()), new TypeError('loadFixture: db must be an open better-sqlite3 Database'), label);
    t.throws(() => loadFixtureFile(database as unknown as Database.Database, '/nonexistent.json'),
      new TypeError('loadFixtureFile: db must be an open better-sqlite3 Database'), `${label}, before the file is read`);
  }
  t.notOk(existsSync(path), 'no database was made at the path');
});
