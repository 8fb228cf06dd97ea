import type { ResourceMode, TaskStatus } from '../domain/enumerations.js';
import type { Db } from './open.js';
import { namedRows } from './rows.js';
import { BLOCKED_CONDITION } from './task-reads.js';

/** A task as the scheduler needs it, seen from one assignee. */
export interface PlanTaskRow {
  id: number;
  status: TaskStatus;
  estimatedMinutes: number;
  resourceMode: ResourceMode;
  startedAt: string | null;
  earliestStart: string | null;
  releaseDate: string | null;
  ownEstimate: number | null;
  assigneeCount: number;
  blocked: number;
}

export interface AcceptedIncomingRow {
  id: number;
  lifecycle: 'planned' | 'inprogress';
  plannedStart: string | null;
  actualStartUtc: number | null;
  estimatedMinutes: number;
}

/** The two reads a resource's plan is computed from. */
export function planInputStatements(db: Db) {
  const tasks = namedRows(db.prepare<[number], PlanTaskRow>(`
    SELECT t.id, t.status, t.estimated_minutes AS estimatedMinutes, t.resource_mode AS resourceMode,
           t.started_at_local AS startedAt, t.earliest_start_local AS earliestStart,
           t.release_date_local AS releaseDate,
           (SELECT a.estimated_minutes FROM task_assignments a WHERE a.task_id = t.id AND a.staff_id = mine.staff_id) AS ownEstimate,
           (SELECT count(*) FROM task_assignments a WHERE a.task_id = t.id) AS assigneeCount,
           ${BLOCKED_CONDITION} AS blocked
      FROM open_assignments mine
      JOIN tasks t ON t.id = mine.task_id
      JOIN projects p ON p.id = t.project_id
     WHERE mine.staff_id = ? AND t.status <> 'Done'
     ORDER BY p.priority, p.id, t.sequence, t.id`));
  const accepted = namedRows(db.prepare<[number], AcceptedIncomingRow>(`
    SELECT id, lifecycle, planned_start_local AS plannedStart, actual_start_utc AS actualStartUtc,
           estimated_minutes AS estimatedMinutes
      FROM incoming_items
     WHERE recipient_id = ? AND lifecycle IN ('planned', 'inprogress')
     ORDER BY CASE lifecycle WHEN 'inprogress' THEN 0 ELSE 1 END, actual_start_utc, planned_start_local, id`));
  return {
    tasks: (staffId: number) => tasks.all(staffId),
    acceptedIncoming: (staffId: number) => accepted.all(staffId),
  };
}

export type PlanInputStatements = ReturnType<typeof planInputStatements>;
