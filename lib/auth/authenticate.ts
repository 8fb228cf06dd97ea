import { ServiceError } from '../domain/errors.js';
import type { ClientStatements } from '../store/clients.js';
import { isScope, SCOPES, type Scope } from './scopes.js';
import { hashToken } from './token.js';

/** The authenticated caller. */
export interface Principal {
  readonly clientId: number;
  readonly clientName: string;
  readonly organisationId: number;
  readonly organisationName: string;
  /** The mapped worker; null for an identity-only client. */
  readonly resource: { readonly id: number; readonly name: string } | null;
  /** Granted scopes in the spec's order. */
  readonly scopes: readonly Scope[];
  has(scope: Scope): boolean;
}

const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** How many verified credentials a service keeps in memory (a full cache starts over). */
export const CREDENTIAL_CACHE_SIZE = 10_000;

/**
 * `authenticate` with verified credentials kept in memory, keyed by the token itself so a hit
 * costs neither the hash nor the query. An entry holds only while the credential generation it
 * was verified under is current: any change to clients, scopes, staff or organisations, by any
 * connection, moves the generation, so a revocation takes effect on the next request. Failures
 * are never cached.
 */
export function cachedAuthenticator(clients: ClientStatements, maxEntries = CREDENTIAL_CACHE_SIZE) {
  const verified = new Map<string, { readonly principal: Principal; readonly generation: number }>();
  return (authorization: string | undefined, generation: number, cacheable: boolean): Principal => {
    if (authorization !== undefined) {
      const hit = verified.get(authorization);
      if (hit !== undefined && hit.generation === generation) return hit.principal;
    }
    const principal = authenticate(authorization, clients);
    // `cacheable` is false when the generation may be uncommitted (SnapshotStatements.credentialsCommitted).
    if (cacheable && authorization !== undefined) {
      if (verified.size >= maxEntries) verified.clear();
      verified.set(authorization, { principal, generation });
    }
    return principal;
  };
}

/**
 * Resolves `Authorization: Bearer <token>` to a principal. Every failure is the same 401, so a
 * caller cannot learn whether a token exists, is revoked or has an inactive sponsor.
 */
export function authenticate(authorization: string | undefined, clients: ClientStatements): Principal {
  const match = authorization === undefined ? null : BEARER.exec(authorization);
  const token = match?.[1];
  if (token === undefined) throw new ServiceError('authentication_failed', 'missing or malformed bearer credential');
  const row = clients.credentialByTokenHash(hashToken(token));
  if (row === undefined) throw new ServiceError('authentication_failed', 'unknown credential');
  if (row.clientActive !== 1) throw new ServiceError('authentication_failed', 'client revoked');
  if (row.organisationActive !== 1) throw new ServiceError('authentication_failed', 'organisation inactive');
  if (row.sponsorActive !== 1 || row.sponsorKind !== 'human' || row.sponsorOrganisationId !== row.organisationId) {
    throw new ServiceError('authentication_failed', 'sponsor inactive');
  }
  let resource: Principal['resource'] = null;
  if (row.resourceId !== null) {
    if (row.resourceActive !== 1 || row.resourceOrganisationId !== row.organisationId || row.resourceName === null) {
      throw new ServiceError('authentication_failed', 'resource inactive');
    }
    resource = { id: row.resourceId, name: row.resourceName };
  }
  const granted = new Set((row.scopes ?? '').split(' ').filter(isScope));
  const scopes = SCOPES.filter((scope) => granted.has(scope));
  return {
    clientId: row.clientId,
    clientName: row.clientName,
    organisationId: row.organisationId,
    organisationName: row.organisationName,
    resource,
    scopes,
    has: (scope) => granted.has(scope),
  };
}
