/**
 * Planning cost (issue 4): the plan of one resource with 1,000 and with 20,000 open tasks, of one
 * with 1,000 open tasks and 99,000 finished ones, reads and writes in a 100,000-task organisation
 * of 1,000 resources against a small one, and the calendars that once made plans slow: 48 short
 * slots a day with a task that fills thousands of them, 40,000 short tasks scattered over the
 * year on that calendar by their earliest starts, a night shift with 1,000 tasks in progress for
 * years, and `GET /incoming` suggesting starts for 1,000 items on the slotted calendar. Run: `npm run bench:plan`.
 * Figures go to stdout and to bench/results/plan.json.
 */
import Database from 'better-sqlite3';
import { mkdirSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { createService } from '../lib/service.js';
import { createPlanner } from '../lib/domain/planning/planner.js';
import { calendarStatements } from '../lib/store/calendars.js';
import { organisationStatements } from '../lib/store/organisations.js';
import { planInputStatements } from '../lib/store/plan-inputs.js';
import { manualClock } from '../lib/time/clock.js';
import { generateOrganisation, type GeneratedOrganisation } from './generate.js';

const NOW = '2026-11-16T10:00:00.000Z';

function median(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

function measure(iterations: number, action: () => void): number {
  for (let warm = 0; warm < Math.min(5, iterations); warm += 1) action();
  const samples: number[] = [];
  for (let index = 0; index < iterations; index += 1) {
    const start = performance.now();
    action();
    samples.push(performance.now() - start);
  }
  return median(samples);
}

function world(agents: number, tasksPerAgent: number) {
  const db = new Database(':memory:');
  const generated = generateOrganisation(db, { organisationId: 1, agents, tasksPerAgent, idBase: 1 });
  const clock = manualClock(NOW);
  const service = createService({ db, clock, rateLimit: 1e9 });
  return { db, clock, service, generated };
}

async function call(service: ReturnType<typeof createService>, method: string, url: string, token: string, headers: Record<string, string> = {}, body?: string) {
  const response = await service.handle({ method, url, headers: { authorization: `Bearer ${token}`, ...headers, ...(body ? { 'content-type': 'application/json' } : {}) }, body });
  if (response.status >= 400) throw new Error(`${method} ${url}: ${response.status} ${response.body}`);
  return response;
}

/** Median ms of a read of one task, the offer list, and an ETag read plus PATCH, for agent 0. */
async function requestCosts(setup: ReturnType<typeof world>, generated: GeneratedOrganisation, listIterations = 50) {
  const token = generated.tokens[0] as string;
  const taskId = (generated.taskIds[0] as number[])[0] as number;
  const { service } = setup;
  const timeAsync = async (iterations: number, action: () => Promise<unknown>) => {
    const samples: number[] = [];
    for (let index = 0; index < iterations + 5; index += 1) {
      const start = performance.now();
      await action();
      if (index >= 5) samples.push(performance.now() - start);
    }
    return median(samples);
  };
  const getTask = await timeAsync(200, () => call(service, 'GET', `/api/v1/tasks/${taskId}`, token));
  const available = await timeAsync(listIterations, () => call(service, 'GET', '/api/v1/tasks/available', token));
  let sequence = 0;
  const patch = await timeAsync(100, async () => {
    const read = await call(service, 'GET', `/api/v1/tasks/${taskId}`, token);
    sequence += 1;
    await call(service, 'PATCH', `/api/v1/tasks/${taskId}`, token, { 'if-match': read.headers['etag'] as string }, JSON.stringify({ sequence: sequence % 1000 }));
  });
  // After a write the plan is recomputed once for the caller: the offer list right after a PATCH.
  const availableAfterWrite = await timeAsync(listIterations, async () => {
    const read = await call(service, 'GET', `/api/v1/tasks/${taskId}`, token);
    sequence += 1;
    await call(service, 'PATCH', `/api/v1/tasks/${taskId}`, token, { 'if-match': read.headers['etag'] as string }, JSON.stringify({ sequence: sequence % 1000 }));
    await call(service, 'GET', '/api/v1/tasks/available', token);
  });
  return { getTaskMs: getTask, availableMs: available, readThenPatchMs: patch, writeReadPatchAvailableMs: availableAfterWrite };
}

/** Replaces agent 0's weekly calendar: [weekday, startMinute, endMinute] rows. */
function setCalendar(setup: ReturnType<typeof world>, intervals: readonly (readonly [number, number, number])[]) {
  const { db } = setup;
  const insert = db.prepare('INSERT INTO calendar_intervals (staff_id, weekday, start_minute, end_minute) VALUES (?, ?, ?, ?)');
  db.transaction(() => {
    db.prepare('DELETE FROM calendar_intervals WHERE staff_id = ?').run(AGENT_STAFF_ID);
    for (const [weekday, start, end] of intervals) insert.run(AGENT_STAFF_ID, weekday, start, end);
  })();
}

/** Agent 0's staff id in a generated organisation (idBase 1: the sponsor is 1). */
const AGENT_STAFF_ID = 2;

/** 48 working slots of 25 minutes every day (a 5-minute break each half hour). */
const SLOTS = Array.from({ length: 7 }, (_, day) => Array.from({ length: 48 }, (_, slot) => [day + 1, slot * 30, slot * 30 + 25] as const)).flat();

/** 22:00 to 06:00 on weekday nights: the hours where London's clock changes fall. */
const NIGHT_SHIFT = [1, 2, 3, 4, 5].flatMap((day) => [[day, 1320, 1440], [day + 1, 0, 360]] as const);

/** 1,000 tasks on the slotted calendar, the 501st of 1,000,000 minutes. */
function slottedWorld(): ReturnType<typeof world> {
  const slotted = world(1, 1000);
  setCalendar(slotted, SLOTS);
  slotted.db.prepare('UPDATE tasks SET estimated_minutes = 1000000 WHERE id = ?').run((slotted.generated.taskIds[0] as number[])[500] as number);
  return slotted;
}

function planCost(setup: ReturnType<typeof world>, resourceId: number): number {
  const { db, clock } = setup;
  const inputs = planInputStatements(db);
  const calendars = calendarStatements(db);
  const organisations = organisationStatements(db);
  return measure(30, () => {
    // A fresh planner each time, so nothing is cached: the full cost of one resource's plan.
    createPlanner({ inputs, calendars, organisations }).planFor(1, resourceId, clock.now());
  });
}

async function main() {
  const results: Record<string, unknown> = { generatedAt: new Date().toISOString(), node: process.version };

  const big = world(1, 1000);
  results['resourceWith1000Tasks'] = { planMs: planCost(big, AGENT_STAFF_ID), ...(await requestCosts(big, big.generated)) };

  // An agent with a long backlog: the offer list reads what decides it for every open task, and
  // the plan places as many as fit in the 365-day horizon.
  const backlog = world(1, 20_000);
  results['resourceWith20000Tasks'] = { planMs: planCost(backlog, AGENT_STAFF_ID), ...(await requestCosts(backlog, backlog.generated, 10)) };

  // A long-lived agent: 1,000 open tasks and the 99,000 it has finished. Finished tasks are out
  // of every list and plan, so they should cost nothing there.
  const history = world(1, 100_000);
  const openIds = (history.generated.taskIds[0] as number[]).slice(0, 1000);
  history.db.prepare("UPDATE tasks SET status = 'Done', completed_at_local = '2026-01-05T10:00:00' WHERE id > ?").run(openIds.at(-1) as number);
  results['resourceWith99000DoneTasks'] = { planMs: planCost(history, AGENT_STAFF_ID), ...(await requestCosts(history, history.generated)) };

  const small = world(10, 100);
  results['smallOrganisation'] = { tasks: 1000, resources: 10, planMs: planCost(small, AGENT_STAFF_ID), ...(await requestCosts(small, small.generated)) };

  const started = performance.now();
  const large = world(1000, 100);
  const generatedMs = performance.now() - started;
  results['largeOrganisation'] = {
    tasks: 100_000, resources: 1000, generateMs: Math.round(generatedMs), planMs: planCost(large, AGENT_STAFF_ID),
    ...(await requestCosts(large, large.generated)),
  };

  // Calendars of many short intervals: the 1,000,000-minute task fills every slot left in the
  // 365-day horizon (about 17,000), so 51 tasks are offered.
  const slotted = slottedWorld();
  results['slotsCalendar'] = { planMs: planCost(slotted, AGENT_STAFF_ID), ...(await requestCosts(slotted, slotted.generated, 20)) };

  // Planned work in islands: 40,000 tasks of 1 to 5 minutes on the slotted calendar, each held
  // back to its own earliest start somewhere in the year, so each splits the free time it lands in.
  const scattered = world(1, 40_000);
  setCalendar(scattered, SLOTS);
  const scatter = scattered.db.prepare('UPDATE tasks SET estimated_minutes = ?, earliest_start_local = ? WHERE id = ?');
  scattered.db.transaction(() => {
    (scattered.generated.taskIds[0] as number[]).forEach((id, index) => {
      // A fixed stride through the year (not random), so runs compare; never in the hour from
      // 01:00, where London's clock changes and some wall times do not exist.
      const minute = (index * 7919) % (360 * 1440);
      const wall = minute % 1440 >= 60 && minute % 1440 < 120 ? minute + 60 : minute;
      scatter.run(1 + (index % 5), new Date(Date.parse('2026-11-17T00:00:00Z') + wall * 60_000).toISOString().slice(0, 19), id);
    });
  })();
  results['scatteredOnSlots'] = { planMs: planCost(scattered, AGENT_STAFF_ID), ...(await requestCosts(scattered, scattered.generated, 10)) };

  // Elapsed working time since each start, on a calendar that works across midnight.
  for (const [name, startedAt] of [['nightShiftStarted2024', '2024-01-01T09:00:00'], ['nightShiftStarted2018', '2018-01-01T09:00:00']] as const) {
    const night = world(1, 1000);
    setCalendar(night, NIGHT_SHIFT);
    night.db.prepare("UPDATE tasks SET status = 'InProgress', started_at_local = ?").run(startedAt);
    results[name] = { planMs: planCost(night, AGENT_STAFF_ID), ...(await requestCosts(night, night.generated, 20)) };
  }

  // Suggestions for 1,000 floating Incoming items on the slotted calendar, whose horizon the
  // long task fills: none fits, and each is answered from the plan's runs at once.
  const incoming = slottedWorld();
  const insertItem = incoming.db.prepare(`INSERT INTO incoming_items (id, organisation_id, recipient_id, title, estimated_minutes,
      requester, requested_at_utc, revision) VALUES (?, 1, ?, ?, 30, 'Sponsor', ?, '0b7e2f9c-5d1a-4c3e-8f6b-9a2d4e1c7b30')`);
  incoming.db.transaction(() => {
    for (let index = 1; index <= 1000; index += 1) insertItem.run(index, AGENT_STAFF_ID, `Item ${index}`, Date.parse(NOW) - index);
  })();
  const incomingToken = incoming.generated.tokens[0] as string;
  const incomingTaskId = (incoming.generated.taskIds[0] as number[])[0] as number;
  let incomingSequence = 0;
  results['incomingSuggestions'] = {
    planMs: planCost(incoming, AGENT_STAFF_ID),
    // A PATCH and then the list, so the plan and the suggestions are computed afresh each time.
    patchThenIncomingMs: await (async () => {
      const samples: number[] = [];
      for (let index = 0; index < 25; index += 1) {
        const read = await call(incoming.service, 'GET', `/api/v1/tasks/${incomingTaskId}`, incomingToken);
        incomingSequence += 1;
        const start = performance.now();
        await call(incoming.service, 'PATCH', `/api/v1/tasks/${incomingTaskId}`, incomingToken, { 'if-match': read.headers['etag'] as string }, JSON.stringify({ sequence: incomingSequence }));
        await call(incoming.service, 'GET', '/api/v1/incoming', incomingToken);
        if (index >= 5) samples.push(performance.now() - start);
      }
      return median(samples);
    })(),
  };

  const round = (value: unknown) => (typeof value === 'number' ? Number(value.toFixed(3)) : value);
  const rows = Object.keys(results).filter((name) => typeof results[name] === 'object').map((name) => {
    const entry = results[name] as Record<string, unknown>;
    return { scenario: name, ...Object.fromEntries(Object.entries(entry).map(([key, value]) => [key, round(value)])) };
  });
  console.table(rows);
  mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
  writeFileSync(new URL('./results/plan.json', import.meta.url), `${JSON.stringify({ ...results, rows }, null, 2)}\n`);
}

await main();
