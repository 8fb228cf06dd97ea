import t from 'tap';
import { createHash } from 'node:crypto';
import { cachedAuthenticator } from '../../lib/auth/authenticate.js';
import { mutationRunner } from '../../lib/http/write-runner.js';
import { requestHeaders } from '../../lib/http/headers.js';
import { OPERATIONS } from '../../lib/http/operations.js';
import { claimStatements } from '../../lib/store/claims.js';
import { clientStatements } from '../../lib/store/clients.js';
import { organisationStatements } from '../../lib/store/organisations.js';
import { PURGE_BATCH } from '../../lib/store/purge.js';
import { receiptStatements } from '../../lib/store/receipts.js';
import type { Harness } from '../helpers/service.js';
import { ALL_SCOPES, baseFixture, TOKENS, TWIN, withTwin } from '../helpers/fixture.js';
import { adaWorld, API, etagOf, LEASE_11, REMAINING_WARNING, workspaceVersion } from '../helpers/api.js';
import { expectProblem } from '../helpers/expect-problem.js';

/** Idempotency-Key receipts (contract 3, spec "Task write headers" and Limits). */

const DAY_MS = 24 * 60 * 60 * 1000;
const KEY_CHARS = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-';

/** The shared world plus a second full-scope client of Ada's resource (id 109). */
function world(): Harness {
  return adaWorld({ fixture: withTwin(baseFixture(), ALL_SCOPES), rateLimit: 10_000 });
}

function notesOn(h: Harness, taskId: number): string[] {
  return (h.db.prepare('SELECT text FROM notes WHERE task_id = ? ORDER BY id').all(taskId) as { text: string }[]).map((row) => row.text);
}

function receiptCount(h: Harness): number {
  return (h.db.prepare('SELECT count(*) AS n FROM idempotency_receipts').get() as { n: number }).n;
}

async function note(h: Harness, taskId: number, text: string, key: string | undefined, extra: { token?: string; ifMatch?: string | null; headers?: Record<string, string> } = {}) {
  const headers: Record<string, string> = { ...extra.headers };
  if (key !== undefined) headers['idempotency-key'] = key;
  const ifMatch = extra.ifMatch === undefined ? await etagOf(h, taskId, extra.token) : extra.ifMatch;
  if (ifMatch !== null) headers['if-match'] = ifMatch;
  return h.call('POST', `${API}/tasks/${taskId}/notes`, { headers, body: { text }, ...(extra.token === undefined ? {} : { token: extra.token }) });
}

const INTERVAL = { staffMemberId: 10, start: '2026-11-16T08:00:00', end: '2026-11-16T09:00:00' };

t.test('IDEMPOTENCY: the key is required on claim, renew and release (422 idempotency_key_required when missing)', async (t) => {
  const h = world();
  const lease = LEASE_11;
  expectProblem(t, await h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': await etagOf(h, 1) } }), 'idempotency_key_required', 'claim');
  expectProblem(t, await h.call('POST', `${API}/tasks/11/claim/renew`, { headers: { 'if-match': await etagOf(h, 11) }, body: { token: lease } }), 'idempotency_key_required', 'renew');
  expectProblem(t, await h.call('POST', `${API}/tasks/11/claim/release`, { headers: { 'if-match': await etagOf(h, 11) }, body: { token: lease } }), 'idempotency_key_required', 'release');
});

t.test('IDEMPOTENCY: the key is optional on PATCH, notes and effort', async (t) => {
  const h = world();
  t.equal((await h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': await etagOf(h, 1) }, body: { sequence: 9 } })).status, 204, 'PATCH');
  t.equal((await note(h, 1, 'no key', undefined)).status, 204, 'note');
  t.equal((await h.call('PUT', `${API}/tasks/1/actual-effort`, { headers: { 'if-match': await etagOf(h, 1) }, body: { actualIntervals: [INTERVAL] } })).status, 204, 'effort');
  t.equal(receiptCount(h), 0, 'nothing to remember without a key');
});

t.test('IDEMPOTENCY: a malformed key (empty, 101 characters, "a b", non-ASCII) is 422 on every write', async (t) => {
  const h = world();
  const bad = ['', KEY_CHARS.repeat(2).slice(0, 101), 'a b', 'ключ', 'a/b'];
  const lease = LEASE_11;
  for (const key of bad) {
    const label = JSON.stringify(key);
    const patch = await h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': key }, body: { sequence: 9 } });
    expectProblem(t, patch, 'idempotency_key_required', `PATCH ${label}`);
    expectProblem(t, await note(h, 1, 'x', key), 'idempotency_key_required', `note ${label}`);
    const effort = await h.call('PUT', `${API}/tasks/1/actual-effort`, { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': key }, body: { actualIntervals: [] } });
    expectProblem(t, effort, 'idempotency_key_required', `effort ${label}`);
    const claim = await h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': key } });
    expectProblem(t, claim, 'idempotency_key_required', `claim ${label}`);
    for (const action of ['renew', 'release']) {
      const response = await h.call('POST', `${API}/tasks/11/claim/${action}`, { headers: { 'if-match': await etagOf(h, 11), 'idempotency-key': key }, body: { token: lease } });
      expectProblem(t, response, 'idempotency_key_required', `${action} ${label}`);
    }
  }
  t.equal(notesOn(h, 1).length, 0);
});

t.test('IDEMPOTENCY: a key of 100 characters of [a-zA-Z0-9._:-] is accepted', async (t) => {
  const h = world();
  const key = KEY_CHARS.repeat(2).slice(0, 100);
  t.equal(key.length, 100);
  t.equal((await note(h, 1, 'long key', key)).status, 204, 'note');
  const claim = await h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': key.split('').reverse().join('') } });
  t.equal(claim.status, 200, 'claim');
});

t.test('IDEMPOTENCY: a replay returns the stored status, body and ETag with Idempotent-Replayed: true, and applies nothing twice', async (t) => {
  const h = world();
  const first = await note(h, 1, 'once', 'note-1');
  t.equal(first.status, 204);
  t.equal(first.headers['idempotent-replayed'], undefined, 'a first answer is not marked replayed');
  const version = workspaceVersion(h);
  const replay = await note(h, 1, 'once', 'note-1');
  t.equal(replay.status, 204);
  t.equal(replay.headers['idempotent-replayed'], 'true');
  t.equal(replay.headers['etag'], first.headers['etag'], 'the stored ETag');
  t.equal(replay.text, undefined, 'no body, as the original');
  t.strictSame(notesOn(h, 1), ['once'], 'the note exists once');
  t.equal(workspaceVersion(h), version, 'a replay does not bump the version');
});

t.test('IDEMPOTENCY: a replayed claim returns the original lease, even after it expired, and creates no second lease', async (t) => {
  const h = world();
  const etag = await etagOf(h, 1);
  const first = await h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': etag, 'idempotency-key': 'claim-1' } });
  t.equal(first.status, 200);
  h.clock.advance(16 * 60 * 1000);
  const replay = await h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': etag, 'idempotency-key': 'claim-1' } });
  t.equal(replay.status, 200);
  t.equal(replay.headers['idempotent-replayed'], 'true');
  t.strictSame(replay.json, first.json, 'same token and expiresUtc');
  t.equal(replay.headers['etag'], first.headers['etag']);
  t.equal(replay.headers['content-type'], 'application/json');
  t.ok(Date.parse(replay.json.expiresUtc) < h.clock.now(), 'the replayed lease has already expired');
  const rows = h.db.prepare('SELECT count(*) AS n FROM claims WHERE task_id = 1').get() as { n: number };
  t.equal(rows.n, 1, 'one lease row only');
});

t.test('IDEMPOTENCY: replays of renew, release and effort return their original outcome', async (t) => {
  const h = world();
  const lease = LEASE_11;
  const renewEtag = await etagOf(h, 11);
  const renew = await h.call('POST', `${API}/tasks/11/claim/renew`, { headers: { 'if-match': renewEtag, 'idempotency-key': 'r' }, body: { token: lease } });
  t.equal(renew.status, 200);
  h.clock.advance(60_000);
  const releaseEtag = await etagOf(h, 11);
  const release = await h.call('POST', `${API}/tasks/11/claim/release`, { headers: { 'if-match': releaseEtag, 'idempotency-key': 'x' }, body: { token: lease } });
  t.equal(release.status, 200);
  h.clock.advance(60_000);
  const renewAgain = await h.call('POST', `${API}/tasks/11/claim/renew`, { headers: { 'if-match': renewEtag, 'idempotency-key': 'r' }, body: { token: lease } });
  t.strictSame([renewAgain.status, renewAgain.json, renewAgain.headers['idempotent-replayed']], [200, renew.json, 'true'], 'renew replays although the lease is released now');
  const releaseAgain = await h.call('POST', `${API}/tasks/11/claim/release`, { headers: { 'if-match': releaseEtag, 'idempotency-key': 'x' }, body: { token: lease } });
  t.strictSame([releaseAgain.status, releaseAgain.json, releaseAgain.headers['idempotent-replayed']], [200, release.json, 'true'], 'release replays with the original releasedUtc');

  const effortEtag = await etagOf(h, 1);
  const effort = await h.call('PUT', `${API}/tasks/1/actual-effort`, { headers: { 'if-match': effortEtag, 'idempotency-key': 'e' }, body: { actualIntervals: [INTERVAL] } });
  t.equal(effort.status, 204);
  // A later replacement by the same client must survive a replay of the first one.
  const later = { ...INTERVAL, start: '2026-11-16T09:00:00', end: '2026-11-16T09:30:00' };
  t.equal((await h.call('PUT', `${API}/tasks/1/actual-effort`, { headers: { 'if-match': await etagOf(h, 1) }, body: { actualIntervals: [later] } })).status, 204);
  const effortAgain = await h.call('PUT', `${API}/tasks/1/actual-effort`, { headers: { 'if-match': effortEtag, 'idempotency-key': 'e' }, body: { actualIntervals: [INTERVAL] } });
  t.equal(effortAgain.headers['idempotent-replayed'], 'true');
  const intervals = (await h.call('GET', `${API}/tasks/1`)).json.actualIntervals;
  t.strictSame(intervals, [{ staffMemberId: 10, start: later.start, end: later.end }], 'the replay did not re-apply the first replacement');
});

t.test('IDEMPOTENCY: a replayed PATCH with remainingMinutes repeats the Warning header', async (t) => {
  const h = world();
  const etag = await etagOf(h, 1);
  const first = await h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': etag, 'idempotency-key': 'p' }, body: { remainingMinutes: 30 } });
  t.equal(first.status, 204);
  t.equal(first.headers['warning'], REMAINING_WARNING);
  const replay = await h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': etag, 'idempotency-key': 'p' }, body: { remainingMinutes: 30 } });
  t.equal(replay.status, 204);
  t.equal(replay.headers['warning'], REMAINING_WARNING);
  t.equal(replay.headers['etag'], first.headers['etag']);
  t.equal(replay.headers['idempotent-replayed'], 'true');
});

t.test('IDEMPOTENCY: a replay repeats the stored status and Location header (runner level: both come from the operation, the id from the use case)', async (t) => {
  const h = world();
  const runner = mutationRunner({
    db: h.db, receipts: receiptStatements(h.db), organisations: organisationStatements(h.db), claims: claimStatements(h.db),
    incomingRevision: () => undefined,
  });
  const principal = cachedAuthenticator(clientStatements(h.db))(`Bearer ${TOKENS.ada}`, 0, false);
  const operation = OPERATIONS.find((o) => o.operationId === 'createHumanRequest');
  if (operation === undefined) throw new Error('no createHumanRequest operation');
  let applied = 0;
  const request = (ifMatch: string) => ({
    principal, operation, method: 'POST', path: '/api/v1/tasks/1/human-requests', id: 1, now: h.clock.now(),
    headers: requestHeaders({ 'if-match': ifMatch, 'idempotency-key': 'loc' }), canonicalBody: '{"title":"Help"}', assertMemberScopes: () => undefined,
  });
  const apply = () => {
    applied += 1;
    return { body: { id: 500, originatingTaskId: 1 }, createdId: 500, changed: true };
  };
  const etag = await etagOf(h, 1);
  const first = await runner.run(request(etag), apply);
  t.equal(first.headers['location'], '/api/v1/human-requests/500');
  const replay = await runner.run(request(etag), apply);
  t.equal(replay.status, 201);
  t.equal(replay.headers['location'], '/api/v1/human-requests/500');
  t.equal(replay.headers['etag'], first.headers['etag']);
  t.equal(replay.headers['content-type'], 'application/json');
  t.equal(replay.body, first.body);
  t.equal(replay.headers['idempotent-replayed'], 'true');
  t.equal(applied, 1, 'the use case ran once');
});

t.test('IDEMPOTENCY: a replay after the ETag moved on (stale If-Match) still replays', async (t) => {
  const h = world();
  const etag = await etagOf(h, 1);
  t.equal((await note(h, 1, 'first', 'k1', { ifMatch: etag })).status, 204);
  t.equal((await note(h, 1, 'second', undefined)).status, 204);
  const replay = await note(h, 1, 'first', 'k1', { ifMatch: etag });
  t.equal(replay.status, 204);
  t.equal(replay.headers['idempotent-replayed'], 'true');
  t.strictSame(notesOn(h, 1), ['first', 'second']);
});

t.test('IDEMPOTENCY: a replay needs only a syntactically valid If-Match: another task\'s ETag or a version not reached yet replays, and is 412 on a first attempt', async (t) => {
  const h = world();
  t.equal((await note(h, 1, 'first', 'k1')).status, 204);
  for (const valid of [await etagOf(h, 2), '"task-1-plan-999999"']) {
    const replay = await note(h, 1, 'first', 'k1', { ifMatch: valid });
    t.equal(replay.status, 204, `${valid}: replayed`);
    t.equal(replay.headers['idempotent-replayed'], 'true', `${valid}: marked as a replay`);
    expectProblem(t, await note(h, 1, 'first', 'k2', { ifMatch: valid }), 'stale_update', `${valid}: a first attempt`);
  }
  t.strictSame(notesOn(h, 1), ['first']);
});

t.test('IDEMPOTENCY: a replay with a missing If-Match is 428, with a malformed one 412', async (t) => {
  const h = world();
  const etag = await etagOf(h, 1);
  t.equal((await note(h, 1, 'first', 'k1', { ifMatch: etag })).status, 204);
  expectProblem(t, await note(h, 1, 'first', 'k1', { ifMatch: null }), 'precondition_required', 'missing If-Match');
  for (const bad of ['*', 'W/' + etag, 'garbage']) {
    const response = await note(h, 1, 'first', 'k1', { ifMatch: bad });
    expectProblem(t, response, 'stale_update', `malformed If-Match ${bad}`);
    t.equal(response.headers['etag'], await etagOf(h, 1), 'with the current ETag');
  }
  t.strictSame(notesOn(h, 1), ['first']);
});

t.test('IDEMPOTENCY: object member order and whitespace are ignored recursively; arrays and number spelling are not', async (t) => {
  const h = world();
  const etag = await etagOf(h, 1);
  const send = (raw: string, key: string) =>
    h.call('PUT', `${API}/tasks/1/actual-effort`, { headers: { 'if-match': etag, 'idempotency-key': key, 'content-type': 'application/json' }, raw });
  const a = { staffMemberId: 10, start: '2026-11-16T07:00:00', end: '2026-11-16T07:30:00' };
  const b = { staffMemberId: 10, start: '2026-11-16T08:00:00', end: '2026-11-16T09:00:00' };
  t.equal((await send(JSON.stringify({ actualIntervals: [a, b] }), 'order')).status, 204);
  const reordered = `{\n  "actualIntervals" : [ {"end":"${a.end}", "start": "${a.start}","staffMemberId":10},\n\t{"start":"${b.start}","end":"${b.end}","staffMemberId" :10} ]\n}`;
  const replay = await send(reordered, 'order');
  t.equal(replay.status, 204);
  t.equal(replay.headers['idempotent-replayed'], 'true', 'members reordered at every depth, other whitespace: a replay');
  expectProblem(t, await send(JSON.stringify({ actualIntervals: [b, a] }), 'order'), 'idempotency_conflict', 'array order is kept');

  const patch = (raw: string) => h.call('PATCH', `${API}/tasks/3`, { headers: { 'if-match': '"task-3-plan-1"', 'idempotency-key': 'num', 'content-type': 'application/json' }, raw });
  const etag3 = await etagOf(h, 3);
  const first = await h.call('PATCH', `${API}/tasks/3`, { headers: { 'if-match': etag3, 'idempotency-key': 'num', 'content-type': 'application/json' }, raw: '{"sequence":1}' });
  t.equal(first.status, 204);
  expectProblem(t, await patch('{"sequence":1.0}'), 'idempotency_conflict', '1.0 is not 1');
  expectProblem(t, await patch('{"sequence":1e0}'), 'idempotency_conflict', '1e0 is not 1');
  t.equal((await patch('{ "sequence" : 1 }')).headers['idempotent-replayed'], 'true', 'whitespace around 1 is fine');
});

t.test('IDEMPOTENCY: the same key on another operation or path, or with a changed body, is 409 idempotency_conflict', async (t) => {
  const h = world();
  t.equal((await note(h, 1, 'original', 'k')).status, 204);
  const version = workspaceVersion(h);
  expectProblem(t, await note(h, 1, 'changed', 'k'), 'idempotency_conflict', 'changed body');
  expectProblem(t, await note(h, 3, 'original', 'k'), 'idempotency_conflict', 'another task');
  expectProblem(t, await h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': 'k' }, body: { text: 'original' } }), 'validation_failed', 'PATCH with a note body is a shape error first');
  expectProblem(t, await h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': 'k' }, body: { sequence: 1 } }), 'idempotency_conflict', 'another operation');
  expectProblem(t, await h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': 'k' } }), 'idempotency_conflict', 'claim with a note key');
  expectProblem(t, await note(h, 1, 'changed', 'k', { ifMatch: null }), 'idempotency_conflict', 'the conflict is found before If-Match is looked at');
  t.strictSame(notesOn(h, 1), ['original']);
  t.strictSame(notesOn(h, 3), []);
  t.equal(workspaceVersion(h), version);
});

t.test('IDEMPOTENCY: the fingerprint names the target, not its spelling: /tasks/%31 replays a write to /tasks/1', async (t) => {
  const h = world();
  const etag = await etagOf(h, 1);
  const first = await h.call('POST', `${API}/tasks/1/notes`, { headers: { 'if-match': etag, 'idempotency-key': 'spelled' }, body: { text: 'once' } });
  t.equal(first.status, 204);
  const respelled = await h.call('POST', `${API}/tasks/%31/notes`, { headers: { 'if-match': etag, 'idempotency-key': 'spelled' }, body: { text: 'once' } });
  t.equal(respelled.status, 204);
  t.equal(respelled.headers['idempotent-replayed'], 'true', 'the same operation on the same task');
  t.strictSame(notesOn(h, 1), ['once'], 'written once');
  expectProblem(t, await h.call('POST', `${API}/tasks/%33/notes`, { headers: { 'if-match': await etagOf(h, 3), 'idempotency-key': 'spelled' }, body: { text: 'once' } }), 'idempotency_conflict', 'task 3 spelled %33 is still another task');
});

t.test('IDEMPOTENCY: keys are scoped per client and per organisation', async (t) => {
  const h = world();
  t.equal((await note(h, 1, 'from ada-bot', 'shared')).status, 204);
  const twin = await note(h, 1, 'from ada-twin', 'shared', { token: TWIN });
  t.equal(twin.status, 204, 'another client of the same organisation and resource: independent');
  t.equal(twin.headers['idempotent-replayed'], undefined);
  const globex = await note(h, 90, 'from gus-bot', 'shared', { token: TOKENS.otherOrg });
  t.equal(globex.status, 204, 'another organisation: independent');
  t.equal(globex.headers['idempotent-replayed'], undefined);
  t.strictSame(notesOn(h, 1), ['from ada-bot', 'from ada-twin']);
  t.strictSame(notesOn(h, 90), ['from gus-bot']);
  const adaReplay = await note(h, 1, 'from ada-bot', 'shared');
  t.equal(adaReplay.headers['idempotent-replayed'], 'true', 'each client keeps its own receipt');
  const twinReplay = await note(h, 1, 'from ada-twin', 'shared', { token: TWIN });
  t.equal(twinReplay.headers['idempotent-replayed'], 'true');
  t.equal(receiptCount(h), 3);
});

t.test('IDEMPOTENCY: a replay re-checks authentication (revoked client gives 401)', async (t) => {
  const h = world();
  t.equal((await note(h, 1, 'x', 'k')).status, 204);
  const etag = await etagOf(h, 1);
  h.db.prepare('UPDATE api_clients SET is_active = 0 WHERE id = 100').run();
  const replay = await note(h, 1, 'x', 'k', { ifMatch: etag });
  expectProblem(t, replay, 'authentication_failed', 'revoked');
  t.equal(replay.headers['www-authenticate'], 'Bearer');
});

t.test('IDEMPOTENCY: a replay re-checks the scope (403 permission_denied)', async (t) => {
  const h = world();
  t.equal((await note(h, 1, 'x', 'k')).status, 204);
  const etag = await etagOf(h, 1);
  h.db.prepare("DELETE FROM api_client_scopes WHERE client_id = 100 AND scope = 'tasks:notes'").run();
  expectProblem(t, await note(h, 1, 'x', 'k', { ifMatch: etag }), 'permission_denied', 'scope withdrawn');
});

t.test('IDEMPOTENCY: a replay re-checks ownership (task reassigned away gives 403 task_not_owned)', async (t) => {
  const h = world();
  const etag = await etagOf(h, 1);
  const claim = await h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': etag, 'idempotency-key': 'c' } });
  t.equal(claim.status, 200);
  h.db.prepare('UPDATE task_assignments SET staff_id = 12 WHERE task_id = 1 AND staff_id = 10').run();
  expectProblem(t, await h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': etag, 'idempotency-key': 'c' } }), 'task_not_owned', 'reassigned');
});

t.test('IDEMPOTENCY: only 2xx outcomes are stored: after a 409 or 422 the same key with a fixed request succeeds', async (t) => {
  const h = world();
  const lease = LEASE_11;
  expectProblem(t, await note(h, 11, 'under a lease', 'k'), 'task_claimed', 'no X-Task-Claim under a live lease');
  t.equal(receiptCount(h), 0, 'no receipt for the 409');
  const fixed = await note(h, 11, 'under a lease', 'k', { headers: { 'x-task-claim': lease } });
  t.equal(fixed.status, 204, 'the same key and body with the claim header now succeeds');
  t.equal(fixed.headers['idempotent-replayed'], undefined);

  expectProblem(t, await note(h, 1, '   ', 'k2'), 'invalid_field', 'blank note');
  const fixedBody = await note(h, 1, 'not blank', 'k2');
  t.equal(fixedBody.status, 204, 'a different body is no conflict: the 422 was not stored');
  expectProblem(t, await h.call('POST', `${API}/tasks/6/claim`, { headers: { 'if-match': await etagOf(h, 6), 'idempotency-key': 'k3' } }), 'task_completed');
  t.equal((await h.call('POST', `${API}/tasks/1/claim`, { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': 'k3' } })).status, 200, 'another path after a 409');
  t.equal(receiptCount(h), 3);
});

t.test('IDEMPOTENCY: receipts expire after 24 hours; the same key with another body is then accepted', async (t) => {
  const h = world();
  t.equal((await note(h, 1, 'day one', 'k')).status, 204);
  h.clock.advance(DAY_MS - 1);
  expectProblem(t, await note(h, 1, 'day two', 'k'), 'idempotency_conflict', 'still remembered 1 ms before 24 h');
  h.clock.advance(2);
  const later = await note(h, 1, 'day two', 'k');
  t.equal(later.status, 204, '24 h + 1 ms: a new request');
  t.equal(later.headers['idempotent-replayed'], undefined);
  t.strictSame(notesOn(h, 1), ['day one', 'day two']);
  const replay = await note(h, 1, 'day two', 'k');
  t.equal(replay.headers['idempotent-replayed'], 'true', 'the new receipt replays');
});

t.test('IDEMPOTENCY: a backlog of expired receipts is purged a batch per write, never in one long delete', async (t) => {
  const h = world();
  const insert = h.db.prepare(`INSERT INTO idempotency_receipts (organisation_id, client_id, key, fingerprint, status, headers,
    body, created_utc, expires_utc) VALUES (1, 100, ?, 'f', 204, '{}', NULL, 0, 1)`);
  h.db.transaction(() => {
    for (let i = 0; i < 2.5 * PURGE_BATCH; i += 1) insert.run(`backlog-${i}`);
  })();
  for (const left of [1.5 * PURGE_BATCH, 0.5 * PURGE_BATCH, 0]) {
    t.equal((await note(h, 3, `write ${left}`, undefined)).status, 204);
    t.equal(receiptCount(h), left, `a write purged one batch: ${left} left`);
  }
  insert.run('expired-later');
  t.equal((await note(h, 3, 'within the minute', undefined)).status, 204);
  t.equal(receiptCount(h), 1, 'the backlog gone, purging waits for its minute again');
  h.clock.advance(60_000);
  t.equal((await note(h, 3, 'a minute on', undefined)).status, 204);
  t.equal(receiptCount(h), 0);
});

t.test('IDEMPOTENCY: expired receipts are purged from the table by a later write, with no scheduled job', async (t) => {
  const h = world();
  t.equal((await note(h, 1, 'a', 'old-1')).status, 204);
  t.equal((await note(h, 90, 'b', 'old-2', { token: TOKENS.otherOrg })).status, 204);
  t.equal(receiptCount(h), 2);
  h.clock.advance(DAY_MS + 1);
  await h.call('GET', `${API}/tasks/1`);
  t.equal(receiptCount(h), 2, 'a read purges nothing');
  t.equal((await note(h, 3, 'a later write without a key', undefined)).status, 204);
  t.equal(receiptCount(h), 0, 'every expired receipt is gone, of any client or organisation');
  t.equal((await note(h, 3, 'keyed', 'new')).status, 204);
  t.strictSame(h.db.prepare('SELECT key FROM idempotency_receipts').all(), [{ key: 'new' }]);
});

t.test('IDEMPOTENCY: a receipt keeps a SHA-256 digest of the request, not its body, and still tells bodies apart', async (t) => {
  const h = world();
  const long = 'x'.repeat(20_000);
  t.equal((await note(h, 1, long, 'long')).status, 204);
  const stored = h.db.prepare("SELECT fingerprint FROM idempotency_receipts WHERE key = 'long'").pluck().get() as string;
  t.equal(stored, createHash('sha256').update(`POST /api/v1/tasks/1/notes\n{"text":"${long}"}`).digest('hex'), 'the digest of method, path and canonical body');
  t.equal((await note(h, 1, long, 'long')).headers['idempotent-replayed'], 'true', 'the same request replays');
  expectProblem(t, await note(h, 1, `${long.slice(1)}y`, 'long'), 'idempotency_conflict', 'another body of the same length does not');
});

t.test('IDEMPOTENCY: a receipt stored before digests, holding the request text, still replays and still refuses another body', async (t) => {
  const h = world();
  // As the previous release stored it, within the day its receipts live after an upgrade.
  h.db.prepare(`INSERT INTO idempotency_receipts (organisation_id, client_id, key, fingerprint, status, headers, body, created_utc, expires_utc)
    VALUES (1, 100, 'before', ?, 204, '{}', NULL, 0, ?)`).run('POST /api/v1/tasks/1/notes\n{"text":"stored as text"}', h.clock.now() + DAY_MS);
  const replay = await note(h, 1, 'stored as text', 'before');
  t.equal(replay.status, 204);
  t.equal(replay.headers['idempotent-replayed'], 'true');
  t.strictSame(notesOn(h, 1).filter((text) => text === 'stored as text'), [], 'nothing written again');
  expectProblem(t, await note(h, 1, 'another text', 'before'), 'idempotency_conflict');
});
