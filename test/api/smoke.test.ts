import t from 'tap';
import { harness } from '../helpers/service.js';
import { TOKENS } from '../helpers/fixture.js';

t.test('SMOKE: on the shared test world the identity, the offer [4, 1, 8, 3], the waiting list [2, 5] and a task read with its ETag answer 200 and log no error', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const identity = await h.call('GET', '/api/v1/identity');
  t.equal(identity.status, 200);
  t.same(identity.json.resource, { id: 10, name: 'Ada' });
  const available = await h.call('GET', '/api/v1/tasks/available');
  t.equal(available.status, 200);
  t.same(available.json.map((task: { id: number }) => task.id), [4, 1, 8, 3]);
  const waiting = await h.call('GET', '/api/v1/tasks/waiting');
  t.same(waiting.json.map((task: { id: number }) => task.id), [2, 5]);
  const one = await h.call('GET', '/api/v1/tasks/6');
  t.equal(one.status, 200);
  t.equal(one.headers['etag'], one.json.etag);
  t.same(h.errors, []);
});
