import { randomFillSync } from 'node:crypto';
import type { ErrorCode } from '../domain/errors.js';
import { NOT_STORED } from './conditional.js';
import type { ServiceResponse } from './types.js';

interface CatalogueEntry {
  readonly status: number;
  readonly title: string;
}

/**
 * The one place where an error code becomes an HTTP status. Titles are fixed per code so a
 * response can never carry request-specific or internal detail.
 */
export const ERROR_CATALOGUE: Readonly<Record<ErrorCode, CatalogueEntry>> = {
  validation_failed: { status: 400, title: 'The request is not valid' },
  authentication_failed: { status: 401, title: 'Authentication failed' },
  permission_denied: { status: 403, title: 'Permission denied' },
  task_not_owned: { status: 403, title: 'The task is not assigned to this worker' },
  route_not_found: { status: 404, title: 'No such route' },
  task_not_found: { status: 404, title: 'Task not found' },
  request_not_found: { status: 404, title: 'Assistance request not found' },
  incoming_not_found: { status: 404, title: 'Incoming item not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  task_blocked: { status: 409, title: 'The task is blocked' },
  task_completed: { status: 409, title: 'The task is completed' },
  task_not_runnable: { status: 409, title: 'The task is not runnable' },
  request_completed: { status: 409, title: 'The assistance request is completed' },
  dependency_conflict: { status: 409, title: 'Dependency conflict' },
  idempotency_conflict: { status: 409, title: 'Idempotency-Key reused with a different request' },
  task_claimed: { status: 409, title: 'The task is claimed' },
  claim_expired: { status: 409, title: 'The claim is not live' },
  incoming_state_conflict: { status: 409, title: 'The Incoming item is not in a state that allows this' },
  source_context_changed: { status: 409, title: 'The linked source changed' },
  stale_update: { status: 412, title: 'Precondition failed' },
  request_too_large: { status: 413, title: 'Request body too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  invalid_field: { status: 422, title: 'A field value is not acceptable' },
  human_assignee_invalid: { status: 422, title: 'The assignee is not an active staff member' },
  idempotency_key_required: { status: 422, title: 'A valid Idempotency-Key is required' },
  precondition_required: { status: 428, title: 'If-Match is required' },
  rate_limited: { status: 429, title: 'Rate limit exceeded' },
  internal_error: { status: 500, title: 'Internal error' },
  source_unavailable: { status: 503, title: 'A linked source is unavailable' },
  temporarily_unavailable: { status: 503, title: 'Temporarily unavailable' },
};

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';

/**
 * Random bytes for trace ids, drawn 64 KiB at a time: one call into OpenSSL then serves 4,096
 * ids. Every response needs one, and randomUUID (2 KiB a draw, then dashes to strip) cost about
 * five times as much per id.
 */
const traceIdBytes = Buffer.alloc(64 * 1024);
let traceIdOffset = traceIdBytes.length;

/** A trace id: 32 lowercase hex characters (contract 1), 128 random bits. */
export function newTraceId(): string {
  if (traceIdOffset === traceIdBytes.length) {
    randomFillSync(traceIdBytes);
    traceIdOffset = 0;
  }
  const id = traceIdBytes.toString('hex', traceIdOffset, traceIdOffset + 16);
  traceIdOffset += 16;
  return id;
}

/** Renders an error code as the spec's problem+json response. */
export function problemResponse(
  code: ErrorCode,
  traceId: string,
  extraHeaders?: Readonly<Record<string, string>>,
): ServiceResponse {
  const { status, title } = ERROR_CATALOGUE[code];
  const body = JSON.stringify({ type: 'about:blank', title, status, code, traceId });
  return {
    status,
    headers: { ...extraHeaders, 'content-type': PROBLEM_CONTENT_TYPE, 'cache-control': NOT_STORED, 'x-trace-id': traceId },
    body,
  };
}
