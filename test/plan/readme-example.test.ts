import t from 'tap';
import { harness } from '../helpers/service.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';
import { createPlanner } from '../../lib/domain/planning/planner.js';
import { planInputStatements } from '../../lib/store/plan-inputs.js';
import { calendarStatements } from '../../lib/store/calendars.js';
import { organisationStatements } from '../../lib/store/organisations.js';
import { epochMsToLocal } from '../../lib/time/london.js';

// The worked example of the README's "How planning works", on the shared test world.
t.test('PLAN: the README worked example places and offers exactly as documented', async (t) => {
  // Exactly the README's task list: the shared world without its leased and shelved-project tasks.
  const fixture = baseFixture();
  fixture.tasks = fixture.tasks.filter((task) => task['id'] !== 10 && task['id'] !== 11);
  fixture.claims = [];
  const h = harness({ fixture, defaultToken: TOKENS.ada });
  h.db.prepare(`INSERT INTO incoming_items (id, organisation_id, recipient_id, title, estimated_minutes, requester,
      requested_at_utc, lifecycle, planned_start_local, revision)
      VALUES (500, 1, 10, 'Accepted request', 60, 'Grace', 0, 'planned', '2026-11-16T14:00:00', '0b7e2f9c-5d1a-4c3e-8f6b-9a2d4e1c7b30')`).run();
  const planner = createPlanner({
    inputs: planInputStatements(h.db), calendars: calendarStatements(h.db), organisations: organisationStatements(h.db),
  });
  const plan = planner.planFor(1, 10, h.clock.now());
  const window = (id: number) => {
    const placement = plan.placements.get(id);
    return placement === undefined ? null : [epochMsToLocal(placement.start), epochMsToLocal(placement.finish)];
  };
  t.strictSame(window(4), ['2026-11-16T10:00:00', '2026-11-16T10:23:00'], 'task 4: Ada’s Collaboration share, 23 minutes');
  t.strictSame(window(1), ['2026-11-16T10:23:00', '2026-11-16T12:23:00'], 'task 1');
  t.equal(window(2), null, 'task 2 is blocked and not planned');
  t.equal(window(8), null, 'task 8 needs no time');
  t.strictSame(window(9), ['2027-01-04T09:00:00', '2027-01-04T09:30:00'], 'task 9 from its earliest start');
  t.strictSame(window(3), ['2026-11-16T12:23:00', '2026-11-16T12:53:00'], 'task 3');
  t.equal(epochMsToLocal(plan.suggest(60) as number), '2026-11-16T12:53:00', 'the next free hour starts after task 3');
  t.equal(epochMsToLocal(plan.suggest(120) as number), '2026-11-16T15:00:00', 'two uninterrupted hours start after the accepted item');

  const offered = (await h.call('GET', '/api/v1/tasks/available')).json.map((task: { id: number }) => task.id);
  t.strictSame(offered, [4, 1, 8, 3]);
});
