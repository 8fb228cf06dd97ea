import t from 'tap';
import type { CallResult } from '../helpers/service.js';
import { baseFixture, DESK_TOKENS, withDesks } from '../helpers/fixture.js';
import { addAssistance, adaWorld, API, etagOf, expectCode, patchTask, postNote, putEffort, readTask } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';
import { sourceWorld } from '../helpers/stub-tracker.js';

/**
 * README behaviour notes on requests and fields, each checked as the README words it: the claim
 * 503's Retry-After, empty EmptyRequest bodies whatever their labels, nonblank text, fractions
 * of a second in time inputs (the fixture loader's are in test/fixture-loader/load.test.ts).
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
