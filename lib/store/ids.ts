import { INT32_MAX } from '../domain/limits.js';

/**
 * SQL for the id a new row of `table` gets: one past the highest, or, once the highest is the
 * last int32 (ids are int32 in the API, and a fixture may seed that one), the lowest free id.
 * SQLite's own choice would be max + 1, which the table's CHECK refuses, and every later insert
 * with it. The search for a free id runs only in that case and stops at the first gap.
 */
export function nextIdSql(table: 'stages' | 'incoming_items' | 'api_clients'): string {
  return `(SELECT CASE
      WHEN coalesce(max(id), 0) < ${INT32_MAX} THEN coalesce(max(id), 0) + 1
      WHEN NOT EXISTS (SELECT 1 FROM ${table} WHERE id = 1) THEN 1
      ELSE (SELECT used.id + 1 FROM ${table} used
             WHERE NOT EXISTS (SELECT 1 FROM ${table} above WHERE above.id = used.id + 1) ORDER BY used.id LIMIT 1)
    END FROM ${table})`;
}
