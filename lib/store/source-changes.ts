import type { Db } from './open.js';

/** Source changes as evaluation needs them. */
export function sourceChangeStatements(db: Db) {
  const change = db.prepare<[{ id: number; taskId: number }], { id: number; acknowledgedUtc: number | null }>(
    'SELECT id, acknowledged_utc AS acknowledgedUtc FROM source_changes WHERE id = @id AND task_id = @taskId');
  const acknowledge = db.prepare<[{ id: number; now: number }]>('UPDATE source_changes SET acknowledged_utc = @now WHERE id = @id');
  return {
    changeOfTask: (id: number, taskId: number) => change.get({ id, taskId }),
    acknowledge: (id: number, now: number) => acknowledge.run({ id, now }),
  };
}

export type SourceChangeStatements = ReturnType<typeof sourceChangeStatements>;
