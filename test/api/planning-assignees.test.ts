import t from 'tap';
import { harness } from '../helpers/service.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';

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
