import { parseLocalDateTime } from '../time/london.js';
import { ServiceError } from './errors.js';

/**
 * A local-date-time member of a request, canonicalised. Contract 1 step 11 and 7: a bad shape
 * (the schema pattern lets through e.g. Feb 30) is 400; a nonexistent spring wall time is 422.
 */
export function localInput(value: string, member: string): string {
  const parsed = parseLocalDateTime(value);
  if (parsed.ok) return parsed.local;
  if (parsed.reason === 'nonexistent') throw new ServiceError('invalid_field', `${member}: nonexistent London wall time`);
  throw new ServiceError('validation_failed', `${member}: not a local date-time`);
}

/** Text members that must say something: whitespace only is a value error (422), not a shape error. */
export function nonblank(value: string, member: string): string {
  if (value.trim() === '') throw new ServiceError('invalid_field', `${member}: blank`);
  return value;
}
