import t from 'tap';
import { harness, type Harness } from '../helpers/service.js';
import { TOKENS } from '../helpers/fixture.js';
import { API, etagOf, LEASE_11, workspaceVersion } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';

/** If-Match on task writes (contract 1 steps 7-9): 428 missing, 412 malformed or stale, and where those sit in the order. */

/** Every task write, as it would succeed given a current If-Match. */
const WRITES: { name: string; method: string; path: string; body?: unknown; key?: string }[] = [
  { name: 'PATCH', method: 'PATCH', path: '/tasks/1', body: { sequence: 12 } },
  { name: 'effort', method: 'PUT', path: '/tasks/1/actual-effort', body: { actualIntervals: [] } },
  { name: 'note', method: 'POST', path: '/tasks/1/notes', body: { text: 'n' } },
  { name: 'claim', method: 'POST', path: '/tasks/1/claim', key: 'k-claim' },
  { name: 'renew', method: 'POST', path: '/tasks/11/claim/renew', body: { token: LEASE_11 }, key: 'k-renew' },
  { name: 'release', method: 'POST', path: '/tasks/11/claim/release', body: { token: LEASE_11 }, key: 'k-release' },
];

function send(h: Harness, write: (typeof WRITES)[number], ifMatch: string | undefined, extra: Record<string, string> = {}) {
  const headers: Record<string, string> = { ...extra };
  if (ifMatch !== undefined) headers['if-match'] = ifMatch;
  if (write.key !== undefined) headers['idempotency-key'] ??= write.key;
  return h.call(write.method, `${API}${write.path}`, write.body === undefined ? { headers } : { headers, body: write.body });
}

t.test('IF-MATCH: missing on any task write is 428 precondition_required and changes nothing', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada, rateLimit: 10_000 });
  const before = workspaceVersion(h);
  for (const write of WRITES) expectProblem(t, await send(h, write, undefined), 'precondition_required', write.name);
  t.equal(workspaceVersion(h), before);
});

t.test('IF-MATCH: malformed (*, weak, unquoted, another task\'s id, garbage) is 412 stale_update on every task write', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada, rateLimit: 10_000 });
  const before = workspaceVersion(h);
  const version = workspaceVersion(h);
  for (const write of WRITES) {
    const id = write.path.startsWith('/tasks/11') ? 11 : 1;
    const other = id === 1 ? 3 : 1;
    for (const ifMatch of ['*', `W/"task-${id}-plan-${version}"`, `task-${id}-plan-${version}`, `"task-${other}-plan-${version}"`, 'garbage', '""']) {
      const response = await send(h, write, ifMatch);
      expectProblem(t, response, 'stale_update', `${write.name} with If-Match ${ifMatch}`);
      t.equal(response.headers['etag'], `"task-${id}-plan-${version}"`, `${write.name} with If-Match ${ifMatch}: current ETag header`);
    }
  }
  t.equal(workspaceVersion(h), before);
});

t.test('IF-MATCH: a stale ETag is 412 stale_update with the current ETag; the current one succeeds', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada, rateLimit: 10_000 });
  const old = await etagOf(h, 1);
  await h.call('POST', `${API}/tasks/3/notes`, { headers: { 'if-match': await etagOf(h, 3) }, body: { text: 'bump' } });
  const current = await etagOf(h, 1);
  t.not(current, old);
  for (const write of WRITES.filter((w) => w.path.startsWith('/tasks/1/') || w.path === '/tasks/1')) {
    const response = await send(h, write, old);
    expectProblem(t, response, 'stale_update', `${write.name} with a stale ETag`);
    t.equal(response.headers['etag'], current, `${write.name}: current ETag header`);
  }
  const future = await send(h, WRITES[0]!, current.replace(/plan-(\d+)/, (_m, v: string) => `plan-${Number(v) + 1}`));
  expectProblem(t, future, 'stale_update', 'a version from the future is not current either');
  const ok = await send(h, WRITES[0]!, current);
  t.equal(ok.status, 204, 'the current ETag succeeds');
});

t.test('IF-MATCH ORDER: target (404 task_not_found, 403 task_not_owned) comes before 428', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada, rateLimit: 10_000 });
  for (const path of ['/tasks/999', '/tasks/90']) {
    expectProblem(t, await h.call('PATCH', `${API}${path}`, { body: { sequence: 1 } }), 'task_not_found', `PATCH ${path}`);
    expectProblem(t, await h.call('POST', `${API}${path}/claim`), 'task_not_found', `claim ${path}`);
    expectProblem(t, await h.call('POST', `${API}${path}/notes`, { body: { text: 'x' } }), 'task_not_found', `note ${path}`);
  }
  expectProblem(t, await h.call('PATCH', `${API}/tasks/7`, { body: { sequence: 1 } }), 'task_not_owned', 'PATCH of Bob\'s task');
  expectProblem(t, await h.call('POST', `${API}/tasks/7/claim`), 'task_not_owned', 'claim of Bob\'s task');
  expectProblem(t, await h.call('POST', `${API}/tasks/7/claim/renew`, { body: { token: LEASE_11 } }), 'task_not_owned', 'renew on Bob\'s task');
});

t.test('IF-MATCH ORDER: scope (403) and body shape (400) come before 428', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada, rateLimit: 10_000 });
  expectProblem(t, await h.call('POST', `${API}/tasks/1/claim`, { token: TOKENS.readOnly }), 'permission_denied', 'claim without tasks:update');
  expectProblem(t, await h.call('PATCH', `${API}/tasks/1`, { body: { bogus: 1 } }), 'validation_failed', 'unknown member');
  expectProblem(t, await h.call('POST', `${API}/tasks/1/claim`, { body: { x: 1 }, headers: { 'idempotency-key': 'k' } }), 'validation_failed', 'claim with a member');
});

t.test('IF-MATCH ORDER: Idempotency-Key (422) comes before If-Match (428 and 412)', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada, rateLimit: 10_000 });
  for (const write of WRITES.filter((w) => w.key !== undefined)) {
    const noKey = { ...write, key: undefined };
    expectProblem(t, await send(h, noKey, undefined), 'idempotency_key_required', `${write.name}: no key, no If-Match`);
    expectProblem(t, await send(h, noKey, '*'), 'idempotency_key_required', `${write.name}: no key, malformed If-Match`);
    expectProblem(t, await send(h, write, undefined), 'precondition_required', `${write.name}: key, no If-Match`);
  }
  for (const write of WRITES.filter((w) => w.key === undefined)) {
    expectProblem(t, await send(h, write, undefined, { 'idempotency-key': 'a b' }), 'idempotency_key_required', `${write.name}: malformed key, no If-Match`);
    expectProblem(t, await send(h, write, 'garbage', { 'idempotency-key': '' }), 'idempotency_key_required', `${write.name}: empty key, malformed If-Match`);
    expectProblem(t, await send(h, write, undefined), 'precondition_required', `${write.name}: no key is fine, then 428`);
  }
});

t.test('IF-MATCH ORDER: 412 comes before the claim header and the business rules', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada, rateLimit: 10_000 });
  // Task 11 is under a live lease (a missing X-Task-Claim would be 409), task 6 is Done (claim 409).
  expectProblem(t, await h.call('POST', `${API}/tasks/11/notes`, { headers: { 'if-match': '"task-11-plan-99"' }, body: { text: 'x' } }), 'stale_update', 'stale before task_claimed');
  expectProblem(t, await h.call('POST', `${API}/tasks/11/notes`, { headers: { 'if-match': '"task-11-plan-99"', 'x-task-claim': 'nope' }, body: { text: 'x' } }), 'stale_update', 'stale before a malformed claim header');
  expectProblem(t, await h.call('POST', `${API}/tasks/6/claim`, { headers: { 'if-match': '*', 'idempotency-key': 'k' } }), 'stale_update', 'malformed before task_completed');
  expectProblem(t, await h.call('POST', `${API}/tasks/1/notes`, { headers: { 'if-match': '"task-1-plan-99"' }, body: { text: '   ' } }), 'stale_update', 'stale before invalid_field');
});
