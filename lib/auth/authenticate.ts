import { ServiceError } from '../domain/errors.js';
import type { ClientStatements } from '../store/clients.js';
import { isScope, SCOPES, type Scope } from './scopes.js';
import { hashToken, TOKEN_CHARACTERS } from './token.js';

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

/** A client's worker. */
export type Worker = NonNullable<Principal['resource']>;

/**
 * The worker a client acts as. The pipeline refuses identity-only clients every operation but
 * `GET /identity` (step 5); a use case reaching for the worker states the rule again, not inline.
 */
export function workerOf(principal: Principal): Worker {
  if (principal.resource === null) throw new ServiceError('permission_denied', 'identity-only client');
  return principal.resource;
}

const BEARER = new RegExp(`^Bearer +(${TOKEN_CHARACTERS}) *$`, 'i');

/** How many verified credentials a service keeps in memory (a full cache starts over). */
const CREDENTIAL_CACHE_SIZE = 10_000;

/** The token of an `Authorization: Bearer <token>` header (any case of the scheme, any spaces). */
function bearerToken(authorization: string | undefined): string | undefined {
  return authorization === undefined ? undefined : BEARER.exec(authorization)?.[1];
}

/**
 * Resolves `Authorization: Bearer <token>` to a principal, with verified credentials kept in
 * memory, keyed by the token itself (not the header, whose scheme case and padding a client may
 * vary at will, each variant an entry of up to a header's size) so a hit costs neither the hash
 * nor the query. An entry holds only while the credential generation it was verified under is
 * current: any change to clients, scopes, staff or organisations, by any connection, moves the
 * generation, so a revocation takes effect on the next request. Failures are never cached.
 */
export function cachedAuthenticator(clients: ClientStatements, maxEntries = CREDENTIAL_CACHE_SIZE) {
  const verified = new Map<string, { readonly principal: Principal; readonly generation: number }>();
  const current = (token: string | undefined, generation: number): Principal | undefined => {
    const entry = token === undefined ? undefined : verified.get(token);
    return entry !== undefined && entry.generation === generation ? entry.principal : undefined;
  };
  return (authorization: string | undefined, generation: number, cacheable: boolean): Principal => {
    // The common spelling first, without the regex: keys are only ever tokens the regex took out.
    const quick = authorization?.startsWith('Bearer ') === true ? authorization.slice(7) : undefined;
    const quickHit = current(quick, generation);
    if (quickHit !== undefined) return quickHit;
    const token = bearerToken(authorization);
    const hit = token === quick ? undefined : current(token, generation);
    if (hit !== undefined) return hit;
    const principal = principalOf(token, clients);
    // `cacheable` is false when the generation may be uncommitted (SnapshotStatements.credentialsCommitted).
    if (cacheable && token !== undefined) {
      if (verified.size >= maxEntries) verified.clear();
      verified.set(token, { principal, generation });
    }
    return principal;
  };
}

/**
 * Every failure is the same 401, so a caller cannot learn whether a token exists, is revoked or
 * has an inactive sponsor.
 */
function principalOf(token: string | undefined, clients: ClientStatements): Principal {
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
