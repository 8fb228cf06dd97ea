import { randomUUID } from 'node:crypto';
import { type Principal, workerOf } from '../../auth/authenticate.js';
import type { HumanRequestView } from '../../schemas/resources.js';
import type { AssistanceCreateInput } from '../../schemas/requests.js';
import type { AssistanceStatements } from '../../store/assistance.js';
import type { HumanRequestRow } from '../../store/task-reads.js';
import { ServiceError } from '../errors.js';
import { nonblank } from '../text-input.js';
import type { MutationOutcome } from '../outcome.js';
import { humanRequestView } from '../tasks/view.js';
import type { Publications } from './publications.js';

/** A human request's remaining minutes at an instant (the planning layer's rule). */
export type HumanRequestRemaining = (row: HumanRequestRow, now: number) => number;

/** Asking a human for help (POST /tasks/{id}/human-requests) and reading the request back. */
export function assistanceRequests(assistance: AssistanceStatements, publications: Publications, remaining: HumanRequestRemaining) {
  return {
    /**
     * Contract 8: the assignee must be an active human of the organisation; defaults priority
     * normal, isBlocking true, assistanceKind Question, publishExternally false. Creates the
     * assistance stage and a floating Incoming item, which reserves no capacity.
     */
    create(principal: Principal, taskId: number, input: AssistanceCreateInput, now: number): MutationOutcome {
      const resource = workerOf(principal);
      const human = assistance.staff(input.humanAssigneeId);
      if (human === undefined || human.organisationId !== principal.organisationId || human.kind !== 'human' || human.isActive !== 1) {
        throw new ServiceError('human_assignee_invalid');
      }
      const title = nonblank(input.title, 'title');
      const publishExternally = input.publishExternally ?? false;
      if (publishExternally && assistance.linkedSourceCount(taskId) === 0) {
        throw new ServiceError('invalid_field', 'publishExternally on a task without a linked source');
      }
      const { stageId } = assistance.create({
        organisationId: principal.organisationId,
        originTaskId: taskId,
        clientId: principal.clientId,
        staffId: resource.id,
        assistanceKind: input.assistanceKind ?? 'Question',
        isBlocking: (input.isBlocking ?? true) ? 1 : 0,
        publishExternally: publishExternally ? 1 : 0,
        now,
        recipientId: input.humanAssigneeId,
        title,
        details: input.details ?? null,
        estimatedMinutes: input.estimatedMinutes,
        priorityName: input.priority ?? 'normal',
        requester: resource.name,
        revision: randomUUID(),
      });
      if (publishExternally) publications.enqueueRequest(stageId, taskId, now);
      return { body: { id: stageId, originatingTaskId: taskId }, createdId: stageId, changed: true };
    },

    /** GET /human-requests/{id}; visibility was checked by the pipeline. */
    read(stageId: number, now: number): HumanRequestView {
      const row = assistance.humanRequest(stageId);
      if (row === undefined) throw new ServiceError('request_not_found');
      return humanRequestView(row, remaining(row, now));
    },
  };
}

export type AssistanceRequests = ReturnType<typeof assistanceRequests>;
