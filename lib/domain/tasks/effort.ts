import { type Principal, workerOf } from '../../auth/authenticate.js';
import type { ActualIntervalInputValue } from '../../schemas/requests.js';
import type { IntervalInsert } from '../../store/task-writes.js';
import { ServiceError } from '../errors.js';
import { localMoment } from '../local-time-input.js';

/**
 * Contract 6, actual intervals: each belongs to the caller's resource, ends after it starts and
 * not in the future, and none overlaps another of the list (the list replaces all of the caller's
 * intervals on the task, so these are all there is to compare).
 */
export function validatedIntervals(
  principal: Principal,
  taskId: number,
  inputs: readonly ActualIntervalInputValue[],
  now: number,
): IntervalInsert[] {
  const staffId = workerOf(principal).id;
  const intervals = inputs.map((input, index): IntervalInsert => {
    if (input.staffMemberId !== staffId) {
      throw new ServiceError('invalid_field', `actualIntervals[${index}].staffMemberId is not the caller's resource`);
    }
    const { local: start, instant: startUtc } = localMoment(input.start, `actualIntervals[${index}].start`);
    const { local: end, instant: endUtc } = localMoment(input.end, `actualIntervals[${index}].end`);
    if (endUtc <= startUtc) throw new ServiceError('invalid_field', `actualIntervals[${index}] ends before it starts`);
    if (endUtc > now) throw new ServiceError('invalid_field', `actualIntervals[${index}] ends in the future`);
    return { taskId, staffId, start, end, startUtc, endUtc };
  });
  const sorted = [...intervals].sort((a, b) => a.startUtc - b.startUtc);
  for (let index = 1; index < sorted.length; index += 1) {
    if ((sorted[index] as IntervalInsert).startUtc < (sorted[index - 1] as IntervalInsert).endUtc) {
      throw new ServiceError('invalid_field', 'actualIntervals overlap');
    }
  }
  return sorted;
}
