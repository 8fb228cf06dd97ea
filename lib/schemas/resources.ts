import { Type, type Static } from 'typebox';
import { ERROR_CODES } from '../domain/errors.js';
import { SCOPES } from '../auth/scopes.js';
import {
  AssistanceKind, BlockingReason, Id, IdOf, Int32, Int64, Lifecycle, LocalDateTime, NamedEntity, Nullable, PriorityName,
  ResourceMode, ResponseState, TaskStatus, UtcDateTime, UtcDateTimeOf, Uuid, UuidOf,
} from './common.js';

/** Response shapes of the spec. Every property is required, nullable ones included. */

const closed = (title: string) => ({ title, additionalProperties: false }) as const;

export const Identity = Type.Object(
  {
    clientId: Id,
    clientName: Type.String(),
    organisation: NamedEntity,
    resource: Nullable(
      Type.Object(
        { id: Id, name: Type.String() },
        { additionalProperties: false, description: 'The mapped resource; null for an identity-only client.' },
      ),
    ),
    scopes: Type.Array(Type.Enum([...SCOPES])),
  },
  closed('Identity'),
);

export const Project = Type.Object(
  {
    id: Id,
    name: Type.String(),
    priority: Type.Integer({
      format: 'int32',
      enum: [0, 50, 100, 101],
      deprecated: true,
      description: 'Deprecated numeric compatibility value; use priorityName.',
    }),
    priorityName: PriorityName,
    targetDate: Nullable(LocalDateTime),
    hardDeadline: Nullable(LocalDateTime),
    deadlineReason: Nullable(Type.String()),
    isActive: Type.Boolean(),
  },
  closed('Project'),
);

export const Assignment = Type.Object(
  {
    staffMemberId: Id,
    name: Type.String(),
    remainingMinutes: Nullable(Int32({ minimum: 0 })),
    estimatedMinutes: Nullable(Int32({ minimum: 0 })),
  },
  closed('Assignment'),
);

export const Dependency = Type.Object({ taskId: Id, status: TaskStatus }, closed('Dependency'));

export const ActualInterval = Type.Object(
  { staffMemberId: Id, start: LocalDateTime, end: LocalDateTime },
  closed('ActualInterval'),
);

export const Note = Type.Object(
  { id: Int64(), text: Type.String(), createdUtc: UtcDateTime, clientName: Type.String(), staffName: Type.String() },
  closed('Note'),
);

export const HumanRequest = Type.Object(
  {
    stageId: IdOf('The assistance-stage id, used by /human-requests/{id}; not the Incoming id.'),
    requestedForStageId: IdOf('The task the request was raised on.'),
    incomingId: Nullable(IdOf('The Incoming id, used by /incoming/{id}/... and as incomingId when evaluating; distinct from stageId.')),
    requestedByApiClientId: Id,
    requestedByStaffMemberId: Id,
    assignedHumanId: Id,
    assignedHumanName: Type.String(),
    requestedByName: Type.String(),
    originTitle: Type.String(),
    title: Type.String(),
    details: Nullable(Type.String()),
    estimatedMinutes: Int32({ minimum: 0 }),
    remainingMinutes: Int32({
      minimum: 0,
      description: 'What the recipient\'s plan reserves: in progress, the estimate less the recipient\'s working time since actualStartUtc; 0 once completed; otherwise the estimate.',
    }),
    status: TaskStatus,
    isBlocking: Type.Boolean(),
    isOutstandingBlocker: Type.Boolean(),
    response: Nullable(Type.String()),
    createdUtc: UtcDateTime,
    completedUtc: Nullable(UtcDateTime),
    lifecycle: Lifecycle,
    priorityName: Nullable(PriorityName),
    responseState: ResponseState,
    actualStartUtc: Nullable(UtcDateTime),
    actualEffortMinutes: Nullable(Int32({ minimum: 0 })),
    incomingRevision: Nullable(UuidOf(
      'The Incoming item\'s revision, bare: quoted it is the If-Match of Incoming actions, and as is the revision of an evaluation.',
    )),
    respondedAtUtc: Nullable(UtcDateTime),
    assistanceKind: AssistanceKind,
  },
  closed('HumanRequest'),
);

export const SourceFacts = Type.Object(
  { title: Type.String(), description: Nullable(Type.String()), businessStatus: Nullable(Type.String()) },
  closed('SourceFacts'),
);

export const SourceContext = Type.Object(
  {
    providerKey: Type.String(),
    itemId: Type.String(),
    facts: SourceFacts,
    lastSuccessUtc: Nullable(UtcDateTime),
    isAvailable: Type.Boolean(),
  },
  closed('SourceContext'),
);

export const SourceChange = Type.Object(
  {
    id: Int64(),
    incomingId: Nullable(Id),
    kind: Type.Enum(['source', 'reply']),
    before: Nullable(SourceFacts, { description: 'The facts before a source change; null for a reply.' }),
    after: Nullable(SourceFacts, { description: 'The facts after a source change; null for a reply.' }),
    response: Nullable(Type.String({ description: 'A reply\'s text; null without scope human-requests:read.' })),
    author: Nullable(Type.String({ description: 'A reply\'s author; null without scope human-requests:read.' })),
    occurredUtc: UtcDateTime,
    receivedUtc: UtcDateTime,
    acknowledgedUtc: Nullable(UtcDateTime),
  },
  closed('SourceChange'),
);

export const SourceActivation = Type.Object(
  { activatedUtc: UtcDateTime, sources: Type.Array(SourceFacts) },
  closed('SourceActivation'),
);

export const AwaitingEvaluation = Type.Object(
  {
    id: IdOf('The Incoming item\'s id: the incomingId to evaluate with.'),
    assistanceStageId: Nullable(IdOf('The assistance-stage id of the request (/human-requests/{id}).')),
    assistanceKind: AssistanceKind,
    response: Nullable(Type.String()),
    respondedAtUtc: Nullable(UtcDateTime),
    revision: UuidOf('The revision to send with the evaluation (bare, as here).'),
  },
  closed('AwaitingEvaluation'),
);

export const Task = Type.Object(
  {
    id: Id,
    title: Type.String(),
    description: Nullable(Type.String()),
    status: TaskStatus,
    sequence: Int32({ minimum: 0 }),
    estimatedMinutes: Int32({ minimum: 0, description: 'Total planned duration.' }),
    remainingMinutes: Int32({ minimum: 0, description: 'Calculated from the plan.' }),
    actualMinutes: Type.Number({ minimum: 0 }),
    actualIntervals: Type.Array(ActualInterval),
    startedAt: Nullable(LocalDateTime),
    completedAt: Nullable(LocalDateTime),
    earliestStart: Nullable(LocalDateTime),
    isWaiting: Type.Boolean({ description: 'Explicit external-waiting flag.' }),
    releaseDate: Nullable(LocalDateTime),
    resourceMode: ResourceMode,
    project: Project,
    assignees: Type.Array(Assignment),
    dependencies: Type.Array(Dependency),
    requiresAttention: Type.Boolean(),
    externalContext: Type.Array(SourceContext),
    externalChanges: Type.Array(SourceChange),
    sourceActivations: Type.Array(SourceActivation),
    responsesAwaitingEvaluation: Type.Array(AwaitingEvaluation, { description: 'Empty without scope human-requests:read.' }),
    blocked: Type.Boolean(),
    blockingReasons: Type.Array(BlockingReason),
    humanRequests: Type.Array(HumanRequest, { description: 'Empty without scope human-requests:read.' }),
    notes: Type.Array(Note, { description: 'Always empty in list responses.' }),
    etag: Type.String({
      pattern: '^"task-[1-9][0-9]*-plan-[1-9][0-9]*"$',
      description: 'The task\'s ETag, quoted, as the ETag header: the If-Match of task writes.',
    }),
  },
  closed('Task'),
);

export const Incoming = Type.Object(
  {
    id: Id,
    title: Type.String(),
    details: Nullable(Type.String()),
    estimatedMinutes: Int32({ minimum: 0 }),
    priority: PriorityName,
    requester: Type.String(),
    requestedAtUtc: UtcDateTime,
    status: Lifecycle,
    suggestedStart: Nullable(LocalDateTime),
    suggestionReason: Nullable(Type.String()),
    plannedStart: Nullable(LocalDateTime),
    response: Nullable(Type.String()),
    responseState: ResponseState,
    actualStartUtc: Nullable(UtcDateTime),
    actualEffortMinutes: Nullable(Int32({ minimum: 0 })),
    etag: Type.String({ description: 'Quoted revision UUID, usable verbatim as If-Match on Incoming actions.' }),
  },
  closed('Incoming'),
);

export const Claim = Type.Object({
  token: Uuid,
  expiresUtc: UtcDateTimeOf('When the lease ends unless renewed. A replayed claim answers the lease it acquired, which may have ended since: check this.'),
}, closed('Claim'));

export const ClaimRelease = Type.Object(
  { released: Type.Boolean(), releasedUtc: UtcDateTimeOf('When the lease ended (now), not a future expiry; YYYY-MM-DDTHH:mm:ss.sssZ.') },
  closed('ClaimRelease'),
);

export const CreatedRequest = Type.Object(
  { id: IdOf('The assistance-stage id: GET /human-requests/{id} reads the request.'), originatingTaskId: Id },
  closed('CreatedRequest'),
);

export const Problem = Type.Object(
  {
    type: Type.Enum(['about:blank']),
    title: Type.String(),
    status: Type.Integer({ format: 'int32', minimum: 400, maximum: 599 }),
    code: Type.Enum([...ERROR_CODES]),
    traceId: Type.String({ pattern: '^[0-9a-f]{32}$' }),
  },
  closed('Error'),
);

export type IdentityView = Static<typeof Identity>;
export type TaskView = Static<typeof Task>;
export type ProjectView = Static<typeof Project>;
export type AssignmentView = Static<typeof Assignment>;
export type HumanRequestView = Static<typeof HumanRequest>;
export type SourceContextView = Static<typeof SourceContext>;
export type SourceChangeView = Static<typeof SourceChange>;
export type SourceActivationView = Static<typeof SourceActivation>;
export type SourceFactsView = Static<typeof SourceFacts>;
export type AwaitingEvaluationView = Static<typeof AwaitingEvaluation>;
export type NoteView = Static<typeof Note>;
export type IncomingView = Static<typeof Incoming>;
