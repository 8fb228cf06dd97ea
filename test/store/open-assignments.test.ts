import fc from 'fast-check';
import Database from 'better-sqlite3';
import t from 'tap';
import { loadFixture } from '../../lib/fixtures/load.js';
import { openDatabase } from '../../lib/store/open.js';
import { baseFixture } from '../helpers/fixture.js';

/**
 * open_assignments is kept by triggers only. Whatever happens to tasks and assignments, through
 * the service or SQL on the file (also with foreign keys off, as in the sqlite3 shell, and with
 * INSERT OR REPLACE), it must hold the assignments of tasks not Done: exactly those, apart from
 * rows of tasks deleted with foreign keys off, which the readers' join to tasks leaves out.
 */

const STAFF = [1, 2, 3];
const TASKS = [10, 11, 12, 13];
const STATUSES = ['Ready', 'InProgress', 'Done'] as const;

type Step =
  | { kind: 'createTask'; task: number; status: (typeof STATUSES)[number] }
  | { kind: 'setStatus'; task: number; status: (typeof STATUSES)[number] }
  | { kind: 'replaceTask'; task: number; status: (typeof STATUSES)[number] }
  | { kind: 'assign'; task: number; staff: number }
  | { kind: 'unassign'; task: number; staff: number }
  | { kind: 'moveAssignment'; task: number; staff: number; toTask: number; toStaff: number }
  | { kind: 'deleteTask'; task: number };

const task = fc.constantFrom(...TASKS);
const staff = fc.constantFrom(...STAFF);
const status = fc.constantFrom(...STATUSES);
// Weighted so that assignments pile up and get moved before their tasks are deleted.
const step: fc.Arbitrary<Step> = fc.oneof(
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('createTask' as const), task, status }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('setStatus' as const), task, status }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('replaceTask' as const), task, status }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('assign' as const), task, staff }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('unassign' as const), task, staff }) },
  { weight: 3, arbitrary: fc.record({ kind: fc.constant('moveAssignment' as const), task, staff, toTask: task, toStaff: staff }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('deleteTask' as const), task }) },
);

function emptyOrganisation(foreignKeys = true): Database.Database {
  const { db } = openDatabase(new Database(':memory:'));
  db.pragma(`foreign_keys = ${foreignKeys ? 'ON' : 'OFF'}`);
  db.exec(`INSERT INTO organisations (id, name) VALUES (1, 'Acme');
    INSERT INTO projects (id, organisation_id, name) VALUES (1, 1, 'P');
    INSERT INTO staff (id, organisation_id, name, kind) VALUES (1, 1, 'A', 'agent'), (2, 1, 'B', 'agent'), (3, 1, 'C', 'human');`);
  return db;
}

/** Runs a step as plain SQL; a step the schema refuses (a duplicate, a missing task) changes nothing. */
function apply(db: Database.Database, action: Step): void {
  const run = (sql: string, ...values: unknown[]) => {
    try {
      db.prepare(sql).run(...values);
    } catch (error) {
      if (!(error instanceof Database.SqliteError)) throw error;
    }
  };
  switch (action.kind) {
    case 'createTask':
      run("INSERT INTO stages (id, kind) VALUES (?, 'task')", action.task);
      run('INSERT INTO tasks (id, organisation_id, project_id, title, status) VALUES (?, 1, 1, ?, ?)', action.task, 'T', action.status);
      return;
    case 'setStatus':
      return run('UPDATE tasks SET status = ? WHERE id = ?', action.status, action.task);
    case 'replaceTask':
      return run('INSERT OR REPLACE INTO tasks (id, organisation_id, project_id, title, status) VALUES (?, 1, 1, ?, ?)', action.task, 'R', action.status);
    case 'assign':
      return run('INSERT INTO task_assignments (task_id, staff_id) VALUES (?, ?)', action.task, action.staff);
    case 'unassign':
      return run('DELETE FROM task_assignments WHERE task_id = ? AND staff_id = ?', action.task, action.staff);
    case 'moveAssignment':
      return run('UPDATE task_assignments SET task_id = ?, staff_id = ? WHERE task_id = ? AND staff_id = ?', action.toTask, action.toStaff, action.task, action.staff);
    case 'deleteTask':
      return run('DELETE FROM tasks WHERE id = ?', action.task);
  }
}

const kept = (db: Database.Database) =>
  db.prepare('SELECT o.staff_id, o.task_id FROM open_assignments o JOIN tasks t ON t.id = o.task_id ORDER BY o.staff_id, o.task_id').all();
const derived = (db: Database.Database) =>
  db.prepare(`SELECT a.staff_id, a.task_id FROM task_assignments a JOIN tasks t ON t.id = a.task_id
    WHERE t.status <> 'Done' ORDER BY a.staff_id, a.task_id`).all();

for (const foreignKeys of [true, false]) t.test(`OPEN ASSIGNMENTS: after any sequence of task and assignment changes (foreign keys ${foreignKeys ? 'on' : 'off'}), they are exactly the assignments of tasks not Done`, async (t) => {
  let checked = 0;
  fc.assert(
    // Every task exists at the start, so most steps find something to change.
    fc.property(fc.array(status, { minLength: TASKS.length, maxLength: TASKS.length }), fc.array(step, { minLength: 20, maxLength: 60 }), (statuses, steps) => {
      const db = emptyOrganisation(foreignKeys);
      try {
        TASKS.forEach((id, index) => apply(db, { kind: 'createTask', task: id, status: statuses[index] ?? 'Ready' }));
        for (const action of steps) {
          apply(db, action);
          if (JSON.stringify(kept(db)) !== JSON.stringify(derived(db))) return false;
        }
        checked += 1;
        return true;
      } finally {
        db.close();
      }
    }),
    { numRuns: 300 },
  );
  t.equal(checked, 300);
});

t.test('OPEN ASSIGNMENTS: finishing, reopening, reassigning and deleting a task each move its rows', async (t) => {
  const db = emptyOrganisation();
  t.teardown(() => db.close());
  const steps: Step[] = [
    { kind: 'createTask', task: 10, status: 'Ready' },
    { kind: 'createTask', task: 11, status: 'Done' },
    { kind: 'assign', task: 10, staff: 1 },
    { kind: 'assign', task: 10, staff: 2 },
    { kind: 'assign', task: 11, staff: 1 },
  ];
  for (const action of steps) apply(db, action);
  t.strictSame(kept(db), [{ staff_id: 1, task_id: 10 }, { staff_id: 2, task_id: 10 }], 'a Done task assigned is not open');
  apply(db, { kind: 'setStatus', task: 10, status: 'Done' });
  t.strictSame(kept(db), [], 'finished: gone for every assignee');
  apply(db, { kind: 'setStatus', task: 11, status: 'InProgress' });
  t.strictSame(kept(db), [{ staff_id: 1, task_id: 11 }], 'reopened');
  apply(db, { kind: 'moveAssignment', task: 11, staff: 1, toTask: 11, toStaff: 3 });
  t.strictSame(kept(db), [{ staff_id: 3, task_id: 11 }], 'reassigned');
  apply(db, { kind: 'deleteTask', task: 11 });
  t.strictSame(kept(db), [], 'a deleted task takes its rows with it (the cascade fires the trigger)');
});

t.test('OPEN ASSIGNMENTS: loading a fixture over a database (upserted tasks, assignments replaced) keeps them in step', async (t) => {
  const { db } = openDatabase(new Database(':memory:'));
  t.teardown(() => db.close());
  const fixture = baseFixture();
  loadFixture(db, fixture);
  t.strictSame(kept(db), derived(db), 'after the first load');
  t.ok((kept(db) as unknown[]).length > 0);
  // The same tasks again: Done ones reopened, open ones finished, one given to another agent.
  const tasks = fixture.tasks.map((task) => {
    if (task['status'] === 'Done') return { ...task, status: 'Ready', completedAt: null };
    if (task['id'] === 1) return { ...task, status: 'Done', startedAt: '2026-11-02T09:00:00', completedAt: '2026-11-02T10:00:00' };
    if (task['id'] === 3) return { ...task, assignees: [{ staffMemberId: 12 }] };
    return task;
  });
  loadFixture(db, { tasks });
  t.strictSame(kept(db), derived(db), 'after a load that reopens, finishes and reassigns');
  const openOf = (staff: number) => (kept(db) as { staff_id: number; task_id: number }[]).filter((row) => row.staff_id === staff).map((row) => row.task_id);
  t.ok(openOf(10).includes(6), 'the reopened task is open again');
  t.notOk(openOf(10).includes(1), 'the finished task is not');
  t.ok(openOf(12).includes(3) && !openOf(10).includes(3), 'the reassigned task moved');
});
