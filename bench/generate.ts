import type Database from 'better-sqlite3';
import { hashToken } from '../lib/auth/token.js';
import { SCOPES } from '../lib/auth/scopes.js';
import { openDatabase } from '../lib/store/open.js';

export interface GeneratedOrganisation {
  readonly organisationId: number;
  /** Bearer token of each agent's client, by agent index. */
  readonly tokens: readonly string[];
  /** Task ids of each agent, by agent index. */
  readonly taskIds: readonly (readonly number[])[];
}

export interface GenerateOptions {
  readonly organisationId: number;
  readonly agents: number;
  readonly tasksPerAgent: number;
  /** First id for staff, clients, projects and tasks; keeps organisations in one file apart. */
  readonly idBase: number;
}

/**
 * Writes an organisation straight into the database (bulk SQL, not the fixture loader, so a
 * 100,000-task organisation takes seconds): one sponsor, `agents` agents with the default
 * calendar and a client each, 10 projects, and `tasksPerAgent` Ready tasks per agent, a tenth of
 * them depending on the previous task of the same agent.
 */
export function generateOrganisation(database: Database.Database, options: GenerateOptions): GeneratedOrganisation {
  const { db } = openDatabase(database);
  const { organisationId, agents, tasksPerAgent, idBase } = options;
  const tokens: string[] = [];
  const taskIds: number[][] = [];
  const insert = {
    organisation: db.prepare('INSERT INTO organisations (id, name) VALUES (?, ?)'),
    staff: db.prepare("INSERT INTO staff (id, organisation_id, name, kind) VALUES (?, ?, ?, ?)"),
    calendar: db.prepare('INSERT INTO calendar_intervals (staff_id, weekday, start_minute, end_minute) VALUES (?, ?, 540, 1020)'),
    client: db.prepare('INSERT INTO api_clients (id, organisation_id, name, token_hash, sponsor_id, resource_id) VALUES (?, ?, ?, ?, ?, ?)'),
    scope: db.prepare('INSERT INTO api_client_scopes (client_id, scope) VALUES (?, ?)'),
    project: db.prepare("INSERT INTO projects (id, organisation_id, name, priority_name) VALUES (?, ?, ?, ?)"),
    stage: db.prepare("INSERT INTO stages (id, kind) VALUES (?, 'task')"),
    task: db.prepare(`INSERT INTO tasks (id, organisation_id, project_id, title, sequence, estimated_minutes)
      VALUES (?, ?, ?, ?, ?, ?)`),
    assignment: db.prepare('INSERT INTO task_assignments (task_id, staff_id) VALUES (?, ?)'),
    dependency: db.prepare('INSERT INTO task_dependencies (task_id, prerequisite_id) VALUES (?, ?)'),
  };
  const priorities = ['critical', 'high', 'normal', 'low'];
  db.transaction(() => {
    insert.organisation.run(organisationId, `Generated ${organisationId}`);
    const sponsorId = idBase;
    insert.staff.run(sponsorId, organisationId, 'Sponsor', 'human');
    for (let project = 0; project < 10; project += 1) {
      insert.project.run(idBase + project, organisationId, `Project ${project}`, priorities[project % 4]);
    }
    let taskId = idBase;
    for (let agent = 0; agent < agents; agent += 1) {
      const staffId = idBase + 1 + agent;
      insert.staff.run(staffId, organisationId, `Agent ${agent}`, 'agent');
      for (let weekday = 1; weekday <= 5; weekday += 1) insert.calendar.run(staffId, weekday);
      const token = `wta_bench_${organisationId}_${agent}_${'x'.repeat(16)}`;
      tokens.push(token);
      insert.client.run(staffId, organisationId, `agent-${agent}`, hashToken(token), sponsorId, staffId);
      for (const scope of SCOPES) insert.scope.run(staffId, scope);
      const ids: number[] = [];
      for (let index = 0; index < tasksPerAgent; index += 1) {
        insert.stage.run(taskId);
        insert.task.run(taskId, organisationId, idBase + (index % 10), `Task ${index} of agent ${agent}`, index, 30 + (index % 7) * 15);
        insert.assignment.run(taskId, staffId);
        if (index % 10 === 9) insert.dependency.run(taskId, taskId - 1);
        ids.push(taskId);
        taskId += 1;
      }
      taskIds.push(ids);
    }
  })();
  return { organisationId, tokens, taskIds };
}
