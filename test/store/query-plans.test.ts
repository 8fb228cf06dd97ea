import Database from 'better-sqlite3';
import t from 'tap';
import { createService } from '../../lib/service.js';

/**
 * How SQLite runs the service's statements (EXPLAIN QUERY PLAN), for the tables that grow with
 * an organisation's history: a statement that walks one of them whole costs time per row ever
 * written, on requests that return a handful.
 */

/** Every SQL text the service prepares when it is created (it prepares each statement once). */
function preparedStatements(): { db: Database.Database; texts: string[] } {
  const db = new Database(':memory:');
  const texts = new Set<string>();
  const prepare = db.prepare.bind(db);
  Object.defineProperty(db, 'prepare', {
    value: (source: string) => {
      texts.add(source.replace(/\s+/g, ' ').trim());
      return prepare(source);
    },
  });
  createService({ db }).close();
  return { db, texts: [...texts] };
}

/** The plan's lines, with every parameter bound to something of its type. */
function planOf(db: Database.Database, sql: string): string[] {
  const names = [...new Set([...sql.matchAll(/@(\w+)/g)].map((match) => match[1] as string))];
  const explain = db.prepare<unknown[], { detail: string }>(`EXPLAIN QUERY PLAN ${sql}`);
  const rows = names.length > 0
    ? explain.all(Object.fromEntries(names.map((name) => [name, name === 'ids' ? '[]' : 0])))
    : explain.all(...Array.from({ length: (sql.match(/\?/g) ?? []).length }, () => 0));
  return rows.map((row) => row.detail);
}

const GROWING_TABLES = [
  'tasks', 'task_assignments', 'open_assignments', 'task_dependencies', 'actual_intervals', 'notes', 'claims', 'idempotency_receipts',
  'assistance_stages', 'incoming_items', 'stages', 'source_items', 'task_sources', 'source_changes', 'source_activations', 'source_publications',
];

const wholeTableScans = (plan: string[]): string[] =>
  plan.filter((line) => GROWING_TABLES.some((table) => new RegExp(`^SCAN ${table}\\b(?! USING (COVERING )?INDEX)`).test(line)));

t.test('QUERY PLANS: no statement walks a whole table that grows with the history', async (t) => {
  const { db, texts } = preparedStatements();
  const queries = texts.filter((sql) => /^(SELECT|WITH|UPDATE|DELETE|INSERT)/i.test(sql));
  t.ok(queries.length > 50, `${queries.length} statements checked`);
  for (const sql of queries) {
    t.strictSame(wholeTableScans(planOf(db, sql)), [], sql.slice(0, 160));
  }
  t.strictSame(wholeTableScans(planOf(db, 'SELECT id FROM tasks WHERE title = @title')), ['SCAN tasks'], 'a scan is seen');
});

t.test('QUERY PLANS: GET /incoming without includeAccepted reaches the floating items through the index, not every item ever', async (t) => {
  const { db, texts } = preparedStatements();
  const floating = texts.filter((sql) => sql.includes('FROM incoming_items i') && sql.includes('ORDER BY i.priority_rank'));
  t.equal(floating.length, 2, 'one statement for each list');
  const plans = floating.map((sql) => planOf(db, sql)[0]);
  t.ok(plans.includes('SEARCH i USING INDEX incoming_by_recipient (recipient_id=? AND lifecycle=?)'), plans.join(' | '));
});

t.test('QUERY PLANS: the offer, the waiting list and the plan walk only the assignments of tasks not Done; nothing walks them all', async (t) => {
  const { db, texts } = preparedStatements();
  const plans = texts.map((sql) => ({ sql, plan: planOf(db, sql) }));
  const fromOpen = plans.filter(({ plan }) => plan[0] === 'SEARCH mine USING PRIMARY KEY (staff_id=?)');
  t.equal(fromOpen.length, 2, 'the offer/waiting candidates and the plan inputs');
  for (const { sql } of fromOpen) t.match(sql, /FROM open_assignments mine\b/, sql.slice(0, 80));
  const everyAssignment = plans.filter(({ plan }) => plan.some((line) => line.includes('task_assignments_by_staff')));
  t.strictSame(everyAssignment.map(({ sql }) => sql.slice(0, 80)), [], 'a resource\'s finished tasks cost no list anything');
});

t.test('QUERY PLANS: the reply poll starts from the organisation\'s open requests, not from every task the resource finished', async (t) => {
  const { db, texts } = preparedStatements();
  const poll = texts.filter((sql) => sql.includes('AS taskId') && sql.includes('source_publications p ON p.stage_id'));
  t.equal(poll.length, 1, 'one statement');
  const plan = planOf(db, poll[0] as string);
  t.equal(plan[0], 'SEARCH i USING COVERING INDEX incoming_open_by_organisation (organisation_id=?)', plan.join(' | '));
  t.ok(plan.includes('SEARCH a USING PRIMARY KEY (task_id=? AND staff_id=?)'), 'each request\'s task is looked up, not walked');
});
