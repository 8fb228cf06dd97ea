import t from 'tap';
import { harness, type Harness } from '../helpers/service.js';
import { TOKENS } from '../helpers/fixture.js';
import { API, etagOf, LEASE_11, workspaceVersion } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';

/** Contract 4: the per-organisation workspace version and the task ETags that embed it. */

const ETAG = /^"task-(\d+)-plan-(\d+)"$/;

/** The successful task writes of the spec, each run once against a fresh harness. */
const WRITES: { name: string; run: (h: Harness) => Promise<{ status: number; headers: Record<string, string> }> }[] = [
  {
    name: 'note',
    run: async (h) => h.call('POST', `${API}/tasks/1/notes`, { headers: { 'if-match': await etagOf(h, 1) }, body: { text: 'hello' } }),
  },
  {
    name: 'effort',
    run: async (h) => h.call('PUT', `${API}/tasks/1/actual-effort`, {
      headers: { 'if-match': await etagOf(h, 1) },
      body: { actualIntervals: [{ staffMemberId: 10, start: '2026-11-16T08:00:00', end: '2026-11-16T09:00:00' }] },
    }),
  },
  {
    name: 'PATCH',
    run: async (h) => h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': await etagOf(h, 1) }, body: { title: 'Write better copy' } }),
  },
  {
    name: 'claim',
    run: async (h) => h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': 'claim-1' } }),
  },
  {
    name: 'renew',
    // Task 11 carries a live lease of ada-bot in the shared fixture.
    run: async (h) => h.call('POST', `${API}/tasks/11/claim/renew`, {
      headers: { 'if-match': await etagOf(h, 11), 'idempotency-key': 'renew-11' },
      body: { token: LEASE_11 },
    }),
  },
  {
    name: 'release',
    run: async (h) => h.call('POST', `${API}/tasks/11/claim/release`, {
      headers: { 'if-match': await etagOf(h, 11), 'idempotency-key': 'release-11' },
      body: { token: LEASE_11 },
    }),
  },
];

t.test('ETAG: every successful mutation (note, effort, PATCH, claim, renew, release) bumps the workspace version exactly once', async (t) => {
  for (const write of WRITES) {
    const h = harness({ defaultToken: TOKENS.ada });
    const before = workspaceVersion(h);
    const otherOrg = workspaceVersion(h, 2);
    const response = await write.run(h);
    t.ok(response.status >= 200 && response.status < 300, `${write.name}: succeeds (${response.status})`);
    t.equal(workspaceVersion(h), before + 1, `${write.name}: version + 1`);
    t.equal(workspaceVersion(h, 2), otherOrg, `${write.name}: other organisation untouched`);
  }
});

t.test('ETAG: a successful write answers with the new ETag header, equal to the etag a re-read gives', async (t) => {
  for (const write of WRITES) {
    const h = harness({ defaultToken: TOKENS.ada });
    const response = await write.run(h);
    const id = write.name === 'renew' || write.name === 'release' ? 11 : 1;
    t.equal(response.headers['etag'], `"task-${id}-plan-${workspaceVersion(h)}"`, `${write.name}: ETag of the new version`);
    t.equal(response.headers['etag'], await etagOf(h, id), `${write.name}: same as the re-read`);
  }
});

t.test('ETAG: PATCH {} changes nothing and does not bump the version; its ETag stays usable', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const etag = await etagOf(h, 1);
  const before = workspaceVersion(h);
  const empty = await h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': etag }, body: {} });
  t.equal(empty.status, 204);
  t.equal(workspaceVersion(h), before, 'version unchanged');
  t.equal(empty.headers['etag'], etag, 'the ETag header is the unchanged one');
  const again = await h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': etag }, body: { sequence: 11 } });
  t.equal(again.status, 204, 'the same ETag still works after PATCH {}');
});

t.test('ETAG: a failed write (409, 412, 422, 400) does not bump the version', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const before = workspaceVersion(h);
  const done = await h.call('POST', `${API}/tasks/6/claim`, { headers: { 'if-match': await etagOf(h, 6), 'idempotency-key': 'k1' } });
  expectProblem(t, done, 'task_completed', 'claim a Done task');
  const blank = await h.call('POST', `${API}/tasks/1/notes`, { headers: { 'if-match': await etagOf(h, 1) }, body: { text: '   ' } });
  expectProblem(t, blank, 'invalid_field', 'whitespace-only note');
  const stale = await h.call('POST', `${API}/tasks/1/notes`, { headers: { 'if-match': '"task-1-plan-999"' }, body: { text: 'x' } });
  expectProblem(t, stale, 'stale_update', 'stale If-Match');
  const cycle = await h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': await etagOf(h, 1) }, body: { title: 'New', dependencyIds: [2] } });
  expectProblem(t, cycle, 'dependency_conflict', 'dependency cycle after a title change');
  const claimed = await h.call('POST', `${API}/tasks/11/notes`, { headers: { 'if-match': await etagOf(h, 11) }, body: { text: 'x' } });
  expectProblem(t, claimed, 'task_claimed', 'note under somebody else\'s live lease');
  t.equal(workspaceVersion(h), before, 'version unchanged after every failure');
  const task1 = await h.call('GET', `${API}/tasks/1`);
  t.equal(task1.json.title, 'Write copy', 'the failed PATCH left the title alone');
  t.strictSame(task1.json.notes, [], 'no note was added');
});

t.test('ETAG: after any write, every other task ETag of the organisation is stale (412), other organisations untouched', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const task3 = await etagOf(h, 3);
  const task4 = await etagOf(h, 4);
  const globex = await etagOf(h, 90, TOKENS.otherOrg);
  const note = await h.call('POST', `${API}/tasks/1/notes`, { headers: { 'if-match': await etagOf(h, 1) }, body: { text: 'only task 1' } });
  t.equal(note.status, 204);

  const current3 = await etagOf(h, 3);
  t.not(current3, task3, 'task 3 has a new ETag although it was not written');
  const stale3 = await h.call('PATCH', `${API}/tasks/3`, { headers: { 'if-match': task3 }, body: { sequence: 6 } });
  expectProblem(t, stale3, 'stale_update', 'old ETag of task 3');
  t.equal(stale3.headers['etag'], current3, '412 carries the current ETag of task 3');
  const stale4 = await h.call('POST', `${API}/tasks/4/notes`, { headers: { 'if-match': task4 }, body: { text: 'x' } });
  expectProblem(t, stale4, 'stale_update', 'old ETag of task 4');

  t.equal(await etagOf(h, 90, TOKENS.otherOrg), globex, 'the other organisation keeps its ETags');
  const globexWrite = await h.call('POST', `${API}/tasks/90/notes`, { token: TOKENS.otherOrg, headers: { 'if-match': globex }, body: { text: 'still fresh' } });
  t.equal(globexWrite.status, 204, 'the other organisation\'s ETag still works');
});

t.test('ETAG: a 412 on a task write carries the task\'s current ETag header, stale or malformed', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  await h.call('POST', `${API}/tasks/3/notes`, { headers: { 'if-match': await etagOf(h, 3) }, body: { text: 'bump' } });
  const current = await etagOf(h, 1);
  for (const ifMatch of ['"task-1-plan-1"', '"task-3-plan-2"', '*', 'garbage']) {
    const response = await h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': ifMatch }, body: { sequence: 3 } });
    expectProblem(t, response, 'stale_update', `If-Match ${ifMatch}`);
    t.equal(response.headers['etag'], current, `If-Match ${ifMatch}: current ETag header`);
  }
  const claim = await h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': '"task-1-plan-1"', 'idempotency-key': 'c' } });
  t.equal(claim.headers['etag'], current, 'claim 412 carries it too');
});

t.test('ETAG: the etag field, the ETag header and the version agree, and the version only grows', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  let last = 0;
  for (let i = 0; i < 5; i += 1) {
    const read = await h.call('GET', `${API}/tasks/1`);
    t.equal(read.json.etag, read.headers['etag']);
    const match = ETAG.exec(read.headers['etag'] as string);
    t.ok(match, 'quoted task-{id}-plan-{version}');
    const version = Number(match?.[2]);
    t.equal(version, workspaceVersion(h));
    t.ok(version > last, 'strictly increasing');
    last = version;
    await h.call('POST', `${API}/tasks/1/notes`, { headers: { 'if-match': read.headers['etag'] as string }, body: { text: `n${i}` } });
  }
});
