import t from 'tap';
import Database from 'better-sqlite3';
import { createService } from '../../lib/service.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { manualClock } from '../../lib/time/clock.js';
import { baseFixture, TEST_NOW, TOKENS, type FixtureShape } from '../helpers/fixture.js';
import { addAssistance } from '../helpers/api.js';

/**
 * Lists are assembled with a fixed number of queries whatever their length: the children of all
 * listed tasks are read at once. SQLite statement executions are counted through the `verbose`
 * hook of better-sqlite3, over a world with 5 and one with 200 tasks for the agent, each task
 * carrying every kind of child row (assignees, prerequisites, intervals, notes, assistance,
 * source links and changes, activations).
 */

/** `count` tasks for Ada: every third blocked (waiting or by a prerequisite), the rest runnable. */
function worldWith(count: number): FixtureShape {
  const fixture = baseFixture();
  fixture.claims = [];
  fixture.tasks = [];
  for (let index = 0; index < count; index += 1) {
    const id = 1000 + index;
    fixture.tasks.push({
      id, projectId: [1, 2, 3][index % 3], title: `Task ${id}`, sequence: index % 7, estimatedMinutes: 30,
      isWaiting: index % 6 === 0,
      dependencyIds: index % 6 === 3 ? [id - 1] : [],
      assignees: [{ staffMemberId: 10 }, { staffMemberId: 12 }],
      resourceMode: 'Collaboration',
      actualIntervals: [{ staffMemberId: 10, start: '2026-11-13T09:00:00', end: '2026-11-13T09:30:00' }],
      sources: [{ providerKey: 'http', itemId: `T-${id}`, facts: { title: `Ticket ${id}` } }],
    });
  }
  return fixture;
}

function countingService(count: number) {
  let statements = 0;
  const db = new Database(':memory:', { verbose: () => { statements += 1; } });
  const clock = manualClock(TEST_NOW);
  loadFixture(db, worldWith(count), { now: clock.now() });
  const created = Date.parse('2026-11-16T09:00:00Z');
  const addChildren = db.transaction(() => {
    for (let index = 0; index < count; index += 1) {
      const id = 1000 + index;
      const stageId = 5000 + index;
      db.prepare('INSERT INTO notes (task_id, client_id, staff_id, text, created_utc) VALUES (?, 100, 10, ?, ?)').run(id, `note ${id}`, created);
      addAssistance({ db }, {
        stageId, taskId: id, incomingId: index + 1, isBlocking: false, title: 'Help', estimatedMinutes: 10, responseState: 'responded',
      });
      const item = db.prepare('SELECT source_item_id AS id FROM task_sources WHERE task_id = ?').get(id) as { id: number };
      db.prepare(`INSERT INTO source_changes (task_id, source_item_id, incoming_id, kind, response, author, occurred_utc, received_utc)
          VALUES (?, ?, ?, 'reply', 'ok', 'Grace', ?, ?)`).run(id, item.id, index + 1, created, created);
      db.prepare('INSERT INTO source_activations (task_id, activated_utc, sources) VALUES (?, ?, ?)')
        .run(id, created, JSON.stringify([{ title: `Ticket ${id}`, description: null, businessStatus: null }]));
    }
  });
  addChildren();
  // Sources refreshed a moment ago: the steady state, in which offering calls no provider.
  db.prepare('UPDATE source_items SET is_available = 1, has_baseline = 1, last_attempt_utc = ?, last_success_utc = ?')
    .run(clock.now(), clock.now());
  const service = createService({ db, clock });
  return {
    /** Runs one request and answers its status, body and the number of SQLite statements it ran. */
    async measure(url: string) {
      statements = 0;
      const response = await service.handle({ method: 'GET', url, headers: { authorization: `Bearer ${TOKENS.ada}` } });
      return { status: response.status, body: JSON.parse(response.body ?? 'null') as { id: number; humanRequests: unknown[] }[], statements };
    },
  };
}

for (const list of ['available', 'waiting'] as const) {
  t.test(`GET /tasks/${list}: assembled with the same number of queries for 5 and for 200 tasks`, async (t) => {
    const small = countingService(5);
    const large = countingService(200);
    const few = await small.measure(`/api/v1/tasks/${list}`);
    const many = await large.measure(`/api/v1/tasks/${list}`);
    t.equal(few.status, 200);
    t.equal(many.status, 200);
    t.ok(few.body.length >= 1, `the small ${list} list is not empty (${few.body.length})`);
    t.ok(many.body.length >= 40, `the large ${list} list is long (${many.body.length})`);
    t.ok(many.body.every((task) => task.humanRequests.length === 1), 'children were really read');
    t.ok(few.statements > 0, `statements were counted (${few.statements})`);
    t.equal(many.statements, few.statements, `${few.statements} statements for ${few.body.length} tasks, ${many.statements} for ${many.body.length}`);
  });
}
