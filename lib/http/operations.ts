import type { TSchema } from 'typebox';
import type { CallerRequirements } from '../auth/permissions.js';
import type { Scope } from '../auth/scopes.js';
import {
  ActualEffort, AssistanceCreate, ClaimRequest, EmptyRequest, ExternalEvaluation, IncomingComplete,
  IncomingPlan, IncomingReassign, NoteCreate, TaskPatch,
} from '../schemas/requests.js';
import {
  Claim, ClaimRelease, CreatedRequest, HumanRequest, Identity, Incoming, Task,
} from '../schemas/resources.js';
import { Type } from 'typebox';
import type { ErrorCode } from '../domain/errors.js';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'PUT';

/** What the path `{id}` names; it decides the not-found and ownership checks. */
export type PathTarget = 'task' | 'assistance-stage' | 'incoming' | 'none';

export interface BodySpec {
  readonly schema: TSchema;
  /** false for EmptyRequest operations, where no body, an empty body or `{}` are all accepted. */
  readonly required: boolean;
}

export interface QueryParameterSpec {
  readonly name: string;
  readonly kind: 'boolean';
  readonly description: string;
}

export interface SuccessSpec {
  readonly status: number;
  readonly description: string;
  readonly schema: TSchema | null;
  /** Response headers the success carries, by name. */
  readonly headers: readonly ('ETag' | 'Location' | 'Warning')[];
  /** Where `Location` points, below `/api/v1`, for a write that creates something. */
  readonly location?: string;
}

/** Every operation of the spec, by the id it has in the OpenAPI document. */
export const OPERATION_IDS = [
  'getIdentity', 'listAvailableTasks', 'listWaitingTasks', 'getTask', 'patchTask', 'replaceActualEffort', 'appendNote',
  'claimTask', 'renewClaim', 'releaseClaim', 'createHumanRequest', 'getHumanRequest', 'evaluateExternal', 'listIncoming',
  'startIncoming', 'planIncoming', 'reassignIncoming', 'completeIncoming', 'getOpenApi',
] as const;

export type OperationId = (typeof OPERATION_IDS)[number];

/** The operations anyone may call, without credentials. */
export type AnonymousOperationId = 'getOpenApi';

/** The operations a client calls with its credential: each has its handler (see handlers.ts). */
export type ClientOperationId = Exclude<OperationId, AnonymousOperationId>;

/**
 * One operation of the spec: everything the pipeline needs to run it (scope, body, retry and
 * precondition rules) and everything the OpenAPI document says about it. The same table feeds
 * both, so the document cannot drift from the behaviour.
 */
export interface OperationSpec extends CallerRequirements {
  readonly operationId: OperationId;
  readonly method: HttpMethod;
  /** Path below `/api/v1`, OpenAPI style (`/tasks/{id}`). */
  readonly path: string;
  readonly summary: string;
  readonly target: PathTarget;
  readonly query: readonly QueryParameterSpec[];
  readonly body: BodySpec | null;
  readonly idempotencyKey: 'required' | 'optional' | 'none';
  readonly ifMatch: 'task-etag' | 'incoming-revision' | 'none';
  /** Task writes other than claim/renew/release honour `X-Task-Claim`. */
  readonly claimHeader: boolean;
  readonly success: SuccessSpec;
}

const noQuery: readonly QueryParameterSpec[] = [];

function taskWrite(
  operationId: ClientOperationId,
  method: HttpMethod,
  path: string,
  summary: string,
  scope: Scope,
  body: BodySpec,
  idempotencyKey: 'required' | 'optional',
  success: SuccessSpec,
  claimHeader = true,
): OperationSpec {
  return {
    operationId, method, path, summary, caller: 'resource-client', scope, target: 'task', query: noQuery,
    body, idempotencyKey, ifMatch: 'task-etag', claimHeader,
    // Every task write answers with the task's new ETag, so the next write needs no re-read for it.
    success: { ...success, headers: [...success.headers, 'ETag'] },
  };
}

function incomingAction(operationId: ClientOperationId, action: string, summary: string, body: BodySpec): OperationSpec {
  return {
    operationId, method: 'POST', path: `/incoming/{id}/${action}`, summary, caller: 'resource-client',
    scope: 'tasks:update', target: 'incoming', query: noQuery, body, idempotencyKey: 'required',
    ifMatch: 'incoming-revision', claimHeader: false,
    success: { ...noContent, description: "Done. ETag is the item's new revision (quoted).", headers: ['ETag'] },
  };
}

const noContent: SuccessSpec = { status: 204, description: 'Done.', schema: null, headers: [] };

export const OPERATIONS: readonly OperationSpec[] = [
  {
    operationId: 'getIdentity', method: 'GET', path: '/identity', summary: 'The authenticated identity.',
    caller: 'any-client', scope: null, target: 'none', query: noQuery, body: null, idempotencyKey: 'none',
    ifMatch: 'none', claimHeader: false,
    success: { status: 200, description: 'The identity.', schema: Identity, headers: [] },
  },
  {
    operationId: 'listAvailableTasks', method: 'GET', path: '/tasks/available',
    summary: 'Owned, unfinished, unblocked, unclaimed work with a current scheduler allocation or an estimate of 0.',
    caller: 'resource-client', scope: 'tasks:read', target: 'none', query: noQuery, body: null,
    idempotencyKey: 'none', ifMatch: 'none', claimHeader: false,
    success: { status: 200, description: 'Runnable tasks in offer order.', schema: Type.Array(Task), headers: [] },
  },
  {
    operationId: 'listWaitingTasks', method: 'GET', path: '/tasks/waiting',
    summary: 'Owned, unfinished, blocked work.',
    caller: 'resource-client', scope: 'tasks:read', target: 'none', query: noQuery, body: null,
    idempotencyKey: 'none', ifMatch: 'none', claimHeader: false,
    success: { status: 200, description: 'Blocked tasks in offer order.', schema: Type.Array(Task), headers: [] },
  },
  {
    operationId: 'getTask', method: 'GET', path: '/tasks/{id}', summary: 'One owned task, with notes.',
    caller: 'resource-client', scope: 'tasks:read', target: 'task', query: noQuery, body: null,
    idempotencyKey: 'none', ifMatch: 'none', claimHeader: false,
    success: { status: 200, description: 'The task; the ETag header equals its etag field.', schema: Task, headers: ['ETag'] },
  },
  {
    ...taskWrite('patchTask', 'PATCH', '/tasks/{id}', 'Change planning fields of an owned task.', 'tasks:update',
      { schema: TaskPatch, required: true }, 'optional',
      { status: 204, description: 'Applied (an empty PATCH {} changes nothing and moves no version). Carries Warning 299 when remainingMinutes was sent.', schema: null, headers: ['Warning'] }),
    memberScopes: [{ member: 'actualIntervals', scope: 'tasks:time' }],
  },
  taskWrite('replaceActualEffort', 'PUT', '/tasks/{id}/actual-effort', "Replace the caller's own actual intervals.",
    'tasks:time', { schema: ActualEffort, required: true }, 'optional', noContent),
  taskWrite('appendNote', 'POST', '/tasks/{id}/notes', 'Append a note.', 'tasks:notes',
    { schema: NoteCreate, required: true }, 'optional', noContent),
  taskWrite('claimTask', 'POST', '/tasks/{id}/claim', 'Acquire a 15-minute lease on runnable work.', 'tasks:update',
    { schema: EmptyRequest, required: false }, 'required',
    { status: 200, description: 'The lease.', schema: Claim, headers: [] }, false),
  taskWrite('renewClaim', 'POST', '/tasks/{id}/claim/renew', 'Renew a live lease by 15 minutes.', 'tasks:update',
    { schema: ClaimRequest, required: true }, 'required',
    { status: 200, description: 'The renewed lease.', schema: Claim, headers: [] }, false),
  taskWrite('releaseClaim', 'POST', '/tasks/{id}/claim/release', 'Terminate a lease.', 'tasks:update',
    { schema: ClaimRequest, required: true }, 'required',
    { status: 200, description: 'The lease was terminated.', schema: ClaimRelease, headers: [] }, false),
  taskWrite('createHumanRequest', 'POST', '/tasks/{id}/human-requests', 'Ask an active human for assistance.',
    'human-requests:create', { schema: AssistanceCreate, required: true }, 'optional',
    { status: 201, description: 'The assistance stage was created.', schema: CreatedRequest, headers: ['Location'], location: '/human-requests/{id}' }),
  {
    operationId: 'getHumanRequest', method: 'GET', path: '/human-requests/{id}',
    summary: 'An assistance request raised from work owned by the caller.',
    caller: 'resource-client', scope: 'human-requests:read', target: 'assistance-stage', query: noQuery, body: null,
    idempotencyKey: 'none', ifMatch: 'none', claimHeader: false,
    success: { status: 200, description: 'The assistance request.', schema: HumanRequest, headers: [] },
  },
  taskWrite('evaluateExternal', 'POST', '/tasks/{id}/external-evaluation',
    'Acknowledge a source change, or resolve, keep waiting on or follow up a response.', 'tasks:update',
    { schema: ExternalEvaluation, required: true }, 'required', noContent),
  {
    operationId: 'listIncoming', method: 'GET', path: '/incoming', summary: 'Incoming items for the mapped recipient.',
    caller: 'resource-client', scope: 'tasks:read', target: 'none',
    query: [{ name: 'includeAccepted', kind: 'boolean', description: 'true: items in every lifecycle state; otherwise floating items only.' }],
    body: null, idempotencyKey: 'none', ifMatch: 'none', claimHeader: false,
    success: { status: 200, description: 'Incoming items by priority, requestedAtUtc, id.', schema: Type.Array(Incoming), headers: [] },
  },
  incomingAction('startIncoming', 'start', 'Commit to the item and start it now.', { schema: EmptyRequest, required: false }),
  incomingAction('planIncoming', 'plan', 'Commit to the item at an explicit plannedStart.', { schema: IncomingPlan, required: true }),
  incomingAction('reassignIncoming', 'reassign', 'Hand floating work to another staff member.', { schema: IncomingReassign, required: true }),
  incomingAction('completeIncoming', 'complete', 'Complete the item, with a response or {} for none.', { schema: IncomingComplete, required: true }),
  {
    operationId: 'getOpenApi', method: 'GET', path: '/openapi.json', summary: 'This OpenAPI 3.0.3 description.',
    caller: 'anonymous', scope: null, target: 'none', query: noQuery, body: null, idempotencyKey: 'none',
    ifMatch: 'none', claimHeader: false,
    success: { status: 200, description: 'The OpenAPI document.', schema: Type.Object({}, { additionalProperties: true }), headers: [] },
  },
];

/**
 * The business rules' error codes of each operation, beyond what its table row implies (the
 * pipeline's checks of credentials, scope, target, body, If-Match, retry key and lease header):
 * the OpenAPI document lists them per operation, and the tests check every answer against them.
 */
export const BUSINESS_ERRORS: Readonly<Record<OperationId, readonly ErrorCode[]>> = {
  getIdentity: [], listAvailableTasks: [], listWaitingTasks: [], getTask: [], getHumanRequest: [], listIncoming: [], getOpenApi: [],
  patchTask: ['task_completed', 'task_blocked', 'dependency_conflict', 'invalid_field'],
  replaceActualEffort: ['invalid_field'],
  appendNote: ['invalid_field'],
  claimTask: ['task_completed', 'task_blocked', 'task_not_runnable', 'task_claimed', 'source_context_changed', 'source_unavailable'],
  renewClaim: ['claim_expired'],
  releaseClaim: ['claim_expired'],
  createHumanRequest: ['invalid_field', 'human_assignee_invalid'],
  evaluateExternal: ['stale_update', 'request_completed', 'incoming_state_conflict', 'source_context_changed', 'invalid_field'],
  startIncoming: ['incoming_state_conflict'],
  planIncoming: ['incoming_state_conflict', 'invalid_field'],
  reassignIncoming: ['incoming_state_conflict', 'human_assignee_invalid'],
  completeIncoming: ['incoming_state_conflict'],
};

export const BASE_PATH = '/api/v1';
