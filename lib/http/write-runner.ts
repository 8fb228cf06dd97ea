import { createHash } from 'node:crypto';
import type { Principal } from '../auth/authenticate.js';
import { ServiceError } from '../domain/errors.js';
import type { MutationOutcome } from '../domain/outcome.js';
import { taskEtag } from '../domain/tasks/view.js';
import type { RequestHeaders } from './headers.js';
import { BASE_PATH, type OperationSpec } from './operations.js';
import { claimToken, idempotencyKey, incomingIfMatch, taskIfMatch } from './preconditions.js';
import type { ServiceResponse } from './types.js';
import type { ClaimStatements } from '../store/claims.js';
import type { GroupCommit } from '../store/group-commit.js';
import type { Db } from '../store/open.js';
import type { OrganisationStatements } from '../store/organisations.js';
import type { ReceiptStatements } from '../store/receipts.js';

/**
 * What a receipt keeps of its request: a digest, not the text, which is as long as the body (up
 * to 131072 bytes), and kept a day for every keyed write.
 */
const fingerprintDigest = (fingerprint: string): string => createHash('sha256').update(fingerprint, 'utf8').digest('hex');

export interface WriteRequest {
  readonly principal: Principal;
  readonly operation: OperationSpec;
  readonly method: string;
  /** The operation's path with the parsed id (however the id was spelled), part of the fingerprint. */
  readonly path: string;
  /** The task (or other target) id of the path. */
  readonly id: number;
  readonly now: number;
  readonly headers: RequestHeaders;
  /** Canonical body text (members sorted, numbers as sent); `{}` for an absent EmptyRequest body. */
  readonly canonicalBody: string;
  /** Throws 403 when a body member needs a scope the client lacks (contract 1, step 11). */
  readonly assertMemberScopes: () => void;
}

/**
 * Answers of writes whose transaction has committed. Nothing a later batch or close() does can
 * undo them, so the pipeline sends them as they are (see `isCommittedAnswer`).
 */
const committedAnswers = new WeakSet<ServiceResponse>();

/** Whether `response` is a write's answer made by a transaction that has committed. */
export function isCommittedAnswer(response: ServiceResponse): boolean {
  return committedAnswers.has(response);
}

function committed(response: ServiceResponse): ServiceResponse {
  committedAnswers.add(response);
  return response;
}

/** Headers a replay repeats (contract 3), besides the content type of a stored body. */
const REPLAYED_HEADERS = ['etag', 'location', 'warning'] as const;

export interface MutationDependencies {
  readonly db: Db;
  /** Batches writes into shared, durable commits; without it each write commits on its own. */
  readonly commits?: GroupCommit;
  readonly receipts: ReceiptStatements;
  readonly organisations: OrganisationStatements;
  readonly claims: ClaimStatements;
  /** The current revision of an Incoming item (bare UUID), for Incoming actions. */
  readonly incomingRevision: (incomingId: number) => string | undefined;
  /** True once the service is closed: a write still under way (a claim back from its source) stops. */
  readonly closed?: () => boolean;
}

/** Step 9 for one kind of target: the task ETag (task writes) or the Incoming revision. */
interface Precondition {
  /** The current tag, quoted: sent with every 412 so a client can recover without a re-read. */
  readonly current: string;
  /** Throws 428 when the header is missing and 412 when it is malformed; else whether it is current. */
  matches(header: string | undefined): boolean;
  /** The ETag to answer with after the write. */
  after(changed: boolean): string;
}

/**
 * Runs a write (on a task, or an Incoming action) through steps 8 to 11 of contract 1 as one
 * transaction, a savepoint of the group commit's batch: idempotency receipt (replay or conflict),
 * If-Match (task ETag or Incoming revision), the X-Task-Claim rules, the use case, the workspace
 * version bump and the new receipt. Any failure rolls back all of it, receipt included.
 */
export function mutationRunner(deps: MutationDependencies) {
  const { receipts, organisations, claims } = deps;

  function checkClaimHeader(request: WriteRequest): void {
    const token = claimToken(request.headers.get('x-task-claim'));
    const live = claims.liveLease(request.id, request.now);
    if (live !== undefined) {
      if (token === null || token !== live.token || live.clientId !== request.principal.clientId) {
        throw new ServiceError('task_claimed', 'a live lease exists');
      }
    } else if (token !== null) {
      throw new ServiceError('claim_expired', 'no live lease');
    }
  }

  function taskPrecondition(taskId: number, version: number): Precondition {
    return {
      current: taskEtag(taskId, version),
      matches(header) {
        const etag = taskIfMatch(header);
        return etag.taskId === taskId && etag.version === version;
      },
      after: (changed) => taskEtag(taskId, changed ? version + 1 : version),
    };
  }

  function incomingPrecondition(incomingId: number): Precondition {
    const revision = deps.incomingRevision(incomingId) ?? '';
    return {
      current: `"${revision}"`,
      matches: (header) => incomingIfMatch(header) === revision,
      after: () => `"${deps.incomingRevision(incomingId) ?? revision}"`,
    };
  }

  /**
   * Every 412 carries the current tag (contract 4): a malformed If-Match too, and a stale
   * revision found by the use case itself (external evaluation checks a body revision).
   */
  function withCurrentTag<T>(precondition: Precondition, action: () => T): T {
    try {
      return action();
    } catch (error) {
      if (error instanceof ServiceError && error.code === 'stale_update' && error.headers?.['etag'] === undefined) {
        throw new ServiceError('stale_update', error.detail, { etag: precondition.current });
      }
      throw error;
    }
  }

  function replay(receiptStatus: number, headersText: string, body: string | null): ServiceResponse {
    const headers = JSON.parse(headersText) as Record<string, string>;
    headers['idempotent-replayed'] = 'true';
    return body === null ? { status: receiptStatus, headers } : { status: receiptStatus, headers, body };
  }

  /**
   * Steps 8-11. With `apply` null it stops after step 10 and the `precheck`: a dry run that says
   * whether the write would be refused, used before awaiting I/O that must not happen inside a
   * transaction (a claim's source refresh). It then answers null, or a replay.
   */
  function steps(request: WriteRequest, apply: (() => MutationOutcome) | null, precheck?: () => void): ServiceResponse | null {
    const { principal, operation, now } = request;
    const key = idempotencyKey(request.headers.get('idempotency-key'), operation.idempotencyKey);
    const fingerprint = `${request.method} ${request.path}\n${request.canonicalBody}`;
    // Only a keyed write keeps (or looks up) a receipt.
    const digest = key === null ? '' : fingerprintDigest(fingerprint);
    const organisationId = principal.organisationId;

    receipts.purgeExpired(now);
    claims.purgeEnded(now);
    const version = organisations.workspaceVersion(organisationId);
    const precondition =
      operation.ifMatch === 'incoming-revision' ? incomingPrecondition(request.id) : taskPrecondition(request.id, version);
    const ifMatch = request.headers.get('if-match');
    if (key !== null) {
      const receipt = receipts.find(organisationId, principal.clientId, key, now);
      if (receipt !== undefined) {
        // A receipt stored before digests were (a day's worth after an upgrade) holds the text.
        if (receipt.fingerprint !== digest && receipt.fingerprint !== fingerprint) throw new ServiceError('idempotency_conflict');
        // A replay still needs a present, well-formed If-Match; a stale one is fine.
        withCurrentTag(precondition, () => precondition.matches(ifMatch));
        request.assertMemberScopes();
        return replay(receipt.status, receipt.headers, receipt.body);
      }
    }

    if (!withCurrentTag(precondition, () => precondition.matches(ifMatch))) {
      throw new ServiceError('stale_update', 'stale If-Match', { etag: precondition.current });
    }
    if (operation.claimHeader) checkClaimHeader(request);
    request.assertMemberScopes();
    if (apply === null) {
      precheck?.();
      return null;
    }

    const outcome = withCurrentTag(precondition, apply);
    if (outcome.changed) organisations.bumpWorkspaceVersion(organisationId);
    const headers: Record<string, string> = { etag: precondition.after(outcome.changed) };
    const { location } = operation.success;
    if (outcome.createdId !== undefined && location !== undefined) {
      headers['location'] = BASE_PATH + location.replace('{id}', String(outcome.createdId));
    }
    if (outcome.deprecation !== undefined) headers['warning'] = `299 worker-task-api "${outcome.deprecation}"`;
    const { status } = operation.success;
    const response: ServiceResponse = { status, headers };
    if (outcome.body !== undefined) {
      headers['content-type'] = 'application/json';
      response.body = JSON.stringify(outcome.body);
    }
    if (key !== null) {
      const stored: Record<string, string> = {};
      for (const name of [...REPLAYED_HEADERS, 'content-type'] as const) {
        const value = headers[name];
        if (value !== undefined) stored[name] = value;
      }
      receipts.store(organisationId, principal.clientId, key, now, {
        fingerprint: digest,
        status,
        headers: JSON.stringify(stored),
        body: response.body ?? null,
      });
    }
    return response;
  }

  // Created once: better-sqlite3 turns it into BEGIN IMMEDIATE, or a savepoint inside a batch.
  const execute = deps.db.transaction(steps);

  return {
    /** Answers once the write is durable (after its group commit). */
    run(request: WriteRequest, apply: () => MutationOutcome): ServiceResponse | Promise<ServiceResponse> {
      if (deps.closed?.() === true) throw new ServiceError('temporarily_unavailable', 'the service is closed', { 'retry-after': '1' });
      const work = () => execute.immediate(request, apply) as ServiceResponse;
      return deps.commits === undefined ? committed(work()) : deps.commits.run(work).then(committed);
    },
    /** The dry run of `run` (see `steps`): null when the write may go ahead, or a replay. */
    check: (request: WriteRequest, precheck: () => void): ServiceResponse | null => execute.immediate(request, null, precheck),
  };
}

export type MutationRunner = ReturnType<typeof mutationRunner>;
