import { type Principal, workerOf } from '../../auth/authenticate.js';
import { elapsedPlannedMinutes } from '../../plan/remaining.js';
import { MAX_MINUTES } from '../limits.js';
import type { ActualEffortInput, NoteCreateInput, TaskPatchInput } from '../../schemas/requests.js';
import type { CalendarStatements } from '../../store/calendars.js';
import type { EditableTask, TaskWriteStatements } from '../../store/task-writes.js';
import { epochMsToLocal, localToEpochMs } from '../../time/london.js';
import { ServiceError } from '../errors.js';
import { localInput, localMoment } from '../local-time-input.js';
import { nonblank } from '../text-input.js';
import type { MutationOutcome } from '../outcome.js';
import { validatedIntervals } from './effort.js';
import { isBlocked } from './state.js';

const REMAINING_MINUTES_DEPRECATION = 'remainingMinutes is deprecated; send estimatedMinutes';

export interface TaskWriteDependencies {
  readonly writes: TaskWriteStatements;
  readonly calendars: CalendarStatements;
}

const resourceOf = (principal: Principal): number => workerOf(principal).id;

const optionalLocal = (value: string | null | undefined, current: string | null, member: string): string | null =>
  value === undefined ? current : value === null ? null : localInput(value, member);

/** The task writes of contract 6: PATCH, effort replacement and notes. */
export function taskWrites(deps: TaskWriteDependencies) {
  const { writes, calendars } = deps;

  function editable(taskId: number): EditableTask {
    const row = writes.editable(taskId);
    if (row === undefined) throw new ServiceError('task_not_found');
    return row;
  }

  function assertExists(taskId: number): void {
    if (!writes.exists(taskId)) throw new ServiceError('task_not_found');
  }

  /** `dependencyIds` replaces the list; returns whether any new prerequisite is unfinished. */
  function checkDependencies(row: EditableTask, ids: readonly number[]): boolean {
    const seen = new Set<number>();
    for (const id of ids) {
      if (id === row.id) throw new ServiceError('invalid_field', 'a task cannot depend on itself');
      if (seen.has(id)) throw new ServiceError('invalid_field', `dependency ${id} listed twice`);
      seen.add(id);
    }
    const found = writes.tasksAmong(ids).filter((task) => task.organisationId === row.organisationId);
    if (found.length !== ids.length) throw new ServiceError('invalid_field', 'unknown dependency id');
    if (ids.length > 0 && writes.reaches(ids, row.id)) throw new ServiceError('dependency_conflict', 'cycle');
    return found.some((task) => task.status !== 'Done');
  }

  return {
    patch(principal: Principal, taskId: number, input: TaskPatchInput, now: number): MutationOutcome {
      const row = editable(taskId);
      if (row.status === 'Done') throw new ServiceError('task_completed');
      if (Object.keys(input).length === 0) return { changed: false };
      const resourceId = resourceOf(principal);
      const nowLocal = epochMsToLocal(now);

      const title = input.title === undefined ? row.title : nonblank(input.title, 'title');
      const earliestStart = optionalLocal(input.earliestStart, row.earliestStart, 'earliestStart');
      const releaseDate = optionalLocal(input.releaseDate, row.releaseDate, 'releaseDate');
      const isWaiting = input.isWaiting ?? row.isWaiting === 1;
      const unmetPrerequisites =
        input.dependencyIds === undefined ? row.unmetPrerequisites === 1 : checkDependencies(row, input.dependencyIds);
      const intervals =
        input.actualIntervals === undefined ? undefined : validatedIntervals(principal, taskId, input.actualIntervals, now);

      const status = input.status ?? row.status;
      let startedAt = row.startedAt;
      let completedAt = row.completedAt;
      if (input.startedAt === null) {
        // Intervals the task has once this PATCH is applied: `actualIntervals` replaces the
        // caller's own (it does not add to them), and other contributors' intervals stay.
        const intervalsAfter =
          intervals === undefined
            ? writes.intervalCount(taskId)
            : writes.otherIntervalCount(taskId, resourceId) + intervals.length;
        // Established tracking stays: only a Ready task without any recorded work can forget its start.
        if (status !== 'Ready' || intervalsAfter > 0) {
          throw new ServiceError('invalid_field', 'startedAt can only be cleared on a Ready task without actual intervals');
        }
        startedAt = null;
      } else if (input.startedAt !== undefined) {
        const started = localMoment(input.startedAt, 'startedAt');
        startedAt = started.local;
        if (started.instant > now) throw new ServiceError('invalid_field', 'startedAt is in the future');
        // Judged against the completion the PATCH leaves: one setting Done completes the task now,
        // and a start not in the future is before that.
        if (status !== 'Done' && completedAt !== null && localToEpochMs(startedAt) > localToEpochMs(completedAt)) {
          throw new ServiceError('invalid_field', 'startedAt is after completedAt');
        }
      }
      if (status !== row.status) {
        // Blocking is judged on the task as this PATCH leaves it (new prerequisites, waiting flag).
        const leftBlocked = isBlocked({
          unmetPrerequisites: unmetPrerequisites ? 1 : 0,
          humanBlocker: row.humanBlocker,
          isWaiting: isWaiting ? 1 : 0,
        });
        if (status === 'InProgress' && row.status === 'Ready') {
          if (leftBlocked) throw new ServiceError('task_blocked');
          // Now, even past a completedAt loaded from a fixture: that was an earlier completion.
          startedAt ??= nowLocal;
        }
        if (status === 'Done') {
          if (row.humanBlocker === 1) throw new ServiceError('task_blocked', 'outstanding human blocker');
          if (unmetPrerequisites) throw new ServiceError('dependency_conflict', 'a prerequisite is not Done');
          // Only a start loaded from a fixture (or made before the clock was set back) can still
          // be in the future here: completing the task now would put its completion before it.
          if (startedAt !== null && localToEpochMs(startedAt) > now) throw new ServiceError('invalid_field', 'startedAt is after completedAt');
          completedAt = nowLocal;
        }
      }

      let estimatedMinutes = input.estimatedMinutes ?? row.estimatedMinutes;
      if (input.estimatedMinutes === undefined && input.remainingMinutes !== undefined) {
        estimatedMinutes = elapsedPlannedMinutes(calendars.calendarOf(resourceId), startedAt, now) + input.remainingMinutes;
        if (estimatedMinutes > MAX_MINUTES) throw new ServiceError('invalid_field', `estimatedMinutes would exceed ${MAX_MINUTES}`);
      }

      writes.update({
        id: taskId,
        title,
        description: input.description === undefined ? row.description : input.description,
        status,
        sequence: input.sequence ?? row.sequence,
        estimatedMinutes,
        startedAt,
        completedAt,
        earliestStart,
        releaseDate,
        isWaiting: isWaiting ? 1 : 0,
        resourceMode: input.resourceMode ?? row.resourceMode,
      });
      // An assignee's own estimate (from a fixture) is what its plan uses: the estimate the caller
      // just sent would otherwise change nothing it is offered.
      if (input.estimatedMinutes !== undefined || input.remainingMinutes !== undefined) {
        writes.followOwnEstimate(taskId, resourceId, estimatedMinutes);
      }
      if (input.dependencyIds !== undefined) writes.replaceDependencies(taskId, input.dependencyIds);
      if (intervals !== undefined) writes.replaceOwnIntervals(taskId, resourceId, intervals);
      return { changed: true, ...(input.remainingMinutes === undefined ? {} : { deprecation: REMAINING_MINUTES_DEPRECATION }) };
    },

    /** PUT actual-effort: replaces exactly the caller's intervals; allowed on Done tasks. */
    replaceEffort(principal: Principal, taskId: number, input: ActualEffortInput, now: number): MutationOutcome {
      assertExists(taskId);
      const intervals = validatedIntervals(principal, taskId, input.actualIntervals, now);
      writes.replaceOwnIntervals(taskId, resourceOf(principal), intervals);
      return { changed: true };
    },

    /** POST notes: appends; allowed on Done tasks. */
    appendNote(principal: Principal, taskId: number, input: NoteCreateInput, now: number): MutationOutcome {
      assertExists(taskId);
      writes.insertNote(taskId, principal.clientId, resourceOf(principal), nonblank(input.text, 'text'), now);
      return { changed: true };
    },
  };
}

export type TaskWrites = ReturnType<typeof taskWrites>;
