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
