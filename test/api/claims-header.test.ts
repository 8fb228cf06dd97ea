import t from 'tap';
import { randomUUID } from 'node:crypto';
import type { Harness } from '../helpers/service.js';
import { baseFixture, TOKENS, TWIN, withTwin } from '../helpers/fixture.js';
import { adaWorld, API, etagOf, LEASE_11, workspaceVersion, ZERO_UUID } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';

/** X-Task-Claim on task writes other than claim, renew and release (contract 2, step 10 of contract 1). */

function world(): Harness {
  return adaWorld({ fixture: withTwin(baseFixture(), ['tasks:read', 'tasks:update', 'tasks:time', 'tasks:notes']), rateLimit: 10_000 });
}

let keys = 0;
async function claim(h: Harness, id: number, token?: string): Promise<string> {
  const response = await h.call('POST', `${API}/tasks/${id}/claim`, {
    headers: { 'if-match': await etagOf(h, id), 'idempotency-key': `claim-${(keys += 1)}` },
    ...(token === undefined ? {} : { token }),
  });
  if (response.status !== 200) throw new Error(`claim ${id}: ${response.status}`);
  return response.json.token as string;
}

async function release(h: Harness, id: number, leaseToken: string): Promise<void> {
  const response = await h.call('POST', `${API}/tasks/${id}/claim/release`, {
    headers: { 'if-match': await etagOf(h, id), 'idempotency-key': `release-${(keys += 1)}` },
    body: { token: leaseToken },
  });
  if (response.status !== 200) throw new Error(`release ${id}: ${response.status}`);
}

type Write = 'note' | 'PATCH' | 'effort';
const WRITES: Write[] = ['note', 'PATCH', 'effort'];

/** One task write with an optional X-Task-Claim header, always with the current If-Match. */
async function write(h: Harness, kind: Write, id: number, claimHeader: string | undefined, options: { token?: string; key?: string } = {}) {
  const headers: Record<string, string> = { 'if-match': await etagOf(h, id) };
  if (claimHeader !== undefined) headers['x-task-claim'] = claimHeader;
  if (options.key !== undefined) headers['idempotency-key'] = options.key;
  const token = options.token === undefined ? {} : { token: options.token };
  if (kind === 'note') return h.call('POST', `${API}/tasks/${id}/notes`, { headers, body: { text: 'a note' }, ...token });
  if (kind === 'PATCH') return h.call('PATCH', `${API}/tasks/${id}`, { headers, body: { sequence: 77 }, ...token });
  return h.call('PUT', `${API}/tasks/${id}/actual-effort`, {
    headers, body: { actualIntervals: [{ staffMemberId: 10, start: '2026-11-16T08:00:00', end: '2026-11-16T09:00:00' }] }, ...token,
  });
}

t.test('X-TASK-CLAIM: with a live lease, a missing header is 409 task_claimed', async (t) => {
  const h = world();
  const before = workspaceVersion(h);
  for (const kind of WRITES) expectProblem(t, await write(h, kind, 11, undefined), 'task_claimed', kind);
  t.equal(workspaceVersion(h), before, 'nothing written');
});

t.test('X-TASK-CLAIM: with a live lease, a token that is not the live lease\'s is 409 task_claimed', async (t) => {
  const h = world();
  const otherLease = await claim(h, 1);
  for (const kind of WRITES) {
    expectProblem(t, await write(h, kind, 11, randomUUID()), 'task_claimed', `${kind}: unknown token`);
    expectProblem(t, await write(h, kind, 11, otherLease), 'task_claimed', `${kind}: the caller's lease on another task`);
  }
});

t.test('X-TASK-CLAIM: the right token sent by another client (even of the same resource) is 409 task_claimed', async (t) => {
  const h = world();
  for (const kind of WRITES) {
    expectProblem(t, await write(h, kind, 11, LEASE_11, { token: TWIN }), 'task_claimed', `${kind}: ada-twin with ada-bot's token`);
  }
  const bobLease = await claim(h, 4, TOKENS.bob);
  expectProblem(t, await write(h, 'note', 4, bobLease), 'task_claimed', 'Ada with Bob\'s token on the shared task');
  t.equal((await write(h, 'note', 4, bobLease, { token: TOKENS.bob })).status, 204, 'Bob with his own token');
});

t.test('X-TASK-CLAIM: with a live lease, the holder\'s own token (any case) lets the write through', async (t) => {
  const h = world();
  for (const kind of WRITES) t.equal((await write(h, kind, 11, LEASE_11)).status, 204, kind);
  t.equal((await write(h, 'note', 11, LEASE_11.toUpperCase())).status, 204, 'upper case');
  const texts = h.db.prepare('SELECT count(*) AS n FROM notes WHERE task_id = 11').get() as { n: number };
  t.equal(texts.n, 2);
});

t.test('X-TASK-CLAIM: with no live lease, no header is fine', async (t) => {
  const h = world();
  for (const kind of WRITES) t.equal((await write(h, kind, 1, undefined)).status, 204, kind);
});

t.test('X-TASK-CLAIM: with no live lease, any token sent (unknown, expired, released) is 409 claim_expired', async (t) => {
  const h = world();
  const released = await claim(h, 3);
  await release(h, 3, released);
  for (const kind of WRITES) {
    expectProblem(t, await write(h, kind, 1, randomUUID()), 'claim_expired', `${kind}: unknown token`);
    expectProblem(t, await write(h, kind, 3, released), 'claim_expired', `${kind}: released token`);
  }
  h.clock.set('2026-11-16T10:10:00.000Z');
  for (const kind of WRITES) expectProblem(t, await write(h, kind, 11, LEASE_11), 'claim_expired', `${kind}: expired token`);
  expectProblem(t, await write(h, 'note', 11, LEASE_11, { token: TWIN }), 'claim_expired', 'expired token from another client');
});

t.test('X-TASK-CLAIM: a malformed or all-zero header is 400 validation_failed, with or without a live lease', async (t) => {
  const h = world();
  const before = workspaceVersion(h);
  for (const bad of ['nope', ZERO_UUID, LEASE_11.replaceAll('-', ''), `"${LEASE_11}"`, `${LEASE_11}x`]) {
    for (const kind of WRITES) {
      expectProblem(t, await write(h, kind, 11, bad), 'validation_failed', `${kind} under a lease: ${bad}`);
      expectProblem(t, await write(h, kind, 1, bad), 'validation_failed', `${kind} without a lease: ${bad}`);
    }
  }
  t.equal(workspaceVersion(h), before);
});

t.test('X-TASK-CLAIM: a keyed replay is answered before the claim header is looked at', async (t) => {
  const h = world();
  const etag = await etagOf(h, 11);
  const first = await h.call('POST', `${API}/tasks/11/notes`, { headers: { 'if-match': etag, 'x-task-claim': LEASE_11, 'idempotency-key': 'n' }, body: { text: 'under lease' } });
  t.equal(first.status, 204);
  await release(h, 11, LEASE_11);
  const replay = await h.call('POST', `${API}/tasks/11/notes`, { headers: { 'if-match': etag, 'x-task-claim': LEASE_11, 'idempotency-key': 'n' }, body: { text: 'under lease' } });
  t.equal(replay.status, 204);
  t.equal(replay.headers['idempotent-replayed'], 'true', 'replayed although the token is released by now');
});
