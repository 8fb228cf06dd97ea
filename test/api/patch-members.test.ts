import t from 'tap';
import type { Harness } from '../helpers/service.js';
import { baseFixture } from '../helpers/fixture.js';
import { API, adaWorld, etagOf, expectCode, patchTask, readTask, workspaceVersion, type TapTest } from '../helpers/api.js';

/**
 * PATCH /tasks/{id}, the TaskPatch table: every member with valid and boundary values, omission,
 * null, non-editable members and the empty patch. Shape and bound violations are 400
 * validation_failed; value rules on valid JSON (a blank title) are 422 invalid_field (contract 1,
 * step 11).
 */

/** Sends each body to a fresh copy of the task and expects 400 validation_failed with nothing changed. */
async function expectRejected(t: TapTest, h: Harness, id: number, bodies: [string, unknown][]) {
  const before = await readTask(h, id);
  for (const [label, body] of bodies) expectCode(t, await patchTask(h, id, body), 400, 'validation_failed', label);
  t.strictSame(await readTask(h, id), before, 'the task is unchanged');
}

/** Past, non-overlapping one-minute intervals of Ada's, in November (GMT, so UTC reads as London). */
function intervals(count: number) {
  const base = Date.parse('2026-11-10T00:00:00Z');
  return Array.from({ length: count }, (_, index) => ({
    staffMemberId: 10,
    start: new Date(base + index * 120_000).toISOString().slice(0, 19),
    end: new Date(base + index * 120_000 + 60_000).toISOString().slice(0, 19),
  }));
}

t.test('PATCH: title accepts 1 and 200 characters; an empty or 201-character title gives 400', async (t) => {
  const h = adaWorld();
  for (const title of ['x', 'T'.repeat(200), 'Write better copy']) {
    const response = await patchTask(h, 1, { title });
    t.equal(response.status, 204, `${title.length} characters`);
    t.equal((await readTask(h, 1)).title, title);
  }
  await expectRejected(t, h, 1, [['empty', { title: '' }], ['201 characters', { title: 'T'.repeat(201) }], ['number', { title: 7 }]]);
});

t.test('PATCH: a whitespace-only title gives 422 invalid_field', async (t) => {
  const h = adaWorld();
  const before = await readTask(h, 1);
  // Every character of Unicode's White_Space property, NEXT LINE (U+0085) among them.
  const unicodeWhiteSpace = '\t\n\v\f\r \u0085\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000';
  // Labels spell characters as \uXXXX: a raw NEXT LINE would end the TAP line it stood in.
  const visible = (text: string) => text.replace(/[^ -~]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  for (const title of ['   ', ' ', '\t\n', '\u0085', unicodeWhiteSpace]) {
    expectCode(t, await patchTask(h, 1, { title }), 422, 'invalid_field', visible(title));
  }
  t.strictSame(await readTask(h, 1), before, 'nothing changed');
  // Not whitespace in Unicode: a byte-order mark (which String#trim strips) and a zero-width space.
  for (const title of ['\ufeff', '\u200b']) {
    t.equal((await patchTask(h, 1, { title })).status, 204, `${visible(title)} is text`);
    t.equal((await readTask(h, 1)).title, title);
  }
  t.equal((await patchTask(h, 1, { title: '  padded  ' })).status, 204, 'surrounding blanks around text are fine');
  t.equal((await readTask(h, 1)).title, '  padded  ', 'stored as sent');
});

t.test('PATCH: description accepts 20000 characters, 20001 gives 400, and null clears it', async (t) => {
  const h = adaWorld();
  t.equal((await patchTask(h, 1, { description: 'd'.repeat(20000) })).status, 204);
  t.equal((await readTask(h, 1)).description.length, 20000);
  t.equal((await patchTask(h, 1, { description: '' })).status, 204, 'an empty description is allowed (no minimum)');
  t.equal((await readTask(h, 1)).description, '');
  t.equal((await patchTask(h, 1, { description: 'Some words' })).status, 204);
  await expectRejected(t, h, 1, [['20001 characters', { description: 'd'.repeat(20001) }], ['number', { description: 1 }]]);
  t.equal((await patchTask(h, 1, { description: null })).status, 204);
  t.equal((await readTask(h, 1)).description, null, 'null clears');
});

t.test('PATCH: text with a lone surrogate gives 400 (it could not be stored as sent); characters beyond the BMP are stored whole', async (t) => {
  const h = adaWorld();
  const before = await readTask(h, 1);
  for (const raw of [String.raw`{"title":"\ud800x"}`, String.raw`{"description":"ok \udc00"}`]) {
    const response = await h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': await etagOf(h, 1), 'content-type': 'application/json' }, raw });
    expectCode(t, response, 400, 'validation_failed', raw);
  }
  t.strictSame(await readTask(h, 1), before, 'nothing changed');
  t.equal((await patchTask(h, 1, { title: '\u{1F600} ready' })).status, 204);
  t.equal((await readTask(h, 1)).title, '\u{1F600} ready', 'read back as written');
});

t.test('PATCH: text holding U+0000 gives 400 (SQLite ends text at a NUL) and changes nothing', async (t) => {
  const h = adaWorld();
  const before = await readTask(h, 1);
  for (const body of [{ title: '\u0000 hello' }, { title: 'a\u0000b' }, { description: '\u0000' }]) {
    expectCode(t, await patchTask(h, 1, body), 400, 'validation_failed', JSON.stringify(body));
  }
  t.strictSame(await readTask(h, 1), before, 'nothing changed');
});

t.test('PATCH: sequence accepts 0 to 100000; outside, fractional or string values give 400', async (t) => {
  const h = adaWorld();
  for (const sequence of [0, 100000, 42]) {
    t.equal((await patchTask(h, 1, { sequence })).status, 204, `sequence ${sequence}`);
    t.equal((await readTask(h, 1)).sequence, sequence);
  }
  await expectRejected(t, h, 1, [
    ['-1', { sequence: -1 }], ['100001', { sequence: 100001 }], ['1.5', { sequence: 1.5 }], ['"5"', { sequence: '5' }],
  ]);
});

t.test('PATCH: a number that would be read as an integer it does not denote gives 400; an integer written with a fraction or exponent is taken', async (t) => {
  const h = adaWorld();
  const before = await readTask(h, 1);
  const send = async (text: string) => h.call('PATCH', `${API}/tasks/1`, {
    headers: { 'if-match': (await readTask(h, 1)).etag, 'content-type': 'application/json' }, raw: text,
  });
  // JSON.parse reads these as 5, 0 and 0: values the client never sent.
  for (const text of ['{"sequence":4.9999999999999999}', '{"sequence":1e-400}', '{"estimatedMinutes":1e-400}']) {
    expectCode(t, await send(text), 400, 'validation_failed', text);
  }
  t.strictSame(await readTask(h, 1), before, 'the task is unchanged');
  for (const [text, sequence] of [['{"sequence":5.0}', 5], ['{"sequence":1.2e1}', 12], ['{"sequence":700e-2}', 7]] as const) {
    t.equal((await send(text)).status, 204, text);
    t.equal((await readTask(h, 1)).sequence, sequence);
  }
});

t.test('PATCH: estimatedMinutes (and remainingMinutes) accept 0 to 1000000; outside values give 400', async (t) => {
  const h = adaWorld();
  for (const estimatedMinutes of [0, 1000000, 90]) {
    t.equal((await patchTask(h, 1, { estimatedMinutes })).status, 204, `estimatedMinutes ${estimatedMinutes}`);
    t.equal((await readTask(h, 1)).estimatedMinutes, estimatedMinutes);
  }
  for (const remainingMinutes of [0, 1000000]) {
    t.equal((await patchTask(h, 1, { remainingMinutes })).status, 204, `remainingMinutes ${remainingMinutes}`);
    t.equal((await readTask(h, 1)).estimatedMinutes, remainingMinutes, 'task 1 has not started: the estimate is the value');
  }
  await expectRejected(t, h, 1, [
    ['estimatedMinutes -1', { estimatedMinutes: -1 }], ['estimatedMinutes 1000001', { estimatedMinutes: 1000001 }],
    ['estimatedMinutes 2.5', { estimatedMinutes: 2.5 }], ['remainingMinutes -1', { remainingMinutes: -1 }],
    ['remainingMinutes 1000001', { remainingMinutes: 1000001 }],
  ]);
});

t.test('PATCH: status, resourceMode and isWaiting accept exactly their values', async (t) => {
  const h = adaWorld();
  t.equal((await patchTask(h, 3, { status: 'Ready' })).status, 204, 'Ready on a Ready task');
  t.equal((await patchTask(h, 3, { status: 'InProgress' })).status, 204);
  t.equal((await readTask(h, 3)).status, 'InProgress');
  t.equal((await patchTask(h, 1, { status: 'Done' })).status, 204);
  t.equal((await readTask(h, 1)).status, 'Done');
  for (const resourceMode of ['Collaboration', 'Independent']) {
    t.equal((await patchTask(h, 3, { resourceMode })).status, 204, resourceMode);
    t.equal((await readTask(h, 3)).resourceMode, resourceMode);
  }
  for (const isWaiting of [true, false]) {
    t.equal((await patchTask(h, 3, { isWaiting })).status, 204, `isWaiting ${isWaiting}`);
    t.equal((await readTask(h, 3)).isWaiting, isWaiting);
  }
  await expectRejected(t, h, 3, [
    ['status done', { status: 'done' }], ['status Blocked', { status: 'Blocked' }], ['status empty', { status: '' }],
    ['resourceMode Solo', { resourceMode: 'Solo' }], ['resourceMode lower case', { resourceMode: 'independent' }],
    ['isWaiting "true"', { isWaiting: 'true' }], ['isWaiting 1', { isWaiting: 1 }],
  ]);
});

t.test('PATCH: dependencyIds takes up to 1000 positive integer ids; 1001, 0, negative or non-integer ids give 400', async (t) => {
  const fixture = baseFixture();
  for (let id = 3001; id <= 4000; id += 1) {
    fixture.tasks.push({ id, projectId: 2, title: `Prerequisite ${id}`, status: 'Done', assignees: [{ staffMemberId: 12 }] });
  }
  const h = adaWorld({ fixture });
  const thousand = Array.from({ length: 1000 }, (_, index) => 3001 + index);
  t.equal((await patchTask(h, 1, { dependencyIds: thousand })).status, 204, '1000 ids');
  t.equal((await readTask(h, 1)).dependencies.length, 1000);
  await expectRejected(t, h, 1, [
    ['1001 ids', { dependencyIds: [...thousand, 2] }], ['0', { dependencyIds: [0] }], ['-3', { dependencyIds: [-3] }],
    ['1.5', { dependencyIds: [1.5] }], ['"3"', { dependencyIds: ['3'] }], ['null item', { dependencyIds: [null] }],
    ['not an array', { dependencyIds: 3 }], ['beyond int32', { dependencyIds: [2147483648] }],
  ]);
});

t.test('PATCH: actualIntervals takes up to 1000 items; 1001 gives 400', async (t) => {
  const h = adaWorld();
  t.equal((await patchTask(h, 1, { actualIntervals: intervals(1000) })).status, 204, '1000 intervals');
  const after = await readTask(h, 1);
  t.equal(after.actualIntervals.length, 1000);
  t.equal(after.actualMinutes, 1000);
  await expectRejected(t, h, 1, [
    ['1001 intervals', { actualIntervals: intervals(1001) }],
    ['missing end', { actualIntervals: [{ staffMemberId: 10, start: '2026-11-10T09:00:00' }] }],
    ['extra member', { actualIntervals: [{ ...intervals(1)[0], minutes: 1 }] }],
    ['staffMemberId 0', { actualIntervals: [{ ...intervals(1)[0], staffMemberId: 0 }] }],
  ]);
});

t.test('PATCH: omitted members keep their values', async (t) => {
  const fixture = baseFixture();
  fixture.tasks.push({
    id: 12, projectId: 1, title: 'Everything set', description: 'All the fields', status: 'InProgress', sequence: 7,
    estimatedMinutes: 240, startedAt: '2026-11-13T09:00:00', earliestStart: '2026-11-12T09:00:00',
    releaseDate: '2026-11-11T09:00:00', isWaiting: false, resourceMode: 'Collaboration',
    assignees: [{ staffMemberId: 10 }], dependencyIds: [6],
    actualIntervals: [{ staffMemberId: 10, start: '2026-11-13T09:00:00', end: '2026-11-13T10:30:00' }],
  });
  const h = adaWorld({ fixture });
  const before = await readTask(h, 12);
  t.equal((await patchTask(h, 12, { title: 'Only the title' })).status, 204);
  const after = await readTask(h, 12);
  t.strictSame({ ...after, title: before.title, etag: before.etag }, before, 'everything but the title (and ETag) is as it was');
  t.equal(after.title, 'Only the title');
  t.equal((await patchTask(h, 12, { sequence: 8, isWaiting: true })).status, 204);
  const third = await readTask(h, 12);
  t.match(third, { title: 'Only the title', sequence: 8, isWaiting: true }, 'the second patch keeps the first one');
  const unchanged = (task: Record<string, unknown>) => {
    const { title: _t, sequence: _s, isWaiting: _w, blocked: _b, blockingReasons: _r, etag: _e, ...rest } = task;
    return rest;
  };
  t.strictSame(unchanged(third), unchanged(before), 'and every member it did not name');
});

t.test('PATCH: null clears only nullable members; null for title, status, sequence and the other required members gives 400', async (t) => {
  const fixture = baseFixture();
  fixture.tasks.push({
    id: 12, projectId: 1, title: 'Nullable fields set', description: 'Text', sequence: 3, estimatedMinutes: 30,
    earliestStart: '2026-11-12T09:00:00', releaseDate: '2026-11-11T09:00:00', startedAt: '2026-11-16T09:00:00',
    assignees: [{ staffMemberId: 10 }],
  });
  const h = adaWorld({ fixture });
  await expectRejected(t, h, 12, [
    'title', 'status', 'sequence', 'estimatedMinutes', 'remainingMinutes', 'isWaiting', 'resourceMode',
    'dependencyIds', 'actualIntervals',
  ].map((member): [string, unknown] => [`${member}: null`, { [member]: null }]));
  const response = await patchTask(h, 12, { description: null, earliestStart: null, releaseDate: null, startedAt: null });
  t.equal(response.status, 204);
  t.match(await readTask(h, 12), {
    description: null, earliestStart: null, releaseDate: null, startedAt: null, title: 'Nullable fields set', sequence: 3,
  });
});

t.test('PATCH: non-editable members (project, assignments, priority, ids, targets, computed fields) give 400 as unknown members', async (t) => {
  const h = adaWorld();
  const versionBefore = workspaceVersion(h);
  await expectRejected(t, h, 1, [
    ['project', { project: { id: 2 } }], ['projectId', { projectId: 2 }],
    ['assignees', { assignees: [{ staffMemberId: 12 }] }], ['priority', { priority: 0 }],
    ['priorityName', { priorityName: 'critical' }], ['id', { id: 2 }], ['etag', { etag: '"task-1-plan-1"' }],
    ['notes', { notes: [] }], ['targetDate', { targetDate: '2026-12-01T17:00:00' }],
    ['hardDeadline', { hardDeadline: null }], ['actualMinutes', { actualMinutes: 5 }],
    ['completedAt', { completedAt: '2026-11-16T09:00:00' }], ['blocked', { blocked: false }],
    ['with a valid member too', { title: 'Fine', projectId: 2 }], ['case variant', { Title: 'Fine' }],
  ]);
  t.equal(workspaceVersion(h), versionBefore, 'no write happened');
});

t.test('PATCH: a full task response sent back as input gives 400', async (t) => {
  const h = adaWorld();
  const task = await readTask(h, 1);
  const response = await h.call('PATCH', '/api/v1/tasks/1', { headers: { 'if-match': task.etag }, body: task });
  t.equal(response.status, 400);
  t.equal(response.json.code, 'validation_failed');
  const { id: _id, etag: _etag, project: _project, ...rest } = task;
  const stillTooMuch = await h.call('PATCH', '/api/v1/tasks/1', { headers: { 'if-match': task.etag }, body: rest });
  t.equal(stillTooMuch.status, 400, 'nor without its identity members');
  t.strictSame(await readTask(h, 1), task, 'unchanged');
});

t.test('PATCH: {} gives 204 and changes nothing, not even the workspace version', async (t) => {
  const h = adaWorld();
  const before = await readTask(h, 1);
  const versionBefore = workspaceVersion(h);
  const response = await h.call('PATCH', '/api/v1/tasks/1', { headers: { 'if-match': before.etag }, body: {} });
  t.equal(response.status, 204);
  t.equal(response.text ?? '', '', 'no body');
  t.equal(response.headers['etag'], before.etag, 'the ETag stays current');
  t.equal(response.headers['warning'], undefined);
  t.equal(workspaceVersion(h), versionBefore);
  t.strictSame(await readTask(h, 1), before);
  const again = await h.call('PATCH', '/api/v1/tasks/1', { headers: { 'if-match': before.etag }, body: {} });
  t.equal(again.status, 204, 'the same ETag still works');
});
