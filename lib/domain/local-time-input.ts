import { parseLocalDateTime } from '../time/london.js';
import { ServiceError } from './errors.js';

/**
 * A local-date-time member of a request, canonicalised. Its shape (Feb 30 included) was checked
 * with the request schema's `local-date-time` format, a 400 before any business rule (contract 1
 * step 6); what is left is contract 7's value rule: a nonexistent spring wall time is 422.
 */
export function localInput(value: string, member: string): string {
  return localMoment(value, member).local;
}

/**
 * `localInput` with the instant the input names, for rules about real time (not in the future,
 * after the start, no overlap): a `Z` or offset input in the autumn repeated hour keeps the pass
 * it was sent for, which its stored wall time alone would lose.
 */
export function localMoment(value: string, member: string): { readonly local: string; readonly instant: number } {
  const parsed = parseLocalDateTime(value);
  if (parsed.ok) return parsed;
  if (parsed.reason === 'nonexistent') throw new ServiceError('invalid_field', `${member}: nonexistent London wall time`);
  // Unreachable behind the schema's format; an error of ours, so a 500 rather than blaming the client.
  throw new Error(`${member}: a malformed local date-time passed the request schema`);
}

