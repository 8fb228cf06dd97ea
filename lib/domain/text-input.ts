import { ServiceError } from './errors.js';

/** Text members that must say something: whitespace only is a value error (422), not a shape error. */
export function nonblank(value: string, member: string): string {
  if (value.trim() === '') throw new ServiceError('invalid_field', `${member}: blank`);
  return value;
}
