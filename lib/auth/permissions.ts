import { ServiceError } from '../domain/errors.js';
import type { Principal } from './authenticate.js';
import type { Scope } from './scopes.js';

/** Who may call: nobody needs to authenticate, any client, or only clients mapped to a resource. */
export type Caller = 'anonymous' | 'any-client' | 'resource-client';

/** What an operation asks of its caller, as the route table declares it. */
export interface CallerRequirements {
  readonly caller: Caller;
  readonly scope: Scope | null;
  /** Body members that need a further scope, checked once the body is parsed. */
  readonly memberScopes?: readonly { readonly member: string; readonly scope: Scope }[];
}

/** Contract 1, step 5: identity-only clients may only read their identity; every other operation needs its scope. */
export function assertMayCall(requirements: CallerRequirements, principal: Principal): void {
  if (requirements.caller === 'resource-client' && principal.resource === null) {
    throw new ServiceError('permission_denied', 'identity-only client');
  }
  if (requirements.scope !== null && !principal.has(requirements.scope)) {
    throw new ServiceError('permission_denied', `missing scope ${requirements.scope}`);
  }
}

/**
 * Scopes that single body members need on top of the operation's (`tasks:time` for
 * `actualIntervals` in PATCH). A business rule (contract 1, step 11): the write runner checks it
 * after If-Match and the claim header, and before a replay, which needs current authorisation.
 */
export function assertMemberScopes(requirements: CallerRequirements, body: unknown, principal: Principal): void {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return;
  for (const { member, scope } of requirements.memberScopes ?? []) {
    if (Object.hasOwn(body, member) && !principal.has(scope)) {
      throw new ServiceError('permission_denied', `${member} needs scope ${scope}`);
    }
  }
}
