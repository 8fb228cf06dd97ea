import { MAX_TEXT_LENGTH } from '../limits.js';
import type { ExternalEvaluationInput } from '../../schemas/requests.js';
import type { AssistanceStatements } from '../../store/assistance.js';
import type { SourceChangeStatements } from '../../store/source-changes.js';
import { ServiceError } from '../errors.js';
import { isBlank, nonblank } from '../text-input.js';
import type { MutationOutcome } from '../outcome.js';
import { incomingUpdate } from './incoming.js';
import type { Publications } from './publications.js';

export interface EvaluationDependencies {
  readonly assistance: AssistanceStatements;
  readonly changes: SourceChangeStatements;
  readonly publications: Publications;
}

/**
 * POST /tasks/{id}/external-evaluation (contract 8): acknowledge a source change, or judge a
 * response to this task's assistance at the revision the agent saw.
 */
export function externalEvaluation(deps: EvaluationDependencies) {
  const { assistance, changes } = deps;

  return {
    evaluate(taskId: number, input: ExternalEvaluationInput, now: number): MutationOutcome {
      if (input.decision === 'acknowledge') {
        const change = changes.changeOfTask(input.eventId, taskId);
        if (change === undefined) throw new ServiceError('invalid_field', 'unknown eventId for this task');
        if (change.acknowledgedUtc !== null) throw new ServiceError('source_context_changed', 'already acknowledged');
        changes.acknowledge(change.id, now);
        return { changed: true };
      }

      const row = assistance.incoming(input.incomingId);
      if (row === undefined || row.originTaskId !== taskId) {
        throw new ServiceError('invalid_field', 'incomingId is not assistance of this task');
      }
      if (input.revision.toLowerCase() !== row.revision) throw new ServiceError('stale_update', 'revision is not current');
      if (row.responseState === 'resolved') throw new ServiceError('request_completed');
      if (row.responseState !== 'responded') throw new ServiceError('incoming_state_conflict', 'no response to evaluate');

      const update = incomingUpdate(row);
      if (input.decision === 'resolve') {
        // A reply alone never resolves a blocker; this decision does, and ends the item.
        return commit({ ...update, responseState: 'resolved', lifecycle: 'completed', completedUtc: row.completedUtc ?? now });
      }
      // keepwaiting and followup: the question is open again; a completed item goes back to work.
      const reopened = {
        ...update,
        responseState: 'open' as const,
        ...(row.lifecycle === 'completed' ? { lifecycle: 'inprogress' as const, completedUtc: null } : {}),
      };
      if (input.decision === 'keepwaiting') return commit(reopened);
      const message = nonblank(input.message, 'message');
      // Blank details (a request may send "" or spaces) are no details: no paragraph after nothing.
      const details = row.details === null || isBlank(row.details) ? message : `${row.details}\n\nFollow-up: ${message}`;
      // The Limits hold for what is stored too: details never grow past what a request may send.
      if (codePoints(details) > MAX_TEXT_LENGTH) throw new ServiceError('invalid_field', 'details would exceed the text limit');
      // Contract 8: the follow-up goes where the request went.
      if (row.stageId !== null) deps.publications.enqueueFollowUp(row.stageId, message, now);
      return commit({ ...reopened, details });
    },
  };

  function commit(update: ReturnType<typeof incomingUpdate>): MutationOutcome {
    assistance.updateIncoming(update);
    return { changed: true };
  }
}

/** Length in code points, as the request schemas count `maxLength`. */
function codePoints(text: string): number {
  let count = 0;
  for (const _ of text) count += 1;
  return count;
}

export type ExternalEvaluation = ReturnType<typeof externalEvaluation>;
