import { randomUUID } from 'node:crypto';
import { type Principal, workerOf } from '../../auth/authenticate.js';
import type { Planner } from '../planning/planner.js';
import { incomingSuggestion } from '../../plan/suggestion.js';
import type { IncomingView } from '../../schemas/resources.js';
import type { IncomingCompleteInput, IncomingPlanInput, IncomingReassignInput } from '../../schemas/requests.js';
import type { AssistanceStatements, IncomingRow, IncomingUpdate } from '../../store/assistance.js';
import { formatUtc, formatUtcOrNull } from '../../time/london.js';
import { ServiceError } from '../errors.js';
import { localInput } from '../local-time-input.js';
import type { MutationOutcome } from '../outcome.js';


/** The row as it will be written back, with a fresh revision: every change gets a new one. */
export function incomingUpdate(row: IncomingRow): IncomingUpdate {
  return {
    id: row.id,
    recipientId: row.recipientId,
    details: row.details,
    lifecycle: row.lifecycle,
    plannedStart: row.plannedStart,
    actualStartUtc: row.actualStartUtc,
    response: row.response,
    responseState: row.responseState,
    respondedAtUtc: row.respondedAtUtc,
    completedUtc: row.completedUtc,
    revision: randomUUID(),
  };
}

export interface IncomingDependencies {
  readonly assistance: AssistanceStatements;
  readonly planner: Planner;
}

/** The recipient's side of assistance: the Incoming list and its four actions (contract 8). */
export function incomingWork(deps: IncomingDependencies) {
  const { assistance, planner } = deps;

  function existing(id: number): IncomingRow {
    const row = assistance.incoming(id);
    if (row === undefined) throw new ServiceError('incoming_not_found');
    return row;
  }

  function commit(update: IncomingUpdate): MutationOutcome {
    assistance.updateIncoming(update);
    return { changed: true };
  }

  return {
    /** Floating items by default; every lifecycle with includeAccepted. Suggestions for floating ones. */
    list(principal: Principal, includeAccepted: boolean, now: number): IncomingView[] {
      const resource = workerOf(principal);
      const rows = assistance.incomingForRecipient(resource.id, principal.organisationId, includeAccepted);
      const plan = rows.some((row) => row.lifecycle === 'floating')
        ? planner.planFor(principal.organisationId, resource.id, now)
        : undefined;
      return rows.map((row): IncomingView => {
        const suggestion = plan !== undefined && row.lifecycle === 'floating'
          ? incomingSuggestion(plan, row.estimatedMinutes, resource.name, now)
          : { suggestedStart: null, suggestionReason: null };
        return {
          id: row.id,
          title: row.title,
          details: row.details,
          estimatedMinutes: row.estimatedMinutes,
          priority: row.priorityName,
          requester: row.requester,
          requestedAtUtc: formatUtc(row.requestedAtUtc),
          status: row.lifecycle,
          suggestedStart: suggestion.suggestedStart,
          suggestionReason: suggestion.suggestionReason,
          plannedStart: row.plannedStart,
          response: row.response,
          responseState: row.responseState,
          actualStartUtc: formatUtcOrNull(row.actualStartUtc),
          actualEffortMinutes: row.actualEffortMinutes,
          etag: `"${row.revision}"`,
        };
      });
    },

    /** Floating or planned to inprogress, starting now; no actual effort is inferred. */
    start(id: number, now: number): MutationOutcome {
      const row = existing(id);
      if (row.lifecycle !== 'floating' && row.lifecycle !== 'planned') throw new ServiceError('incoming_state_conflict');
      return commit({ ...incomingUpdate(row), lifecycle: 'inprogress', actualStartUtc: now });
    },

    /** Floating or planned to planned at the given London wall time. */
    plan(id: number, input: IncomingPlanInput): MutationOutcome {
      const row = existing(id);
      if (row.lifecycle !== 'floating' && row.lifecycle !== 'planned') throw new ServiceError('incoming_state_conflict');
      return commit({ ...incomingUpdate(row), lifecycle: 'planned', plannedStart: localInput(input.plannedStart, 'plannedStart') });
    },

    /** Floating work only, to an active human or agent of the organisation. */
    reassign(principal: Principal, id: number, input: IncomingReassignInput): MutationOutcome {
      const row = existing(id);
      if (row.lifecycle !== 'floating') throw new ServiceError('incoming_state_conflict');
      const assignee = assistance.staff(input.assigneeId);
      if (assignee === undefined || assignee.organisationId !== principal.organisationId || assignee.isActive !== 1) {
        throw new ServiceError('human_assignee_invalid');
      }
      return commit({ ...incomingUpdate(row), recipientId: input.assigneeId });
    },

    /** Anything but completed to completed; the response sent (or none) is stored and awaits evaluation. */
    complete(id: number, input: IncomingCompleteInput, now: number): MutationOutcome {
      const row = existing(id);
      if (row.lifecycle === 'completed') throw new ServiceError('incoming_state_conflict');
      return commit({
        ...incomingUpdate(row),
        lifecycle: 'completed',
        completedUtc: now,
        // The answer of this completion (none when omitted), never an older one left from before a
        // keepwaiting: the agent evaluates what the human just said.
        response: input.response ?? null,
        responseState: 'responded',
        respondedAtUtc: now,
      });
    },
  };
}

export type IncomingWork = ReturnType<typeof incomingWork>;
