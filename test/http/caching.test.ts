import t from 'tap';
import { addAssistance, adaWorld, API, etagOf, patchTask } from '../helpers/api.js';
import { TOKENS } from '../helpers/fixture.js';

/**
 * What HTTP caches may keep (README, Behaviour notes: Caching). The test harness checks every
 * answer's Cache-Control against the OpenAPI document; these tests pin which answer gets which.
 */

const REVALIDATE = 'private, no-cache';

t.test('CACHING: GET /tasks/{id} gives Cache-Control private, no-cache and Vary: Authorization, on its 200 and its 304', async (t) => {
  const h = adaWorld();
  const full = await h.call('GET', `${API}/tasks/1`);
  t.equal(full.status, 200);
  t.equal(full.headers['cache-control'], REVALIDATE, '200: a cache must revalidate before each use');
  t.equal(full.headers['vary'], 'Authorization', '200: varies with the credential');
  const again = await h.call('GET', `${API}/tasks/1`, { headers: { 'if-none-match': full.headers['etag']! } });
  t.equal(again.status, 304);
  t.equal(again.headers['cache-control'], REVALIDATE, '304: the same policy, for the cache to refresh its copy');
  t.equal(again.headers['vary'], 'Authorization', '304: the same Vary');
});

t.test('CACHING: the same task ETag comes with another body for a client without human-requests:read, which is why it varies with Authorization', async (t) => {
  const h = adaWorld();
  addAssistance(h, { stageId: 50, taskId: 1, details: 'confidential details' });
  const full = await h.call('GET', `${API}/tasks/1`);
  const reader = await h.call('GET', `${API}/tasks/1`, { token: TOKENS.readOnly });
  t.equal(reader.headers['etag'], full.headers['etag'], 'one ETag');
  t.not(reader.text, full.text, 'two bodies');
  t.equal(reader.headers['vary'], 'Authorization');
});

t.test('CACHING: every other answer says no-store: lists, identity, the OpenAPI document, writes, replays and every problem', async (t) => {
  const h = adaWorld();
  const answers: [string, { status: number; headers: Record<string, string> }][] = [
    ['GET /identity', await h.call('GET', `${API}/identity`)],
    ['GET /tasks/available', await h.call('GET', `${API}/tasks/available`)],
    ['GET /tasks/waiting', await h.call('GET', `${API}/tasks/waiting`)],
    ['GET /incoming', await h.call('GET', `${API}/incoming`)],
    ['GET /openapi.json', await h.call('GET', `${API}/openapi.json`, { token: null })],
    ['PATCH', await patchTask(h, 1, { title: 'Renamed' })],
  ];
  const claim = { headers: { 'if-match': await etagOf(h, 1), 'idempotency-key': 'claim-1' } };
  answers.push(['POST claim', await h.call('POST', `${API}/tasks/1/claim`, claim)]);
  answers.push(['POST claim, replayed', await h.call('POST', `${API}/tasks/1/claim`, claim)]);
  answers.push(['401', await h.call('GET', `${API}/identity`, { token: 'wta_no_such_token' })]);
  answers.push(['404 task_not_found', await h.call('GET', `${API}/tasks/999999`)]);
  answers.push(['404 route_not_found', await h.call('GET', `${API}/nowhere`)]);
  answers.push(['405', await h.call('DELETE', `${API}/tasks/1`)]);
  answers.push(['412', await h.call('PATCH', `${API}/tasks/1`, { headers: { 'if-match': '"task-1-plan-1"' }, body: { title: 'x' } })]);
  answers.push(['428', await h.call('PATCH', `${API}/tasks/1`, { body: { title: 'x' } })]);
  for (const [what, answer] of answers) {
    t.equal(answer.headers['cache-control'], 'no-store', `${what} (${answer.status}): no-store`);
    t.equal(answer.headers['vary'], undefined, `${what}: no Vary`);
  }
  t.equal(answers.find(([what]) => what === 'POST claim, replayed')?.[1].headers['idempotent-replayed'], 'true', 'the replay is one');
});

t.test('CACHING: a 429 says no-store too', async (t) => {
  const h = adaWorld({ rateLimit: 1 });
  await h.call('GET', `${API}/identity`);
  const limited = await h.call('GET', `${API}/identity`);
  t.equal(limited.status, 429);
  t.equal(limited.headers['cache-control'], 'no-store');
});
