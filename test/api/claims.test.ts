import t from 'tap';
import { randomUUID } from 'node:crypto';
import type { Harness } from '../helpers/service.js';
import { baseFixture, TOKENS, TWIN, withTwin, type FixtureShape } from '../helpers/fixture.js';
import { adminClients } from '../../lib/admin/clients.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { adaWorld, API, etagOf, LEASE_11, ZERO_UUID } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';

/** Claims (leases): contract 2 and the spec's claim lifecycle table and claim endpoints. */

const MINUTE = 60_000;
const LEASE_MS = 15 * MINUTE;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/**
 * The shared world plus a second client of Ada's resource and tasks that combine states, so the
 * check order (Done, blocked, otherwise not runnable, live lease) shows.
 */
function worldFixture(): FixtureShape {
  const fixture = withTwin(baseFixture(), ['tasks:read', 'tasks:update', 'tasks:time', 'tasks:notes']);
  const ada = [{ staffMemberId: 10 }];
  fixture.tasks.push(
    { id: 20, projectId: 4, title: 'Done, waiting, blocked, shelved', status: 'Done', isWaiting: true, dependencyIds: [2], estimatedMinutes: 10,
      startedAt: '2026-11-02T09:00:00', completedAt: '2026-11-02T10:00:00', assignees: ada },
    { id: 21, projectId: 4, title: 'Waiting on a shelved project', isWaiting: true, estimatedMinutes: 10, earliestStart: '2027-01-04T09:00:00', assignees: ada },
    { id: 22, projectId: 1, title: 'Released later', sequence: 70, releaseDate: '2027-02-01T09:00:00', estimatedMinutes: 10, assignees: ada },
    { id: 23, projectId: 1, title: 'Not yet, but leased', sequence: 80, earliestStart: '2027-01-04T09:00:00', estimatedMinutes: 10, assignees: ada },
    { id: 24, projectId: 1, title: 'Waiting and leased', sequence: 90, isWaiting: true, estimatedMinutes: 10, assignees: ada },
  );
  fixture.claims.push(
    { taskId: 23, clientId: 103, token: randomUUID(), expiresUtc: '2026-11-16T10:30:00.000Z' },
    { taskId: 24, clientId: 103, token: randomUUID(), expiresUtc: '2026-11-16T10:30:00.000Z' },
  );
  return fixture;
}

function world(): Harness {
  return adaWorld({ fixture: worldFixture(), rateLimit: 10_000 });
}

let keys = 0;
const nextKey = () => `key-${(keys += 1)}`;

/** Reads the If-Match as Ada unless `readAs` names the client to read it as. */
async function claim(h: Harness, id: number, options: { token?: string; readAs?: string; body?: unknown; raw?: string; contentType?: string } = {}) {
  const headers: Record<string, string> = { 'if-match': await etagOf(h, id, options.readAs), 'idempotency-key': nextKey() };
  if (options.contentType !== undefined) headers['content-type'] = options.contentType;
  return h.call('POST', `${API}/tasks/${id}/claim`, {
    headers,
    ...(options.token === undefined ? {} : { token: options.token }),
    ...(options.body === undefined ? {} : { body: options.body }),
    ...(options.raw === undefined ? {} : { raw: options.raw }),
  });
}

async function lease(h: Harness, action: 'renew' | 'release', id: number, body: unknown, token?: string) {
  return h.call('POST', `${API}/tasks/${id}/claim/${action}`, {
    headers: { 'if-match': await etagOf(h, id), 'idempotency-key': nextKey() },
    ...(body === undefined ? {} : { body }),
    ...(token === undefined ? {} : { token }),
  });
}

function liveLeases(h: Harness, taskId: number): number {
  return (h.db.prepare('SELECT count(*) AS n FROM claims WHERE task_id = ? AND released_utc IS NULL AND expires_utc > ?').get(taskId, h.clock.now()) as { n: number }).n;
}

t.test('CLAIM: acquisition returns a v4 UUID token and expiresUtc = now + 15 min as YYYY-MM-DDTHH:mm:ss.sssZ', async (t) => {
  const h = world();
  h.clock.set('2026-11-16T10:00:00.123Z');
  const response = await claim(h, 1);
  t.equal(response.status, 200);
  t.strictSame(Object.keys(response.json).sort(), ['expiresUtc', 'token']);
  t.match(response.json.token, UUID_V4, 'random v4 UUID');
  t.match(response.json.expiresUtc, UTC);
  t.equal(response.json.expiresUtc, '2026-11-16T10:15:00.123Z');
  const row = h.db.prepare('SELECT client_id AS clientId, token, expires_utc AS expires FROM claims WHERE task_id = 1').get() as { clientId: number; token: string; expires: number };
  t.strictSame(row, { clientId: 100, token: response.json.token, expires: h.clock.now() + LEASE_MS }, 'the lease belongs to the caller');
  const other = await claim(h, 3);
  t.not(other.json.token, response.json.token, 'tokens differ');
});

t.test('CLAIM: acquisition does not set the task InProgress', async (t) => {
  const h = world();
  t.equal((await claim(h, 1)).status, 200);
  const task = (await h.call('GET', `${API}/tasks/1`)).json;
  t.equal(task.status, 'Ready');
  t.equal(task.startedAt, null);
  const available = (await h.call('GET', `${API}/tasks/available`)).json as { id: number }[];
  t.notOk(available.some((item) => item.id === 1), 'a claimed task is no longer offered');
});

t.test('CLAIM: the body is optional (none, empty, {}); any member or other JSON is 400 validation_failed', async (t) => {
  const cases: { label: string; options: Parameters<typeof claim>[2] }[] = [
    { label: 'no body', options: {} },
    { label: 'empty body without content type', options: { raw: '' } },
    { label: 'empty body with content type', options: { raw: '', contentType: 'application/json' } },
    { label: '{}', options: { body: {} } },
    { label: '{} with whitespace', options: { raw: ' { } ', contentType: 'application/json' } },
  ];
  for (const { label, options } of cases) {
    const h = world();
    t.equal((await claim(h, 1, options)).status, 200, label);
  }
  const h = world();
  for (const [label, raw] of [['{"x":1}', '{"x":1}'], ['null', 'null'], ['[]', '[]'], ['"{}"', '"{}"'], ['{"token":"' + LEASE_11 + '"}', `{"token":"${LEASE_11}"}`]] as const) {
    expectProblem(t, await claim(h, 1, { raw, contentType: 'application/json' }), 'validation_failed', label);
  }
  t.equal(liveLeases(h, 1), 0, 'no lease from a refused body');
});

t.test('CLAIM: a Done task is 409 task_completed, before blocked and not runnable', async (t) => {
  const h = world();
  expectProblem(t, await claim(h, 6), 'task_completed', 'Done task');
  expectProblem(t, await claim(h, 20), 'task_completed', 'Done, waiting, with an unmet prerequisite, on a shelved project');
});

t.test('CLAIM: a blocked task is 409 task_blocked (unmet prerequisite, external waiting), before not runnable and live lease', async (t) => {
  const h = world();
  expectProblem(t, await claim(h, 2), 'task_blocked', 'unmet prerequisite');
  expectProblem(t, await claim(h, 5), 'task_blocked', 'external waiting');
  expectProblem(t, await claim(h, 21), 'task_blocked', 'waiting and also on a shelved project with a future earliestStart');
  expectProblem(t, await claim(h, 24), 'task_blocked', 'waiting and also under a live lease');
});

t.test('CLAIM: otherwise not runnable is 409 task_not_runnable (future earliestStart or releaseDate, inactive project), before live lease', async (t) => {
  const h = world();
  expectProblem(t, await claim(h, 9), 'task_not_runnable', 'future earliestStart');
  expectProblem(t, await claim(h, 22), 'task_not_runnable', 'future releaseDate');
  expectProblem(t, await claim(h, 10), 'task_not_runnable', 'inactive project');
  expectProblem(t, await claim(h, 23), 'task_not_runnable', 'future earliestStart and under a live lease');
  h.clock.set('2027-01-04T09:00:00.000Z');
  t.equal((await claim(h, 9)).status, 200, 'runnable once earliestStart has arrived');
});

t.test('CLAIM: a live lease held by anyone gives 409 task_claimed', async (t) => {
  const h = world();
  expectProblem(t, await claim(h, 11), 'task_claimed', 'the caller\'s own live lease');
  expectProblem(t, await claim(h, 11, { token: TWIN }), 'task_claimed', 'another client of the same resource');
  t.equal((await claim(h, 4, { token: TOKENS.bob })).status, 200, 'Bob claims the shared task');
  expectProblem(t, await claim(h, 4), 'task_claimed', 'Ada on Bob\'s live lease');
  expectProblem(t, await claim(h, 4, { token: TOKENS.bob }), 'task_claimed', 'Bob again on his own lease');
  h.clock.advance(LEASE_MS - 1);
  expectProblem(t, await claim(h, 4), 'task_claimed', '1 ms before expiry the lease is still live');
  t.equal(liveLeases(h, 4), 1);
});

t.test('CLAIM: an expired or released lease allows a new claim with a new token', async (t) => {
  const h = world();
  h.clock.set('2026-11-16T10:10:00.000Z');
  const fresh = await claim(h, 11, { token: TWIN });
  t.equal(fresh.status, 200, 'expiresUtc reached: the lease is expired');
  t.not(fresh.json.token, LEASE_11);
  t.equal(liveLeases(h, 11), 1);
  const released = await lease(h, 'release', 11, { token: fresh.json.token }, TWIN);
  t.equal(released.status, 200);
  const again = await claim(h, 11);
  t.equal(again.status, 200, 'released: claimable again');
  t.equal(liveLeases(h, 11), 1, 'one live lease at a time');
});

t.test('CLAIM: a task handed to another assignee by a fixture load is free for them at once; leases of holders still assigned stay', async (t) => {
  const h = world();
  t.equal((await claim(h, 1)).status, 200, 'Ada leases task 1');
  t.equal((await claim(h, 4, { token: TOKENS.bob })).status, 200, 'Bob leases the shared task 4');
  const task = (id: number) => baseFixture().tasks.find((row) => row['id'] === id) as Record<string, unknown>;
  loadFixture(h.db, { tasks: [{ ...task(1), assignees: [{ staffMemberId: 12 }] }, task(4)] }, { now: h.clock.now() });
  t.equal(liveLeases(h, 1), 0, "Ada's lease on task 1 is released: she can no longer renew or release it");
  t.equal(liveLeases(h, 4), 1, "Bob's lease on task 4 stays: he is still assigned");
  t.equal((await claim(h, 1, { token: TOKENS.bob, readAs: TOKENS.bob })).status, 200, 'Bob claims task 1 at once');

  loadFixture(h.db, worldFixture(), { now: h.clock.now() });
  t.equal(liveLeases(h, 23), 1, "a file's own seeded lease is kept even for a client not assigned (fixtures stay lenient)");
  t.equal(liveLeases(h, 1), 0, 'task 1, back with Ada: the lease of Bob, no longer assigned, is released');
});

t.test('CLAIM: a fixture load that retires the worker, deactivates the client or its sponsor, or takes tasks:update away, releases the leases it held', async (t) => {
  const retire = (fixture: FixtureShape) => {
    const bob = fixture.staff.find((row) => row['id'] === 12) as Record<string, unknown>;
    return { staff: [{ ...bob, isActive: false }] };
  };
  const revokeInFile = (fixture: FixtureShape) => {
    const client = fixture.clients.find((row) => row['id'] === 103) as Record<string, unknown>;
    return { clients: [{ ...client, isActive: false }] };
  };
  const retireSponsor = (fixture: FixtureShape) => {
    const grace = fixture.staff.find((row) => row['id'] === 11) as Record<string, unknown>;
    return { staff: [{ ...grace, isActive: false }] };
  };
  const dropUpdateScope = (fixture: FixtureShape) => {
    const client = fixture.clients.find((row) => row['id'] === 103) as Record<string, unknown>;
    return { clients: [{ ...client, scopes: ['tasks:read'] }] };
  };
  for (const [label, change] of [
    ['worker retired', retire], ['client deactivated', revokeInFile], ['sponsor retired', retireSponsor], ['tasks:update taken away', dropUpdateScope],
  ] as const) {
    const h = world();
    t.equal((await claim(h, 4, { token: TOKENS.bob })).status, 200, `${label}: Bob leases task 4`);
    loadFixture(h.db, change(worldFixture()), { now: h.clock.now() });
    t.equal(liveLeases(h, 4), 0, `${label}: the lease is released`);
  }
  const h = world();
  t.equal((await claim(h, 4, { token: TOKENS.bob })).status, 200);
  loadFixture(h.db, { staff: [baseFixture().staff.find((row) => row['id'] === 12) as Record<string, unknown>] }, { now: h.clock.now() });
  t.equal(liveLeases(h, 4), 1, 'a load that leaves the holder able to act keeps the lease');
});

t.test('CLAIM: revoking a client releases its live leases, so the task is free at once and its ETag moves on', async (t) => {
  const h = world();
  const before = await etagOf(h, 11);
  const clients = adminClients(h.db, { clock: h.clock });
  t.strictSame(clients.revoke(100).releasedLeases, 1, "ada-bot's lease on task 11 is released");
  t.equal(liveLeases(h, 11), 0);
  t.not(await etagOf(h, 11, TWIN), before, 'a release is a change of the task');
  t.equal((await claim(h, 11, { token: TWIN, readAs: TWIN })).status, 200, "Ada's other client claims it at once");
  t.strictSame(clients.revoke(100).releasedLeases, 0, 'revoking again releases nothing');
  t.strictSame(clients.revoke(103).releasedLeases, 2, "Bob's seeded leases on tasks 23 and 24");
});

t.test('RENEW: the body token extends the lease to now + 15 min and keeps the token', async (t) => {
  const h = world();
  t.equal((await lease(h, 'renew', 11, { token: LEASE_11 })).status, 200, 'a seeded lease renews too');
  const first = await claim(h, 1);
  h.clock.advance(10 * MINUTE + 7);
  const renewed = await lease(h, 'renew', 1, { token: first.json.token });
  t.equal(renewed.status, 200);
  t.strictSame(Object.keys(renewed.json).sort(), ['expiresUtc', 'token']);
  t.equal(renewed.json.token, first.json.token, 'same token');
  t.equal(renewed.json.expiresUtc, new Date(h.clock.now() + LEASE_MS).toISOString(), 'now + 15 min, not old expiry + 15 min');
  h.clock.advance(14 * MINUTE);
  expectProblem(t, await claim(h, 1, { token: TWIN }), 'task_claimed', 'still live past the original expiry');
  const upper = await lease(h, 'renew', 1, { token: String(first.json.token).toUpperCase() });
  t.equal(upper.status, 200, 'a UUID is case-insensitive');
  t.equal(upper.json.token, first.json.token, 'the token is answered as issued');
});

t.test('RENEW/RELEASE: a missing, null, all-zero or malformed token is 400 validation_failed', async (t) => {
  const h = world();
  for (const action of ['renew', 'release'] as const) {
    for (const [label, body] of [
      ['no body', undefined], ['{}', {}], ['null token', { token: null }], ['all-zero', { token: ZERO_UUID }],
      ['malformed', { token: 'abc' }], ['number', { token: 123 }], ['braced', { token: `{${LEASE_11}}` }],
      ['no dashes', { token: LEASE_11.replaceAll('-', '') }], ['extra member', { token: LEASE_11, x: 1 }],
    ] as const) {
      expectProblem(t, await lease(h, action, 11, body), 'validation_failed', `${action}: ${label}`);
    }
  }
  t.equal(liveLeases(h, 11), 1, 'the lease is untouched');
});

t.test('RENEW/RELEASE: an unknown, expired, released or another lease\'s token, or the right token from another client, is 409 claim_expired', async (t) => {
  const h = world();
  const ada1 = await claim(h, 1);
  t.equal(ada1.status, 200);
  const ada4 = await claim(h, 4);
  t.equal(ada4.status, 200);
  for (const action of ['renew', 'release'] as const) {
    expectProblem(t, await lease(h, action, 11, { token: randomUUID() }), 'claim_expired', `${action}: unknown token`);
    expectProblem(t, await lease(h, action, 11, { token: ada1.json.token }), 'claim_expired', `${action}: the token of another task's lease`);
    expectProblem(t, await lease(h, action, 4, { token: ada4.json.token }, TOKENS.bob), 'claim_expired', `${action}: the right token from Bob`);
    expectProblem(t, await lease(h, action, 4, { token: ada4.json.token }, TWIN), 'claim_expired', `${action}: the right token from another client of the same resource`);
  }
  t.equal(liveLeases(h, 4), 1, 'the refused calls left the lease alone');

  t.equal((await lease(h, 'release', 1, { token: ada1.json.token })).status, 200);
  expectProblem(t, await lease(h, 'renew', 1, { token: ada1.json.token }), 'claim_expired', 'renew: released token');
  expectProblem(t, await lease(h, 'release', 1, { token: ada1.json.token }), 'claim_expired', 'release: released token');

  h.clock.set('2026-11-16T10:10:00.000Z');
  expectProblem(t, await lease(h, 'renew', 11, { token: LEASE_11 }), 'claim_expired', 'renew: expired token (expiresUtc reached)');
  expectProblem(t, await lease(h, 'release', 11, { token: LEASE_11 }), 'claim_expired', 'release: expired token');
});

t.test('RELEASE: answers {released: true, releasedUtc: now} and the task is offered again in /tasks/available', async (t) => {
  const h = world();
  const before = (await h.call('GET', `${API}/tasks/available`)).json as { id: number }[];
  t.notOk(before.some((task) => task.id === 11), 'a leased task is not offered');
  h.clock.set('2026-11-16T10:05:30.250Z');
  const released = await lease(h, 'release', 11, { token: LEASE_11 });
  t.equal(released.status, 200);
  t.strictSame(released.json, { released: true, releasedUtc: '2026-11-16T10:05:30.250Z' }, 'exactly released and releasedUtc, no token');
  const row = h.db.prepare('SELECT released_utc AS r FROM claims WHERE token = ?').get(LEASE_11) as { r: number };
  t.equal(row.r, h.clock.now());
  const after = (await h.call('GET', `${API}/tasks/available`)).json as { id: number }[];
  t.ok(after.some((task) => task.id === 11), 'offered again');
});

t.test('CLAIM: a released token is never reusable, not even once the task is claimed again', async (t) => {
  const h = world();
  t.equal((await lease(h, 'release', 11, { token: LEASE_11 })).status, 200);
  const noteWith = async (token: string) =>
    h.call('POST', `${API}/tasks/11/notes`, { headers: { 'if-match': await etagOf(h, 11), 'x-task-claim': token }, body: { text: 'x' } });
  expectProblem(t, await noteWith(LEASE_11), 'claim_expired', 'X-Task-Claim with the released token, no live lease');
  const next = await claim(h, 11);
  t.equal(next.status, 200);
  expectProblem(t, await lease(h, 'renew', 11, { token: LEASE_11 }), 'claim_expired', 'renew with the released token');
  expectProblem(t, await lease(h, 'release', 11, { token: LEASE_11 }), 'claim_expired', 'release with the released token');
  expectProblem(t, await noteWith(LEASE_11), 'task_claimed', 'X-Task-Claim with the released token under the new lease');
  t.equal((await noteWith(next.json.token)).status, 204, 'the new token works');
});

t.test('CLAIM: leases are deleted by later writes a day after they expire; a deleted lease\'s token is answered as an expired one\'s', async (t) => {
  const h = world();
  const taken = await claim(h, 1);
  t.equal(taken.status, 200);
  const { token } = taken.json;
  const rows = () => h.db.prepare('SELECT token FROM claims ORDER BY id').pluck().all() as string[];
  t.equal(rows().length, 4, 'the seeded leases (ending 10:10 and twice 10:30) and the new one (ending 10:15)');
  h.clock.advance(24 * 60 * MINUTE + LEASE_MS);
  t.equal((await claim(h, 4)).status, 200, 'a write a day and 15 minutes on');
  const left = rows();
  t.notOk(left.includes(token), 'the lease that ended at 10:15 a day ago is gone');
  t.notOk(left.includes(LEASE_11), 'and so is the one that ended at 10:10');
  t.equal(left.length, 3, 'the two that ended at 10:30, less than a day ago, stay, with the new lease');
  expectProblem(t, await lease(h, 'renew', 1, { token }), 'claim_expired', 'renewing with a deleted lease\'s token');
  expectProblem(t, await h.call('PATCH', `${API}/tasks/1`, {
    headers: { 'if-match': await etagOf(h, 1), 'x-task-claim': token }, body: {},
  }), 'claim_expired', 'X-Task-Claim with a deleted lease\'s token');
});
