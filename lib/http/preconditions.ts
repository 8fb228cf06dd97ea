import { ServiceError } from '../domain/errors.js';
import { IdempotencyKey, LeaseToken } from '../schemas/requests.js';
import { validatorFor } from '../schemas/validator.js';

// The header rules are the schemas the OpenAPI document shows for these headers.
const IDEMPOTENCY_KEY = validatorFor(IdempotencyKey);
const LEASE_TOKEN = validatorFor(LeaseToken);
const TASK_ETAG = /^"task-([1-9][0-9]{0,9})-plan-([1-9][0-9]{0,15})"$/;
const QUOTED_UUID = /^"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"$/;

/** Step 8: the `Idempotency-Key` header, or null when it is optional and absent (422 otherwise). */
export function idempotencyKey(header: string | undefined, mode: 'required' | 'optional' | 'none'): string | null {
  if (mode === 'none') return null;
  if (header === undefined) {
    if (mode === 'required') throw new ServiceError('idempotency_key_required', 'missing');
    return null;
  }
  if (!IDEMPOTENCY_KEY.check(header)) throw new ServiceError('idempotency_key_required', 'malformed');
  return header;
}

export interface TaskEtag {
  readonly taskId: number;
  readonly version: number;
}

/** Step 9 for task writes: the exact quoted task ETag. Missing 428; malformed (`*` too) 412. */
export function taskIfMatch(header: string | undefined): TaskEtag {
  if (header === undefined) throw new ServiceError('precondition_required');
  const match = TASK_ETAG.exec(header.trim());
  if (match === null) throw new ServiceError('stale_update', 'malformed If-Match');
  return { taskId: Number(match[1]), version: Number(match[2]) };
}

/** Step 9 for Incoming actions: the quoted revision UUID, returned bare and lowercase. */
export function incomingIfMatch(header: string | undefined): string {
  if (header === undefined) throw new ServiceError('precondition_required');
  const match = QUOTED_UUID.exec(header.trim());
  if (match === null) throw new ServiceError('stale_update', 'malformed If-Match');
  return (match[1] as string).toLowerCase();
}

/** Step 10: the `X-Task-Claim` token, lowercase, or null when absent. Malformed or all-zero is 400. */
export function claimToken(header: string | undefined): string | null {
  if (header === undefined) return null;
  const token = header.trim().toLowerCase();
  if (!LEASE_TOKEN.check(token)) throw new ServiceError('validation_failed', 'X-Task-Claim');
  return token;
}
