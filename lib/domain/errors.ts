/**
 * Every error code of the spec. Domain code raises these by name; only `lib/http/problem.ts`
 * knows which HTTP status each one becomes.
 */
export const ERROR_CODES = [
  'validation_failed',
  'authentication_failed',
  'permission_denied',
  'task_not_owned',
  'route_not_found',
  'task_not_found',
  'request_not_found',
  'incoming_not_found',
  'method_not_allowed',
  'task_blocked',
  'task_completed',
  'task_not_runnable',
  'request_completed',
  'dependency_conflict',
  'idempotency_conflict',
  'task_claimed',
  'claim_expired',
  'incoming_state_conflict',
  'source_context_changed',
  'stale_update',
  'request_too_large',
  'unsupported_media_type',
  'invalid_field',
  'human_assignee_invalid',
  'idempotency_key_required',
  'precondition_required',
  'rate_limited',
  'internal_error',
  'source_unavailable',
  'temporarily_unavailable',
] as const;

export type ErrorCode = (typeof ERROR_CODES)[number];

/**
 * A refusal the client can act on. `detail` is for the server log only: problem bodies carry
 * nothing but the catalogue's title, so no internal detail can leak.
 */
export class ServiceError extends Error {
  readonly code: ErrorCode;
  readonly detail: string | undefined;
  /** Extra response headers the refusal needs (for example `Allow` or the current `ETag`). */
  readonly headers: Readonly<Record<string, string>> | undefined;

  constructor(code: ErrorCode, detail?: string, headers?: Record<string, string>) {
    super(detail === undefined ? code : `${code}: ${detail}`);
    this.name = 'ServiceError';
    this.code = code;
    this.detail = detail;
    this.headers = headers;
  }
}
