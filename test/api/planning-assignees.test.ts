import t from 'tap';
import { harness } from '../helpers/service.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';
import { adaWorld, API, patchTask, readTask } from '../helpers/api.js';

t.test('ASSIGNMENT: each assignee’s remainingMinutes counts elapsed time on that assignee’s own calendar, whoever reads', async (t) => {
  const fixture = baseFixture();
  // Bob works afternoons and evenings; at Monday 10:00 none of his working time has passed yet.
  const bob = fixture.staff.find((member) => member['id'] === 12)!;
  bob['calendar'] = { mon: [['13:00', '21:00']], tue: [['13:00', '21:00']] };
  fixture.tasks.push({
    id: 30, projectId: 1, title: 'Shared, started at nine', status: 'InProgress', startedAt: '2026-11-16T09:00:00',
    estimatedMinutes: 120, assignees: [{ staffMemberId: 10 }, { staffMemberId: 12 }],
  });
  const h = harness({ fixture });
  for (const token of [TOKENS.ada, TOKENS.bob]) {
    const task = (await h.call('GET', '/api/v1/tasks/30', { token })).json;
    const minutes = Object.fromEntries(task.assignees.map((a: { staffMemberId: number; remainingMinutes: number }) => [a.staffMemberId, a.remainingMinutes]));
    t.strictSame(minutes, { 10: 60, 12: 120 }, `read by ${token === TOKENS.ada ? 'Ada' : 'Bob'}`);
  }
  t.equal((await h.call('GET', '/api/v1/tasks/30', { token: TOKENS.ada })).json.remainingMinutes, 60, 'the task field uses the reader’s calendar (Ada)');
  t.equal((await h.call('GET', '/api/v1/tasks/30', { token: TOKENS.bob })).json.remainingMinutes, 120, 'the task field uses the reader’s calendar (Bob)');
});

t.test('ASSIGNMENT: a PATCHed estimate also becomes the caller’s own estimate where it has one, so its plan follows', async (t) => {
  const fixture = baseFixture();
  // Started at nine with 30 minutes of Ada's own: at 10:00 her part is used up, so not offered.
  fixture.tasks.push({
    id: 31, projectId: 1, title: 'Own estimates', status: 'InProgress', startedAt: '2026-11-16T09:00:00',
    estimatedMinutes: 60, assignees: [{ staffMemberId: 10, estimatedMinutes: 30 }, { staffMemberId: 12, estimatedMinutes: 45 }],
  });
  fixture.tasks.push({
    id: 32, projectId: 1, title: 'Task estimate only', estimatedMinutes: 60,
    assignees: [{ staffMemberId: 10, estimatedMinutes: null }, { staffMemberId: 12, estimatedMinutes: 20 }],
  });
  const h = adaWorld({ fixture });
  const offered = async () => ((await h.call('GET', `${API}/tasks/available`)).json as { id: number }[]).map((task) => task.id);
  const estimates = async (id: number) => Object.fromEntries(((await readTask(h, id)).assignees as { staffMemberId: number; estimatedMinutes: number | null }[])
    .map((a) => [a.staffMemberId, a.estimatedMinutes]));
  t.notOk((await offered()).includes(31), 'before: Ada’s own 30 minutes have elapsed');

  t.equal((await patchTask(h, 31, { estimatedMinutes: 240 })).status, 204);
  t.strictSame(await estimates(31), { 10: 240, 12: 45 }, 'Ada’s own estimate follows; Bob’s stays his');
  t.equal((await readTask(h, 31)).estimatedMinutes, 240);
  t.ok((await offered()).includes(31), 'after: the task has time in Ada’s plan again');

  t.equal((await patchTask(h, 31, { remainingMinutes: 100 })).status, 204);
  t.strictSame(await estimates(31), { 10: 160, 12: 45 }, 'remainingMinutes too: 60 elapsed + 100');

  t.equal((await patchTask(h, 32, { estimatedMinutes: 90 })).status, 204);
  t.strictSame(await estimates(32), { 10: null, 12: 20 }, 'an assignee without an own estimate keeps following the task’s');
  t.equal((await patchTask(h, 31, { title: 'Renamed' })).status, 204);
  t.strictSame(await estimates(31), { 10: 160, 12: 45 }, 'a PATCH without an estimate leaves own estimates alone');
});
