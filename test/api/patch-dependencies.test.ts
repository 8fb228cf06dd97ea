import t from 'tap';
import type { Harness } from '../helpers/service.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';
import { adaWorld, expectCode, patchTask, readTask } from '../helpers/api.js';

/**
 * PATCH dependencyIds (contract 6): replaces the list; prerequisites are tasks of the same
 * organisation, not the task itself, without duplicates (422 invalid_field); a cycle is 409
 * dependency_conflict, found quickly even through a long chain.
 */

const prerequisites = async (h: Harness, id: number): Promise<number[]> =>
  (await readTask(h, id)).dependencies.map((dependency: { taskId: number }) => dependency.taskId);

t.test('PATCH: dependencyIds replaces the whole list of prerequisites', async (t) => {
  const h = adaWorld();
  t.strictSame(await prerequisites(h, 2), [1]);
  t.equal((await patchTask(h, 2, { dependencyIds: [8, 3] })).status, 204);
  t.strictSame(await prerequisites(h, 2), [3, 8], 'task 1 is gone, 3 and 8 are there');
  t.equal((await patchTask(h, 2, { dependencyIds: [6, 7] })).status, 204, "a Done task and a task assigned only to Bob (same organisation)");
  t.match(await readTask(h, 2), { dependencies: [{ taskId: 6, status: 'Done' }, { taskId: 7, status: 'Ready' }], blocked: true });
  t.equal((await patchTask(h, 2, { dependencyIds: [6] })).status, 204);
  t.match(await readTask(h, 2), { dependencies: [{ taskId: 6, status: 'Done' }], blocked: false, blockingReasons: [] });
  t.equal((await patchTask(h, 2, { title: 'Review the copy' })).status, 204);
  t.strictSame(await prerequisites(h, 2), [6], 'a PATCH without dependencyIds keeps them');
});

t.test('PATCH: an unknown id, a task of another organisation, an assistance-stage id, the task itself or a duplicate gives 422 invalid_field', async (t) => {
  const h = adaWorld();
  h.db.prepare("INSERT INTO stages (id, kind) VALUES (500, 'assistance')").run();
  h.db.prepare(`INSERT INTO assistance_stages (id, organisation_id, origin_task_id, requested_by_client_id,
    requested_by_staff_id, created_utc) VALUES (500, 1, 3, 100, 10, ?)`).run(Date.parse('2026-11-16T09:00:00Z'));
  const cases: [string, number[]][] = [
    ['unknown id', [9999]], ['unknown among known ones', [3, 9999]], ['task of another organisation', [90]],
    ['assistance-stage id', [500]], ['itself', [2]], ['itself among others', [3, 2]], ['duplicate', [3, 3]],
    ['duplicate among others', [3, 8, 3]], ['largest int32, unknown', [2147483647]],
  ];
  for (const [label, dependencyIds] of cases) {
    expectCode(t, await patchTask(h, 2, { dependencyIds }), 422, 'invalid_field', label);
  }
  t.strictSame(await prerequisites(h, 2), [1], 'the list is unchanged');
  const fromOtherOrg = await h.call('PATCH', '/api/v1/tasks/90', {
    token: TOKENS.otherOrg, headers: { 'if-match': (await h.call('GET', '/api/v1/tasks/90', { token: TOKENS.otherOrg })).json.etag },
    body: { dependencyIds: [1] },
  });
  expectCode(t, fromOtherOrg, 422, 'invalid_field', 'the other way round');
});

t.test('PATCH: a dependency cycle gives 409 dependency_conflict', async (t) => {
  const fixture = baseFixture();
  fixture.tasks.push(
    { id: 12, projectId: 1, title: 'C', estimatedMinutes: 10, assignees: [{ staffMemberId: 10 }], dependencyIds: [2] },
    { id: 13, projectId: 1, title: 'D', estimatedMinutes: 10, assignees: [{ staffMemberId: 12 }], dependencyIds: [12] },
  );
  const h = adaWorld({ fixture });
  expectCode(t, await patchTask(h, 1, { dependencyIds: [2] }), 409, 'dependency_conflict', '1 <- 2 exists; 1 after 2');
  expectCode(t, await patchTask(h, 1, { dependencyIds: [3, 13] }), 409, 'dependency_conflict', 'through 13 -> 12 -> 2 -> 1, via a task of Bob');
  expectCode(t, await patchTask(h, 2, { dependencyIds: [1, 12] }), 409, 'dependency_conflict', 'a two-task cycle');
  t.strictSame(await prerequisites(h, 1), [], 'nothing changed');
  t.strictSame(await prerequisites(h, 2), [1]);
  t.equal((await patchTask(h, 12, { dependencyIds: [1] })).status, 204, 'rewiring 12 breaks the chain through 2');
  t.equal((await patchTask(h, 2, { dependencyIds: [] })).status, 204);
  expectCode(t, await patchTask(h, 1, { dependencyIds: [13] }), 409, 'dependency_conflict', 'now 13 -> 12 -> 1');
  t.equal((await patchTask(h, 1, { dependencyIds: [2] })).status, 204, '2 no longer depends on 1');
  t.equal((await patchTask(h, 3, { dependencyIds: [2, 13] })).status, 204, 'a diamond is not a cycle');
});

t.test('PATCH: cycle detection follows a chain of 1000 tasks to its end (409 for a cycle, 204 otherwise; the time it took is only reported)', async (t) => {
  const fixture = baseFixture();
  for (let id = 1001; id <= 2000; id += 1) {
    fixture.tasks.push({
      id, projectId: 2, title: `Link ${id}`, estimatedMinutes: 5, assignees: [{ staffMemberId: 10 }],
      ...(id > 1001 ? { dependencyIds: [id - 1] } : {}),
    });
  }
  const h = adaWorld({ fixture });
  const started = Date.now();
  expectCode(t, await patchTask(h, 1001, { dependencyIds: [2000] }), 409, 'dependency_conflict', 'the first after the last');
  expectCode(t, await patchTask(h, 1500, { dependencyIds: [1499, 1999] }), 409, 'dependency_conflict', 'the middle after the end');
  t.equal((await patchTask(h, 1, { dependencyIds: [2000] })).status, 204, 'an outside task after the last');
  t.equal((await patchTask(h, 2000, { dependencyIds: [1999, 1001, 1500] })).status, 204, 'shortcuts along the chain are no cycle');
  t.equal((await patchTask(h, 1001, { dependencyIds: [3] })).status, 204, 'the chain can grow at its start');
  expectCode(t, await patchTask(h, 3, { dependencyIds: [1] }), 409, 'dependency_conflict', '3 <- 1001 <- ... <- 2000 <- 1');
  t.comment(`six PATCHes over the chain took ${Date.now() - started} ms`);
  t.strictSame(await prerequisites(h, 1), [2000]);
});

t.test('PATCH: dependencyIds [] clears the list', async (t) => {
  const h = adaWorld();
  t.match(await readTask(h, 2), { blocked: true, blockingReasons: ['unmet prerequisites'] });
  t.equal((await patchTask(h, 2, { dependencyIds: [] })).status, 204);
  t.match(await readTask(h, 2), { dependencies: [], blocked: false, blockingReasons: [] });
  const available = (await h.call('GET', '/api/v1/tasks/available')).json.map((task: { id: number }) => task.id);
  t.ok(available.includes(2), 'no longer blocked, so offered');
  t.equal((await patchTask(h, 2, { dependencyIds: [] })).status, 204, 'clearing an empty list is fine');
});
