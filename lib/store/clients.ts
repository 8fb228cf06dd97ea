import type { Db } from './open.js';

export interface CredentialRow {
  clientId: number;
  clientName: string;
  clientActive: number;
  organisationId: number;
  organisationName: string;
  organisationActive: number;
  sponsorActive: number;
  sponsorKind: string;
  sponsorOrganisationId: number;
  resourceId: number | null;
  resourceName: string | null;
  resourceActive: number | null;
  resourceOrganisationId: number | null;
  scopes: string | null;
}

/** Looks up a credential by token hash with everything authentication must check, in one query. */
export function clientStatements(db: Db) {
  const byTokenHash = db.prepare<[string], CredentialRow>(`
    SELECT c.id AS clientId, c.name AS clientName, c.is_active AS clientActive,
           o.id AS organisationId, o.name AS organisationName, o.is_active AS organisationActive,
           sp.is_active AS sponsorActive, sp.kind AS sponsorKind, sp.organisation_id AS sponsorOrganisationId,
           r.id AS resourceId, r.name AS resourceName, r.is_active AS resourceActive,
           r.organisation_id AS resourceOrganisationId,
           (SELECT group_concat(scope, ' ') FROM api_client_scopes s WHERE s.client_id = c.id) AS scopes
      FROM api_clients c
      JOIN organisations o ON o.id = c.organisation_id
      JOIN staff sp ON sp.id = c.sponsor_id
      LEFT JOIN staff r ON r.id = c.resource_id
     WHERE c.token_hash = ?`);
  return {
    credentialByTokenHash(tokenHash: string): CredentialRow | undefined {
      return byTokenHash.get(tokenHash);
    },
  };
}

export type ClientStatements = ReturnType<typeof clientStatements>;
