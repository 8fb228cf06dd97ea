import { parseLocalDateTime } from '../time/london.js';
import { ServiceError } from './errors.js';

/**
 * A local-date-time member of a request, canonicalised. Contract 1 step 11 and 7: a bad shape
 * (the schema pattern lets through e.g. Feb 30) is 400; a nonexistent spring wall time is 422.
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
  throw new ServiceError('validation_failed', `${member}: not a local date-time`);
}

/**
 * Rejects (400) any syntactically bad local-date-time among a request's members before any value
 * or business rule runs: contract 1 puts shape errors (step 6) ahead of the 409/422 answers of
 * step 11, so a Feb 30 must not be masked by e.g. a blank title, a nonexistent wall time in
 * another member or a Done task. Nonexistent wall times are left for `localInput` (422).
 */
export function assertLocalSyntax(members: Iterable<readonly [member: string, value: string | null | undefined]>): void {
  for (const [member, value] of members) {
    if (typeof value !== 'string') continue;
    const parsed = parseLocalDateTime(value);
    if (!parsed.ok && parsed.reason === 'syntax') throw new ServiceError('validation_failed', `${member}: not a local date-time`);
  }
}

/** Text members that must say something: whitespace only is a value error (422), not a shape error. */
export function nonblank(value: string, member: string): string {
  if (value.trim() === '') throw new ServiceError('invalid_field', `${member}: blank`);
  return value;
}
