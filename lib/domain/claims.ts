import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/authenticate.js';
import type { ClaimStatements, LeaseRow } from '../store/claims.js';
import type { TaskReadStatements } from '../store/task-reads.js';
import type { Allocation } from './tasks/read.js';
import { formatUtc } from '../time/london.js';
import { ServiceError } from './errors.js';
import type { MutationOutcome } from './outcome.js';
import { isBlocked, isRunnable } from './tasks/state.js';

export const LEASE_MS = 15 * 60 * 1000;

export interface ClaimDependencies {
  readonly reads: TaskReadStatements;
  readonly claims: ClaimStatements;
  readonly allocation: Allocation;
}

/** Leases (contract 2): acquisition, renewal and release. */
export function claimUseCases(deps: ClaimDependencies) {
  const { reads, claims } = deps;

  /** The caller's live lease on this task named by `token`; anything else is claim_expired. */
  function ownLiveLease(principal: Principal, taskId: number, token: string, now: number): LeaseRow {
    const lease = claims.liveLeaseByToken(token.toLowerCase(), now);
    if (lease === undefined || lease.taskId !== taskId || lease.clientId !== principal.clientId) {
      throw new ServiceError('claim_expired');
    }
    return lease;
  }

  /** The acquisition checks in contract order: Done, blocked, otherwise not runnable, live lease. */
  function assertClaimable(principal: Principal, taskId: number, now: number): void {
    const row = reads.task(taskId, now);
    if (row === undefined) throw new ServiceError('task_not_found');
    if (row.status === 'Done') throw new ServiceError('task_completed');
    if (isBlocked(row)) throw new ServiceError('task_blocked');
    if (!isRunnable(row, now, deps.allocation(principal, now).allocated)) throw new ServiceError('task_not_runnable');
    if (row.liveClaimExpiresUtc !== null) throw new ServiceError('task_claimed');
  }

  return {
    assertClaimable,

    claim(principal: Principal, taskId: number, now: number): MutationOutcome {
      assertClaimable(principal, taskId, now);
      const token = randomUUID();
      const expiresUtc = now + LEASE_MS;
      claims.insert(taskId, principal.clientId, token, now, expiresUtc);
      return { body: { token, expiresUtc: formatUtc(expiresUtc) }, changed: true };
    },

    renew(principal: Principal, taskId: number, token: string, now: number): MutationOutcome {
      const lease = ownLiveLease(principal, taskId, token, now);
      const expiresUtc = now + LEASE_MS;
      claims.extend(lease.id, expiresUtc);
      return { body: { token: lease.token, expiresUtc: formatUtc(expiresUtc) }, changed: true };
    },

    release(principal: Principal, taskId: number, token: string, now: number): MutationOutcome {
      const lease = ownLiveLease(principal, taskId, token, now);
      claims.release(lease.id, now);
      return { body: { released: true, releasedUtc: formatUtc(now) }, changed: true };
    },
  };
}

export type ClaimUseCases = ReturnType<typeof claimUseCases>;
