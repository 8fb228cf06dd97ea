import { ServiceError } from './errors.js';

/**
 * Whitespace as Unicode defines it (the White_Space property), not as String#trim does: trim
 * keeps U+0085 NEXT LINE, which is whitespace, and strips U+FEFF, the byte-order mark, which is not.
 */
const BLANK = /^\p{White_Space}*$/u;

/** Whether text says nothing: empty, or whitespace only. */
export function isBlank(value: string): boolean {
  return BLANK.test(value);
}

/** Text members that must say something: whitespace only is a value error (422), not a shape error. */
export function nonblank(value: string, member: string): string {
  if (isBlank(value)) throw new ServiceError('invalid_field', `${member}: blank`);
  return value;
}
