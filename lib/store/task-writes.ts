import type { Db } from './open.js';
import { BLOCKING_COLUMNS, type TaskRow } from './task-reads.js';

/** The editable columns of a task, as PATCH writes them back. */
export type TaskUpdate = Pick<
  TaskRow,
  | 'id' | 'title' | 'description' | 'status' | 'sequence' | 'estimatedMinutes' | 'startedAt' | 'completedAt'
  | 'earliestStart' | 'releaseDate' | 'isWaiting' | 'resourceMode'
>;

/** What a write needs to know of a task: its own columns and whether it is blocked. */
export type EditableTask = TaskUpdate & Pick<TaskRow, 'organisationId' | 'unmetPrerequisites' | 'humanBlocker'>;

export interface IntervalInsert {
  taskId: number;
  staffId: number;
  start: string;
  end: string;
  startUtc: number;
  endUtc: number;
}

/** Writes on tasks and their child rows; every statement is prepared once. */
export function taskWriteStatements(db: Db) {
  // Not the read model's task query: a write needs none of the project or child-collection columns.
  const editable = db.prepare<[number], EditableTask>(`
    SELECT t.id, t.organisation_id AS organisationId, t.title, t.description, t.status, t.sequence,
           t.estimated_minutes AS estimatedMinutes, t.started_at_local AS startedAt, t.completed_at_local AS completedAt,
           t.earliest_start_local AS earliestStart, t.release_date_local AS releaseDate, t.is_waiting AS isWaiting,
           t.resource_mode AS resourceMode, ${BLOCKING_COLUMNS}
      FROM tasks t WHERE t.id = ?`);
  const exists = db.prepare<[number], number>('SELECT 1 FROM tasks WHERE id = ?').pluck();
  const update = db.prepare<[TaskUpdate]>(`
    UPDATE tasks SET title = @title, description = @description, status = @status, sequence = @sequence,
           estimated_minutes = @estimatedMinutes, started_at_local = @startedAt, completed_at_local = @completedAt,
           earliest_start_local = @earliestStart, release_date_local = @releaseDate, is_waiting = @isWaiting,
           resource_mode = @resourceMode
     WHERE id = @id`);
  const setOwnEstimate = db.prepare<[{ taskId: number; staffId: number; estimatedMinutes: number }]>(`
    UPDATE task_assignments SET estimated_minutes = @estimatedMinutes
     WHERE task_id = @taskId AND staff_id = @staffId AND estimated_minutes IS NOT NULL`);
  const tasksAmong = db.prepare<[{ ids: string }], { id: number; organisationId: number; status: string }>(`
    SELECT id, organisation_id AS organisationId, status FROM tasks WHERE id IN (SELECT value FROM json_each(@ids))`);
  // A cycle appears exactly when the task is reachable from one of its new prerequisites.
  // UNION (not UNION ALL) visits each task once, so long chains stay linear.
  const reachable = db.prepare<[{ ids: string; taskId: number }], { found: number }>(`
    WITH RECURSIVE reach (id) AS (
      SELECT value FROM json_each(@ids)
      UNION SELECT d.prerequisite_id FROM task_dependencies d JOIN reach r ON d.task_id = r.id)
    SELECT 1 AS found FROM reach WHERE id = @taskId LIMIT 1`);
  const clearDependencies = db.prepare<[number]>('DELETE FROM task_dependencies WHERE task_id = ?');
  const insertDependencies = db.prepare<[{ taskId: number; ids: string }]>(`
    INSERT INTO task_dependencies (task_id, prerequisite_id) SELECT @taskId, value FROM json_each(@ids)`);
  const intervalCount = db.prepare<[number], { count: number }>('SELECT count(*) AS count FROM actual_intervals WHERE task_id = ?');
  const otherIntervalCount = db.prepare<[{ taskId: number; staffId: number }], { count: number }>(
    'SELECT count(*) AS count FROM actual_intervals WHERE task_id = @taskId AND staff_id <> @staffId');
  const clearOwnIntervals = db.prepare<[{ taskId: number; staffId: number }]>(
    'DELETE FROM actual_intervals WHERE task_id = @taskId AND staff_id = @staffId');
  const insertInterval = db.prepare<[IntervalInsert]>(`
    INSERT INTO actual_intervals (task_id, staff_id, start_local, end_local, start_utc, end_utc)
    VALUES (@taskId, @staffId, @start, @end, @startUtc, @endUtc)`);
  const insertNote = db.prepare<[{ taskId: number; clientId: number; staffId: number; text: string; now: number }]>(`
    INSERT INTO notes (task_id, client_id, staff_id, text, created_utc) VALUES (@taskId, @clientId, @staffId, @text, @now)`);

  return {
    editable: (taskId: number) => editable.get(taskId),
    exists: (taskId: number) => exists.get(taskId) !== undefined,
    update: (task: TaskUpdate) => update.run(task),
    /** Sets `staffId`'s own estimate on the task, only where that assignee has one. */
    followOwnEstimate: (taskId: number, staffId: number, estimatedMinutes: number) =>
      setOwnEstimate.run({ taskId, staffId, estimatedMinutes }),
    tasksAmong: (ids: readonly number[]) => tasksAmong.all({ ids: JSON.stringify(ids) }),
    reaches: (fromIds: readonly number[], taskId: number) => reachable.get({ ids: JSON.stringify(fromIds), taskId }) !== undefined,
    replaceDependencies(taskId: number, ids: readonly number[]): void {
      clearDependencies.run(taskId);
      insertDependencies.run({ taskId, ids: JSON.stringify(ids) });
    },
    intervalCount: (taskId: number) => intervalCount.get(taskId)?.count ?? 0,
    /** Intervals of contributors other than `staffId`: the ones a replacement of its own leaves. */
    otherIntervalCount: (taskId: number, staffId: number) => otherIntervalCount.get({ taskId, staffId })?.count ?? 0,
    replaceOwnIntervals(taskId: number, staffId: number, intervals: readonly IntervalInsert[]): void {
      clearOwnIntervals.run({ taskId, staffId });
      for (const interval of intervals) insertInterval.run(interval);
    },
    insertNote: (taskId: number, clientId: number, staffId: number, text: string, now: number) =>
      insertNote.run({ taskId, clientId, staffId, text, now }),
  };
}

export type TaskWriteStatements = ReturnType<typeof taskWriteStatements>;
