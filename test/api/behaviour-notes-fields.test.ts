import t from 'tap';
import Database from 'better-sqlite3';
import { FixtureError, loadFixture } from '../../lib/fixtures/load.js';
import type { CallResult } from '../helpers/service.js';
import { baseFixture, DESK_TOKENS, TEST_NOW, withDesks, type FixtureShape } from '../helpers/fixture.js';
import { addAssistance, adaWorld, API, etagOf, expectCode, patchTask, postNote, putEffort, readTask } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';
import { sourceWorld } from '../helpers/stub-tracker.js';

/**
 * README behaviour notes on requests and fields, each checked as the README words it: the claim
 * 503's Retry-After, empty EmptyRequest bodies whatever their labels, nonblank text, fractions
 * of a second in time inputs, and the fixture loader's defaults, seeded leases and sponsors.
 */

let keys = 0;
const nextKey = () => `promise-${(keys += 1)}`;

/** Labels spell characters as \uXXXX: a raw NEXT LINE would end the TAP line it stood in. */
const visible = (text: string) => text.replace(/[^ -~]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

t.test('SOURCES: a claim\'s 503 source_unavailable gives Retry-After as sourceMaxAgeMs in whole seconds, rounded up, at least 1', async (t) => {
  const cases: readonly (readonly [number, string])[] = [
    [0, '1'], [1, '1'], [999, '1'], [1000, '1'], [1001, '2'], [1400, '2'], [1500, '2'], [60_000, '60'], [3_600_000, '3600'],
  ];
  for (const [sourceMaxAgeMs, retryAfter] of cases) {
    const { h, stub } = await sourceWorld(t, { service: { sourceMaxAgeMs } });
    stub.failRefresh('T-1', { kind: 'status', status: 500 });
    const response = await h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': nextKey() } });
    expectProblem(t, response, 'source_unavailable', `sourceMaxAgeMs ${sourceMaxAgeMs}`);
    t.equal(response.headers['retry-after'], retryAfter, `sourceMaxAgeMs ${sourceMaxAgeMs}: Retry-After ${retryAfter}`);
  }
});

/** Labels an empty body may carry: other media types, content codings and transfer codings. */
const EMPTY_BODY_LABELS: readonly Record<string, string>[] = [
  { 'content-type': 'text/plain' },
  { 'content-type': 'application/x-www-form-urlencoded' },
  { 'content-type': 'application/json', 'content-encoding': 'gzip' },
  { 'content-encoding': 'gzip' },
  { 'transfer-encoding': 'gzip' },
  { 'transfer-encoding': 'gzip, chunked' },
  { 'transfer-encoding': 'chunked' },
  { 'content-type': 'text/plain', 'content-encoding': 'br', 'transfer-encoding': 'gzip, chunked' },
];

/** No body, an empty string and zero bytes: all "an empty body" to the service. */
const EMPTY_BODIES: readonly { label: string; raw?: string | Uint8Array }[] = [
  { label: 'no body' }, { label: "''", raw: '' }, { label: '0 bytes', raw: new Uint8Array(0) },
];

const describe = (headers: Record<string, string>) => Object.entries(headers).map(([name, value]) => `${name}: ${value}`).join(', ');

t.test('BODY: EmptyRequest operations (claim, Incoming start) accept an empty body whatever it is labelled with', async (t) => {
  for (const labels of EMPTY_BODY_LABELS) {
    // Claim: a fresh world per body, each claiming task 1.
    for (const { label, raw } of EMPTY_BODIES) {
      const h = adaWorld();
      const response = await h.call('POST', `${API}/tasks/1/claim`, {
        headers: { ...labels, 'if-match': await etagOf(h, 1), 'idempotency-key': nextKey() }, ...(raw === undefined ? {} : { raw }),
      });
      t.equal(response.status, 200, `claim, ${label} labelled ${describe(labels)}: 200`);
    }
    // Incoming start: one floating item of Grace's per body.
    const h = adaWorld({ fixture: withDesks(baseFixture()) });
    for (const [index, { label, raw }] of EMPTY_BODIES.entries()) {
      const revision = `0b7e2f9c-5d1a-4c3e-8f6b-9a2d4e1c7b3${index}`;
      addAssistance(h, { stageId: 500 + index, taskId: 1, revision });
      const response = await h.call('POST', `${API}/incoming/${1500 + index}/start`, {
        token: DESK_TOKENS.grace, headers: { ...labels, 'if-match': `"${revision}"`, 'idempotency-key': nextKey() }, ...(raw === undefined ? {} : { raw }),
      });
      t.equal(response.status, 204, `Incoming start, ${label} labelled ${describe(labels)}: 204`);
    }
  }
});

t.test('NONBLANK: a note or a human request\'s title of NEXT LINE (U+0085) or the ideographic space (U+3000) alone is 422 invalid_field; a BOM (U+FEFF) or zero-width space (U+200B) alone is text', async (t) => {
  const h = adaWorld();
  const ask = async (title: string): Promise<CallResult> => h.call('POST', `${API}/tasks/1/human-requests`, {
    headers: { 'if-match': await etagOf(h, 1) }, body: { humanAssigneeId: 11, title, estimatedMinutes: 30 },
  });
  for (const blank of ['\u0085', '\u3000', '\u0085\u3000']) {
    expectCode(t, await postNote(h, 1, { text: blank }), 422, 'invalid_field', `note ${visible(blank)}`);
    expectCode(t, await ask(blank), 422, 'invalid_field', `human request title ${visible(blank)}`);
  }
  t.strictSame((await readTask(h, 1)).notes, [], 'no note was added');
  t.strictSame((await readTask(h, 1)).humanRequests, [], 'no human request was made');

  for (const text of ['\ufeff', '\u200b']) {
    t.equal((await postNote(h, 1, { text })).status, 204, `note ${visible(text)} is text`);
    const asked = await ask(text);
    t.equal(asked.status, 201, `human request title ${visible(text)} is text`);
    t.equal((await h.call('GET', `${API}/human-requests/${asked.json.id}`)).json.title, text, `title ${visible(text)} stored as sent`);
  }
  t.strictSame((await readTask(h, 1)).notes.map((note: { text: string }) => note.text), ['\ufeff', '\u200b'], 'notes stored as sent');
});

t.test('TIME: a fraction of a second is dropped before judging: startedAt ...T10:00:00.999 at 10:00:00.000 is not in the future', async (t) => {
  const h = adaWorld({ now: '2026-11-16T10:00:00.000Z' });
  for (const [id, startedAt] of [[1, '2026-11-16T10:00:00.999Z'], [3, '2026-11-16T10:00:00.999'], [4, '2026-11-16T10:00:00.999999+00:00']] as const) {
    t.equal((await patchTask(h, id, { startedAt })).status, 204, `${startedAt} accepted`);
    t.equal((await readTask(h, id)).startedAt, '2026-11-16T10:00:00', 'stored to the second');
  }
});

t.test('TIME: actual intervals that overlap by less than a second do not overlap once fractions drop', async (t) => {
  const h = adaWorld();
  const ada = (start: string, end: string) => ({ staffMemberId: 10, start, end });
  t.equal((await putEffort(h, 1, { actualIntervals: [ada('2026-11-16T09:00:00', '2026-11-16T09:30:00.5'), ada('2026-11-16T09:30:00', '2026-11-16T09:45:00')] })).status,
    204, 'overlapping by half a second (bare wall times)');
  t.equal((await putEffort(h, 3, { actualIntervals: [ada('2026-11-16T08:00:00Z', '2026-11-16T08:30:00.999Z'), ada('2026-11-16T08:30:00.001Z', '2026-11-16T09:00:00Z')] })).status,
    204, 'overlapping by 998 ms (UTC instants)');
  t.strictSame((await readTask(h, 3)).actualIntervals, [ada('2026-11-16T08:00:00', '2026-11-16T08:30:00'), ada('2026-11-16T08:30:00', '2026-11-16T09:00:00')],
    'stored to the second, touching');
  t.equal((await readTask(h, 3)).actualMinutes, 60, 'counted to the second');
  t.equal((await putEffort(h, 4, { actualIntervals: [ada('2026-11-16T09:50:00', '2026-11-16T10:00:00.999Z')] })).status, 204,
    'an end of 10:00:00.999 at 10:00:00.000 is not in the future either');
});

/** A fresh database with `fixture` loaded at `now`. */
function loaded(fixture: FixtureShape, now = Date.parse(TEST_NOW)): Database.Database {
  const db = new Database(':memory:');
  loadFixture(db, fixture, { now });
  return db;
}

t.test('FIXTURE: defaults: a project\'s priorityName is normal, its dates and deadline reason null, and every isActive true', async (t) => {
  const fixture = baseFixture();
  fixture.organisations.push({ id: 4, name: 'Bare' });
  fixture.staff.push({ id: 40, organisationId: 4, name: 'Bare human', kind: 'human' });
  fixture.clients.push({ id: 140, organisationId: 4, name: 'bare-bot', token: 'wta_test_bare_defaults', sponsorId: 40 });
  fixture.projects.push({ id: 40, organisationId: 4, name: 'Bare project' });
  const db = loaded(fixture);
  t.strictSame(db.prepare(`SELECT priority_name AS priorityName, target_date_local AS targetDate, hard_deadline_local AS hardDeadline,
      deadline_reason AS deadlineReason, is_active AS isActive FROM projects WHERE id = 40`).get(),
  { priorityName: 'normal', targetDate: null, hardDeadline: null, deadlineReason: null, isActive: 1 }, 'the project');
  t.equal(db.prepare('SELECT is_active FROM organisations WHERE id = 4').pluck().get(), 1, 'the organisation is active');
  t.equal(db.prepare('SELECT is_active FROM staff WHERE id = 40').pluck().get(), 1, 'the staff member is active');
  t.equal(db.prepare('SELECT is_active FROM api_clients WHERE id = 140').pluck().get(), 1, 'the client is active');
});

t.test('FIXTURE: a seeded claim\'s acquisition time is the load time, or its expiry if that is earlier', async (t) => {
  const now = Date.parse(TEST_NOW);
  const fixture = baseFixture();
  const live = { taskId: 11, clientId: 100, token: '5b1e8c3a-2f4d-4a6b-9c8d-7e6f5a4b3c2d', expiresUtc: '2026-11-16T10:10:00.000Z' };
  const expired = { taskId: 11, clientId: 100, token: '6c2f9d4b-3a5e-4b7c-8d9e-8f7a6b5c4d3e', expiresUtc: '2026-11-16T09:58:30.250Z' };
  const db = loaded({ ...fixture, claims: [live, expired] }, now);
  const acquired = (token: string) => db.prepare('SELECT acquired_utc FROM claims WHERE token = ?').pluck().get(token);
  t.equal(acquired(live.token), now, 'a live claim: acquired at the load');
  t.equal(acquired(expired.token), Date.parse(expired.expiresUtc), 'an expired claim: acquired at its expiry');
});

t.test('FIXTURE: a client whose sponsor is a human of another organisation is refused at its sponsorId, and nothing is written', async (t) => {
  const db = loaded(baseFixture());
  const fixture = baseFixture();
  // Gail (staff 21) is a human of organisation 2; the client is of organisation 1.
  fixture.clients.push({ id: 120, organisationId: 1, name: 'cross-bot', token: 'wta_test_cross_sponsor', sponsorId: 21, resourceId: 10, scopes: ['tasks:read'] });
  let error: unknown;
  try {
    loadFixture(db, fixture, { now: Date.parse(TEST_NOW) });
  } catch (caught) {
    error = caught;
  }
  t.ok(error instanceof FixtureError && error.path === 'clients[9].sponsorId', `refused at clients[9].sponsorId (got ${String(error)})`);
  t.equal(db.prepare('SELECT count(*) FROM api_clients WHERE id = 120').pluck().get(), 0, 'the client was not written');
  t.equal(db.prepare('SELECT count(*) FROM api_clients').pluck().get(), baseFixture().clients.length, 'nothing else either');
});
