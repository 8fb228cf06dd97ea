import type { Db } from './open.js';

/** Statements on the per-organisation workspace version, which every task ETag embeds. */
export function organisationStatements(db: Db) {
  const selectVersion = db.prepare<[number], { version: number }>(
    'SELECT workspace_version AS version FROM organisations WHERE id = ?',
  );
  const bumpVersion = db.prepare<[number]>(
    'UPDATE organisations SET workspace_version = workspace_version + 1 WHERE id = ?',
  );
  return {
    workspaceVersion(organisationId: number): number {
      return selectVersion.get(organisationId)?.version ?? 1;
    },
    bumpWorkspaceVersion(organisationId: number): void {
      bumpVersion.run(organisationId);
    },
  };
}

export type OrganisationStatements = ReturnType<typeof organisationStatements>;

/** `PRAGMA application_id` of a copy `backup` made, until the service first opens it in place of its database. */
export const BACKUP_COPY_ID = 0x77746162;

/**
 * Moves every organisation's workspace version past any this file's database may have issued
 * since it was copied, for a copy put back in its place: without it the versions start again
 * from the copy's, and an ETag an agent kept from before the restore would name a different
 * state (a 304 over changed data, a write over a state it never read). What was issued after the
 * copy is not in it, so the floor is the time in microseconds: no file takes a write a
 * microsecond, so no version issued before now, after any number of restores, reaches it. The
 * floor is kept (`restores`) for organisations loaded later, which the copy may not hold; the
 * mark goes, so the next open moves nothing. One transaction, the mark looked at again under the
 * write lock: two processes opening the copy at once move the versions once.
 */
export function moveVersionsPastRestore(db: Db, nowMs: number): void {
  const floor = Math.floor(nowMs) * 1000;
  db.transaction(() => {
    if (db.pragma('application_id', { simple: true }) !== BACKUP_COPY_ID) return;
    db.prepare('UPDATE organisations SET workspace_version = max(workspace_version + 1, ?)').run(floor);
    db.prepare('INSERT INTO restores (restored_utc, version_floor) VALUES (?, ?)').run(Math.floor(nowMs), floor);
    db.pragma('application_id = 0');
  }).immediate();
}
