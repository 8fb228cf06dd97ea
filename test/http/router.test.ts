import t from 'tap';
import { OPERATIONS } from '../../lib/http/operations.js';
import { Router } from '../../lib/http/router.js';

// lib/http/router.ts over the full operation table (the service registers only the read
// operations for now; these are the rules the write operations will meet when they arrive).

const router = new Router(OPERATIONS);

t.test('ROUTER: each path answers its methods in a fixed order in Allow', async (t) => {
  const cases: [string, string][] = [
    ['/identity', 'GET'],
    ['/tasks/available', 'GET'],
    ['/tasks/waiting', 'GET'],
    ['/tasks/1', 'GET, PATCH'],
    ['/tasks/1/actual-effort', 'PUT'],
    ['/tasks/1/notes', 'POST'],
    ['/tasks/1/claim', 'POST'],
    ['/tasks/1/claim/renew', 'POST'],
    ['/tasks/1/claim/release', 'POST'],
    ['/tasks/1/human-requests', 'POST'],
    ['/tasks/1/external-evaluation', 'POST'],
    ['/human-requests/1', 'GET'],
    ['/incoming', 'GET'],
    ['/incoming/1/start', 'POST'],
    ['/incoming/1/plan', 'POST'],
    ['/incoming/1/reassign', 'POST'],
    ['/incoming/1/complete', 'POST'],
    ['/openapi.json', 'GET'],
  ];
  for (const [path, allow] of cases) t.equal(router.find(path)?.allow, allow, `${path}: ${allow}`);
});

t.test('ROUTER: static paths win over {id}', async (t) => {
  for (const path of ['/tasks/available', '/tasks/waiting']) {
    const match = router.find(path);
    t.equal(match?.id, undefined, `${path} has no id`);
    t.equal(match?.allow, 'GET', `${path}: Allow: GET even though /tasks/{id} takes PATCH`);
    t.notOk(match?.operations.has('PATCH'), `${path} is not PATCH /tasks/{id}`);
  }
});

t.test('ROUTER: the {id} segment is returned undecided, for the pipeline to validate', async (t) => {
  t.equal(router.find('/tasks/42')?.id, '42');
  t.equal(router.find('/tasks/abc')?.id, 'abc');
  t.equal(router.find('/tasks/0/claim/renew')?.id, '0');
  t.equal(router.find('/incoming/7/start')?.operations.get('POST')?.operationId, 'startIncoming');
});

t.test('ROUTER: paths are exact', async (t) => {
  for (const path of ['/tasks/available/', '/tasks/', '/tasks//claim', '/tasks/1/', '/Tasks/1', '/tasks/1/claim/', '/incoming/', '/incoming//start', '', '/', '/tasks', '/tasks/1/claim/renew/x']) {
    t.equal(router.find(path), null, `${JSON.stringify(path)} is unknown`);
  }
});
