import t from 'tap';
import { readFileSync } from 'node:fs';
import { ERROR_CODES } from '../../lib/domain/errors.js';
import { ERROR_CATALOGUE, newTraceId, PROBLEM_CONTENT_TYPE, problemResponse } from '../../lib/http/problem.js';

// The error catalogue against the spec's Errors table: the two must name the same codes with the
// same statuses.

/** The spec as this repository keeps it (docs/), so the catalogue is checked in any clone. */
const COPY = new URL('../../docs/spec/assigned-worker-task-api-v1.md', import.meta.url);

/** The `## Errors` section of a markdown text, from its heading to the next one. */
function errorsSection(text: string): string {
  const start = text.indexOf('## Errors\n');
  if (start === -1) throw new Error('no "## Errors" section');
  const end = text.indexOf('\n## ', start + 1);
  return text.slice(start, end === -1 ? undefined : end + 1);
}

/** Parses the `| Status | Codes | Condition |` table of the spec's `## Errors` section. */
function specErrorTable(): Map<string, Set<number>> {
  const section = errorsSection(readFileSync(COPY, 'utf8'));
  const codes = new Map<string, Set<number>>();
  for (const line of section.split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    // ['', status, codes, condition, '']
    if (cells.length < 4 || !/^[1-5][0-9]{2}$/.test(cells[1]!)) continue;
    const status = Number(cells[1]);
    for (const code of cells[2]!.split(',').map((name) => name.trim()).filter((name) => name !== '')) {
      if (!/^[a-z_]+$/.test(code)) throw new Error(`unexpected code cell ${JSON.stringify(code)} in the ${status} row`);
      let statuses = codes.get(code);
      if (statuses === undefined) codes.set(code, (statuses = new Set()));
      statuses.add(status);
    }
  }
  return codes;
}

// The one code the spec lists under two statuses, and the status the catalogue gives it
// (contract 1 step 6 and 11: type, format and bound violations are 400).
const CHOSEN_STATUS: Readonly<Record<string, number>> = { validation_failed: 400 };

t.test('CATALOGUE: the spec Errors table parses into codes and statuses', async (t) => {
  const spec = specErrorTable();
  t.ok(spec.size >= 30, `${spec.size} codes`);
  t.same([...spec.get('validation_failed')!].sort(), [400, 422], 'validation_failed is listed under 400 and 422');
  t.same([...spec.get('internal_error')!], [500]);
});

t.test('CATALOGUE: every code of the spec has a catalogue entry', async (t) => {
  for (const code of specErrorTable().keys()) t.ok(Object.hasOwn(ERROR_CATALOGUE, code), `${code} is in the catalogue`);
});

t.test('CATALOGUE: every catalogue entry is a code of the spec', async (t) => {
  const spec = specErrorTable();
  for (const code of Object.keys(ERROR_CATALOGUE)) t.ok(spec.has(code), `${code} is in the spec`);
});

t.test('CATALOGUE: catalogue statuses agree with the spec', async (t) => {
  for (const [code, statuses] of specErrorTable()) {
    const entry = ERROR_CATALOGUE[code as keyof typeof ERROR_CATALOGUE];
    if (entry === undefined) continue; // reported by the test above
    if (statuses.size === 1) {
      t.equal(entry.status, [...statuses][0], `${code}: ${entry.status}`);
    } else {
      t.ok(statuses.has(entry.status), `${code}: ${entry.status} is one of the spec's ${[...statuses].join(', ')}`);
      t.equal(entry.status, CHOSEN_STATUS[code], `${code}: the chosen status`);
    }
  }
});

t.test('CATALOGUE: the domain error codes are exactly the catalogue codes, each with a title', async (t) => {
  t.same([...ERROR_CODES].sort(), Object.keys(ERROR_CATALOGUE).sort());
  for (const [code, entry] of Object.entries(ERROR_CATALOGUE)) {
    t.ok(entry.title.length > 0, `${code} has a title`);
    t.ok(entry.status >= 400 && entry.status <= 599, `${code}: status ${entry.status} is 400-599`);
  }
});

t.test('CATALOGUE: problemResponse renders exactly the five members with the catalogue status and title', async (t) => {
  const traceId = '0123456789abcdef0123456789abcdef';
  for (const code of ERROR_CODES) {
    const response = problemResponse(code, traceId, { allow: 'GET' });
    t.equal(response.status, ERROR_CATALOGUE[code].status);
    t.equal(response.headers['content-type'], PROBLEM_CONTENT_TYPE);
    t.equal(response.headers['x-trace-id'], traceId);
    t.equal(response.headers['allow'], 'GET', 'extra headers are kept');
    t.same(JSON.parse(response.body!), { type: 'about:blank', title: ERROR_CATALOGUE[code].title, status: ERROR_CATALOGUE[code].status, code, traceId });
  }
  // Extra headers cannot replace the content type or trace id.
  const forced = problemResponse('internal_error', traceId, { 'content-type': 'text/html', 'x-trace-id': 'x' });
  t.equal(forced.headers['content-type'], PROBLEM_CONTENT_TYPE);
  t.equal(forced.headers['x-trace-id'], traceId);
});

t.test('TRACE: trace ids are 32 lowercase hex characters and stay distinct across draws of random bytes', async (t) => {
  // 10,000 ids span more than two draws of the 64 KiB pool (4,096 ids each).
  const ids = Array.from({ length: 10_000 }, () => newTraceId());
  t.equal(ids.filter((id) => !/^[0-9a-f]{32}$/.test(id)).length, 0, 'every id has the contract\'s shape');
  t.equal(new Set(ids).size, ids.length, 'no id repeats');
  // Each of the 128 bits is random: over 10,000 ids every hex digit position takes many values.
  const positions = Array.from({ length: 32 }, (_, position) => new Set(ids.map((id) => id[position])).size);
  t.equal(Math.min(...positions), 16, 'every position takes all 16 digits');
});
