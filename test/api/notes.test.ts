import t from 'tap';
import type { Harness } from '../helpers/service.js';
import { baseFixture, TOKENS, type FixtureShape } from '../helpers/fixture.js';
import { adaWorld, expectCode, postNote, readTask } from '../helpers/api.js';

/**
 * POST /tasks/{id}/notes: appends a note (never replaces the description), text 1 to 20000
 * characters and not blank, scope tasks:notes; notes are read with the single task only.
 */

const NO_NOTES = 'wta_test_ada_no_notes_scope';

function notesFixture(): FixtureShape {
  const fixture = baseFixture();
  fixture.clients.push({
    id: 113, organisationId: 1, name: 'ada-no-notes', token: NO_NOTES, sponsorId: 11, resourceId: 10, isActive: true,
    scopes: ['tasks:read', 'tasks:update', 'tasks:time'],
  });
  const task1 = fixture.tasks.find((task) => task.id === 1) as Record<string, unknown>;
  task1['description'] = 'The original description';
  return fixture;
}

function world(): Harness {
  return adaWorld({ fixture: notesFixture() });
}

t.test('POST notes: appends each note, in order, with clientName, staffName and createdUtc = now', async (t) => {
  const h = world();
  const first = await postNote(h, 4, { text: 'Found the cause' });
  t.equal(first.status, 204);
  t.equal(first.text ?? '', '', 'no body');
  h.clock.set('2026-11-16T10:05:30.250Z');
  t.equal((await postNote(h, 4, { text: 'Deployed the fix' }, TOKENS.bob)).status, 204, 'a co-assignee adds one too');
  const { notes } = await readTask(h, 4);
  t.equal(notes.length, 2, 'both are kept');
  t.match(notes, [
    { text: 'Found the cause', createdUtc: '2026-11-16T10:00:00.000Z', clientName: 'ada-bot', staffName: 'Ada' },
    { text: 'Deployed the fix', createdUtc: '2026-11-16T10:05:30.250Z', clientName: 'bob-bot', staffName: 'Bob' },
  ]);
  for (const note of notes) t.strictSame(Object.keys(note).sort(), ['clientName', 'createdUtc', 'id', 'staffName', 'text']);
  t.ok(Number.isInteger(notes[0].id) && notes[1].id > notes[0].id, 'ids increase');
  t.equal((await postNote(h, 4, { text: 'Found the cause' })).status, 204, 'the same text again is a new note');
  t.equal((await readTask(h, 4)).notes.length, 3);
});

t.test('POST notes: a note never replaces or changes the description', async (t) => {
  const h = world();
  const before = await readTask(h, 1);
  t.equal((await postNote(h, 1, { text: 'A remark, not a description' })).status, 204);
  const after = await readTask(h, 1);
  t.equal(after.description, 'The original description');
  const { notes: _a, etag: _b, ...restBefore } = before;
  const { notes: _c, etag: _d, ...restAfter } = after;
  t.strictSame(restAfter, restBefore, 'only the notes (and the ETag) changed');
  t.equal(after.notes.length, 1);
  t.equal((await postNote(h, 3, { text: 'On a task without description' })).status, 204);
  t.equal((await readTask(h, 3)).description, null);
});

t.test("POST notes: text '' or 20001 characters gives 400, whitespace only 422 invalid_field, 20000 characters is fine", async (t) => {
  const h = world();
  expectCode(t, await postNote(h, 1, { text: '' }), 400, 'validation_failed', 'empty');
  expectCode(t, await postNote(h, 1, { text: 'n'.repeat(20001) }), 400, 'validation_failed', '20001 characters');
  for (const text of ['   ', '\n\t ', ' ']) expectCode(t, await postNote(h, 1, { text }), 422, 'invalid_field', JSON.stringify(text));
  for (const [label, body] of [['missing', {}], ['null', { text: null }], ['number', { text: 5 }], ['extra member', { text: 'ok', kind: 'x' }]] as const) {
    expectCode(t, await postNote(h, 1, body), 400, 'validation_failed', label);
  }
  t.equal((await readTask(h, 1)).notes.length, 0, 'nothing was added');
  t.equal((await postNote(h, 1, { text: 'n'.repeat(20000) })).status, 204, '20000 characters');
  t.equal((await postNote(h, 1, { text: 'x' })).status, 204, 'one character');
  t.equal((await postNote(h, 1, { text: '  spaced out  ' })).status, 204);
  t.strictSame((await readTask(h, 1)).notes.map((note: { text: string }) => note.text.length), [20000, 1, 14], 'stored verbatim');
});

t.test('POST notes: text holding U+0000 gives 400 validation_failed (SQLite ends text at a NUL), wherever it is', async (t) => {
  const h = world();
  for (const text of ['\u0000 hello', '\u0000', 'a\u0000b']) {
    expectCode(t, await postNote(h, 1, { text }), 400, 'validation_failed', JSON.stringify(text));
  }
  t.equal((await readTask(h, 1)).notes.length, 0, 'nothing was added');
});

t.test('POST notes: scope tasks:notes is required (403 permission_denied)', async (t) => {
  const h = world();
  for (const token of [NO_NOTES, TOKENS.readOnly]) {
    expectCode(t, await postNote(h, 1, { text: 'Not allowed' }, token), 403, 'permission_denied', token);
  }
  t.equal((await readTask(h, 1)).notes.length, 0);
  t.equal((await readTask(h, 1, NO_NOTES)).notes.length, 0, 'reading notes needs only tasks:read');
});

t.test('POST notes: notes appear in the single-task read and never in the lists', async (t) => {
  const h = world();
  for (const id of [1, 2, 5]) t.equal((await postNote(h, id, { text: `Note on ${id}` })).status, 204);
  t.equal((await readTask(h, 1)).notes[0].text, 'Note on 1');
  t.equal((await readTask(h, 2)).notes[0].text, 'Note on 2');
  const available = (await h.call('GET', '/api/v1/tasks/available')).json;
  const waiting = (await h.call('GET', '/api/v1/tasks/waiting')).json;
  t.ok(available.some((task: { id: number }) => task.id === 1), 'task 1 is offered');
  t.ok(waiting.some((task: { id: number }) => task.id === 2) && waiting.some((task: { id: number }) => task.id === 5), 'tasks 2 and 5 wait');
  for (const task of [...available, ...waiting]) t.strictSame(task.notes, [], `task ${task.id}: notes [] in a list`);
});
