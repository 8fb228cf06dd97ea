import { Type, type Static } from 'typebox';
import {
  AssistanceKind, Id, Int32, LocalDateTimeInput, MAX_MINUTES, MAX_SEQUENCE, MAX_TEXT_LENGTH, MAX_TITLE_LENGTH, Nullable, PriorityName, ResourceMode, TaskStatus, Uuid,
} from './common.js';

/**
 * Request bodies of the spec. All are closed: unknown members are rejected. Type, enum, format
 * and bound violations are 400; value rules that need the domain (nonblank text, existing
 * London wall times, known ids) are checked by the use cases and answered 422.
 */

const closed = (title: string) => ({ title, additionalProperties: false }) as const;

export const EmptyRequest = Type.Object({}, closed('EmptyRequest'));

/** The all-zero UUID is malformed as a lease token (contract 2), in a body or in X-Task-Claim. */
export const LEASE_TOKEN_PATTERN = '^(?!00000000-0000-0000-0000-000000000000$)';

export const LeaseToken = Type.String({
  format: 'uuid',
  pattern: LEASE_TOKEN_PATTERN,
  description: 'The lease token; the all-zero UUID is rejected.',
});

export const ClaimRequest = Type.Object({ token: LeaseToken }, closed('ClaimRequest'));

/** The `Idempotency-Key` header (spec Limits): 1 to 100 characters of `[a-zA-Z0-9._:-]`. */
export const IdempotencyKey = Type.String({ minLength: 1, maxLength: 100, pattern: '^[a-zA-Z0-9._:-]+$' });

export const ActualIntervalInput = Type.Object(
  { staffMemberId: Id, start: LocalDateTimeInput, end: LocalDateTimeInput },
  closed('ActualIntervalInput'),
);

const Minutes = Int32({ minimum: 0, maximum: MAX_MINUTES });

export const TaskPatch = Type.Object(
  {
    title: Type.Optional(Type.String({ minLength: 1, maxLength: MAX_TITLE_LENGTH })),
    description: Type.Optional(Nullable(Type.String({ maxLength: MAX_TEXT_LENGTH }))),
    status: Type.Optional({
      ...TaskStatus,
      description: 'Ready to InProgress starts the task (startedAt becomes now unless the task has one or the PATCH sends one) and is 409 task_blocked while the task, as this PATCH leaves it, is blocked. InProgress may go back to Ready (startedAt is kept). Done, from Ready or InProgress, sets completedAt and is 409 task_blocked for an outstanding human blocker or 409 dependency_conflict for a prerequisite not Done (and 422 invalid_field for a startedAt still in the future, which only a loaded fixture or a clock set back can leave). The task\'s own status again is no transition. A Done task refuses every PATCH (409 task_completed).',
    }),
    sequence: Type.Optional(Int32({ minimum: 0, maximum: MAX_SEQUENCE })),
    estimatedMinutes: Type.Optional({
      ...Minutes,
      description: "Total planned duration. Where the caller's assignment has its own estimate, that becomes this value too.",
    }),
    remainingMinutes: Type.Optional({
      ...Minutes, deprecated: true,
      description: 'Deprecated: sets estimatedMinutes to the elapsed planned duration plus this value (estimatedMinutes wins when both are sent); the 204 then carries Warning 299.',
    }),
    startedAt: Type.Optional(Nullable(LocalDateTimeInput, {
      description: 'Not in the future, nor after the completedAt the PATCH leaves (422 invalid_field). null clears it only on a task that is Ready after this PATCH and has no actual intervals.',
    })),
    earliestStart: Type.Optional(Nullable(LocalDateTimeInput)),
    isWaiting: Type.Optional(Type.Boolean()),
    releaseDate: Type.Optional(Nullable(LocalDateTimeInput)),
    resourceMode: Type.Optional(ResourceMode),
    dependencyIds: Type.Optional(Type.Array(Id, {
      maxItems: 1000,
      description: 'Replaces the list: tasks of the same organisation, not this one, no duplicates (422 invalid_field); a cycle is 409 dependency_conflict.',
    })),
    actualIntervals: Type.Optional(Type.Array(ActualIntervalInput, {
      maxItems: 1000,
      description: "Replaces the caller's own intervals, as PUT /tasks/{id}/actual-effort does (also needs scope tasks:time).",
    })),
  },
  closed('TaskPatch'),
);

export const ActualEffort = Type.Object(
  { actualIntervals: Type.Array(ActualIntervalInput, { maxItems: 1000 }) },
  closed('ActualEffort'),
);

export const NoteCreate = Type.Object(
  { text: Type.String({ minLength: 1, maxLength: MAX_TEXT_LENGTH }) },
  closed('NoteCreate'),
);

export const AssistanceCreate = Type.Object(
  {
    humanAssigneeId: Id,
    title: Type.String({ minLength: 1, maxLength: MAX_TITLE_LENGTH }),
    details: Type.Optional(Nullable(Type.String({ maxLength: MAX_TEXT_LENGTH }))),
    estimatedMinutes: Int32({ minimum: 1, maximum: MAX_MINUTES }),
    // Defaults of contract 8, stated for the OpenAPI document; the use case applies them.
    priority: Type.Optional({ ...PriorityName, default: 'normal' }),
    isBlocking: Type.Optional(Type.Boolean({ default: true })),
    assistanceKind: Type.Optional({ ...AssistanceKind, default: 'Question' }),
    publishExternally: Type.Optional(Type.Boolean({ default: false })),
  },
  closed('AssistanceCreate'),
);

export const IncomingPlan = Type.Object({ plannedStart: LocalDateTimeInput }, closed('IncomingPlan'));

export const IncomingReassign = Type.Object({ assigneeId: Id }, closed('IncomingReassign'));

export const IncomingComplete = Type.Object(
  { response: Type.Optional(Nullable(Type.String({ maxLength: MAX_TEXT_LENGTH }))) },
  closed('IncomingComplete'),
);

const Revision = Uuid;

const EvaluatedItem = Int32({
  minimum: 1,
  description: "An Incoming item of this task's assistance (as `responsesAwaitingEvaluation[].id` names one); any other id (unknown, or another item's) is 422 invalid_field.",
});

// Each variant is a named component, so the OpenAPI document can give the union a discriminator.
export const ExternalEvaluationAcknowledge = Type.Object(
  { decision: Type.Enum(['acknowledge']), eventId: Type.Integer({
    format: 'int64', minimum: 1, maximum: Number.MAX_SAFE_INTEGER,
    description: "A change of this task (`externalChanges[].id`); any other id (unknown, or another change's) is 422 invalid_field, one already acknowledged 409 source_context_changed.",
  }) },
  { ...closed('ExternalEvaluationAcknowledge'), description: 'Marks a change of this task (a `source` or `reply` entry of `externalChanges`) as seen.' },
);

export const ExternalEvaluationResolve = Type.Object(
  { decision: Type.Enum(['resolve']), incomingId: EvaluatedItem, revision: Revision },
  { ...closed('ExternalEvaluationResolve'), description: 'The answer settles the question: the request is resolved (a blocking one no longer holds back the task).' },
);

export const ExternalEvaluationKeepWaiting = Type.Object(
  { decision: Type.Enum(['keepwaiting']), incomingId: EvaluatedItem, revision: Revision },
  { ...closed('ExternalEvaluationKeepWaiting'), description: 'The answer does not settle the question: the request is open again (a blocking one keeps holding back the task).' },
);

export const ExternalEvaluationFollowup = Type.Object(
  {
    decision: Type.Enum(['followup']),
    incomingId: EvaluatedItem,
    revision: Revision,
    message: Type.String({ minLength: 1, maxLength: MAX_TEXT_LENGTH }),
  },
  { ...closed('ExternalEvaluationFollowup'), description: "The request is open again with a new question: `message` is added to the Incoming item's details." },
);

export const ExternalEvaluation = Type.Union(
  [ExternalEvaluationAcknowledge, ExternalEvaluationResolve, ExternalEvaluationKeepWaiting, ExternalEvaluationFollowup],
  { title: 'ExternalEvaluation', description: 'Exactly one decision variant, selected by `decision`.' },
);

export type TaskPatchInput = Static<typeof TaskPatch>;
export type ActualEffortInput = Static<typeof ActualEffort>;
export type ActualIntervalInputValue = Static<typeof ActualIntervalInput>;
export type NoteCreateInput = Static<typeof NoteCreate>;
export type ClaimRequestInput = Static<typeof ClaimRequest>;
export type AssistanceCreateInput = Static<typeof AssistanceCreate>;
export type IncomingPlanInput = Static<typeof IncomingPlan>;
export type IncomingReassignInput = Static<typeof IncomingReassign>;
export type IncomingCompleteInput = Static<typeof IncomingComplete>;
export type ExternalEvaluationInput = Static<typeof ExternalEvaluation>;
