import { assertMemberScopes } from '../auth/permissions.js';
import type { AssistanceRequests } from '../domain/assistance/requests.js';
import type { ExternalEvaluation } from '../domain/assistance/evaluation.js';
import type { IncomingWork } from '../domain/assistance/incoming.js';
import type { ClaimUseCases } from '../domain/claims.js';
import { identityView } from '../domain/identity.js';
import { ServiceError } from '../domain/errors.js';
import { taskEtag } from '../domain/tasks/view.js';
import { taskIfMatch } from './preconditions.js';
import type { MutationOutcome } from '../domain/outcome.js';
import type { MutationRunner, WriteRequest } from './write-runner.js';
import type { ClientOperationId } from './operations.js';
import type { ServiceResponse } from './types.js';
import type { TaskReads } from '../domain/tasks/read.js';
import type { TaskWrites } from '../domain/tasks/write.js';
import type {
  ActualEffortInput, AssistanceCreateInput, ClaimRequestInput, ExternalEvaluationInput, IncomingCompleteInput,
  IncomingPlanInput, IncomingReassignInput, NoteCreateInput, TaskPatchInput,
} from '../schemas/requests.js';
import { ifNoneMatchHits, REVALIDATED_PER_CLIENT } from './conditional.js';
import { jsonResponse, type OperationContext, type OperationHandler } from './pipeline.js';
import type { RenderedRead, ResponseCache } from './response-cache.js';
import type { Timed } from '../domain/tasks/read.js';
import type { SnapshotStatements } from '../store/snapshots.js';
import type { Clock } from '../time/clock.js';

/** The linked sources a claim refreshes first (contract 9). */
export interface ClaimSources {
  /** Refreshes every source of the task; resolves to whether any failed and whether the task's facts changed. */
  refreshTask(taskId: number): Promise<{ failed: boolean; changed: boolean }> | null;
  /**
   * If every step to the organisation's version since `version` was a refresh of this process
   * (this claim's, or any other's): that version, whether they recorded replies alone, and the
   * tasks whose facts they recorded as changed; else null.
   */
  refreshedSince(organisationId: number, version: number): { version: number; repliesOnly: boolean; changedTasks: ReadonlySet<number> } | null;
  /** A claim's If-Match was found current at `version`: steps remembered past it are from a database that went back. */
  startsAt(organisationId: number, version: number): void;
  /** `Retry-After` of a 503 source_unavailable: how long the offer list counts the failure. */
  readonly retryAfterSeconds: number;
}

/** The request as if its If-Match named `version`, to which only recorded replies moved it. */
function withIfMatchAt(request: WriteRequest, etag: { taskId: number }, version: number): WriteRequest {
  const moved = taskEtag(etag.taskId, version);
  return {
    ...request,
    headers: { get: (name) => (name.toLowerCase() === 'if-match' ? moved : request.headers.get(name)) },
  };
}

export interface HandlerDependencies {
  /** Rendered answers of the task reads (getTask, the offer and waiting lists). */
  readonly readCache: ResponseCache;
  /** Runs the reads of an answer that is not cached in one read transaction. */
  readonly snapshots: Pick<SnapshotStatements, 'within'>;
  readonly claimSources: ClaimSources;
  /** Publishes queued assistance requests once their transaction has committed. */
  readonly publisher: { kick(): void };
  readonly tasks: TaskReads;
  readonly writes: TaskWrites;
  readonly claims: ClaimUseCases;
  readonly mutations: MutationRunner;
  readonly assistance: AssistanceRequests;
  readonly incoming: IncomingWork;
  readonly evaluation: ExternalEvaluation;
  /** The service clock: a claim that waited for its sources reads the time again. */
  readonly clock: Clock;
}

const okJson = (rendered: RenderedRead): ServiceResponse => ({
  status: 200, headers: { 'content-type': 'application/json' }, body: rendered.body,
});

/**
 * The validated body of a request. The pipeline has checked it against the operation's schema,
 * so the cast only names the type the schema guarantees.
 */
function bodyOf<T>(context: OperationContext): T {
  return context.body?.value as T;
}

/** Binds each operation a client calls to its use case: a missing or misspelt one does not compile. */
export function operationHandlers(deps: HandlerDependencies): Record<ClientOperationId, OperationHandler> {
  const { tasks, writes, claims, mutations, assistance, incoming, evaluation, claimSources, publisher, readCache, snapshots, clock } = deps;

  /**
   * A task read answered from the cache when nothing it depends on has changed. Readers whose
   * answers can differ (resource: remaining time on its calendar; assistance scope: hidden
   * content) never share an entry. An answer that waited for a source refresh is not stored: the
   * refresh moved the epoch the request started with.
   */
  function cachedRead<T>(context: OperationContext, kind: string, read: () => Timed<T>, etagOf?: (value: T) => string): RenderedRead;
  function cachedRead<T>(
    context: OperationContext, kind: string, read: () => Timed<T> | Promise<Timed<T>>,
  ): RenderedRead | Promise<RenderedRead>;
  function cachedRead<T>(
    context: OperationContext,
    kind: string,
    read: () => Timed<T> | Promise<Timed<T>>,
    etagOf?: (value: T) => string,
  ): RenderedRead | Promise<RenderedRead> {
    const { principal, epoch, now } = context;
    const key = `${kind}:${context.id}:${principal.resource?.id ?? 0}:${principal.has('human-requests:read') ? 1 : 0}`;
    const hit = readCache.get(key, epoch, now);
    if (hit !== undefined) return hit;
    const render = ({ value }: Timed<T>): RenderedRead =>
      etagOf === undefined ? { body: JSON.stringify(value) } : { body: JSON.stringify(value), etag: etagOf(value) };
    const result = snapshots.within(read);
    if (result instanceof Promise) return result.then(render);
    const rendered = render(result);
    if (context.cacheable) readCache.set(key, epoch, now, result.validUntil, rendered);
    return rendered;
  }

  const listResponse = (rendered: RenderedRead | Promise<RenderedRead>) =>
    rendered instanceof Promise ? rendered.then(okJson) : okJson(rendered);

  /**
   * A list that waited for a source refresh (up to the source timeout) is answered only if its
   * caller still may read it, as a claim that waited is granted only then: a client revoked, or a
   * worker deactivated, meanwhile gets the answer it would get now.
   */
  const afterAnyWait = <T>(context: OperationContext, read: T | Promise<T>): T | Promise<T> =>
    read instanceof Promise ? read.then((value) => (context.reverify(), value)) : read;

  const writeRequest = (context: OperationContext): WriteRequest => ({
    principal: context.principal,
    operation: context.operation,
    method: context.method,
    path: context.path,
    id: context.id,
    now: context.now,
    headers: context.headers,
    canonicalBody: context.body?.canonical ?? '',
    assertMemberScopes: () => assertMemberScopes(context.operation, context.body?.value, context.principal),
  });

  const write = (apply: (context: OperationContext) => MutationOutcome): OperationHandler => (context) =>
    mutations.run(writeRequest(context), () => apply(context));

  /** A write that may queue a publication: the source is only called after the commit. */
  const writeThenPublish = (apply: (context: OperationContext) => MutationOutcome): OperationHandler => (context) => {
    const response = mutations.run(writeRequest(context), () => apply(context));
    if (!(response instanceof Promise)) {
      publisher.kick();
      return response;
    }
    return response.then((committed) => {
      publisher.kick();
      return committed;
    });
  };

  /**
   * Contract 2: after every other check, a claim refreshes the task's linked sources (always,
   * whatever their age). A failure is 503 and a change of facts 409, and neither creates a lease.
   * The refresh is I/O, so it runs between a dry run and the real, re-checked write.
   */
  const claim: OperationHandler = (context) => {
    const request = writeRequest(context);
    const replay = mutations.check(request, () => claims.assertClaimable(context.principal, context.id, context.now));
    if (replay !== null) return replay;
    const refreshed = claimSources.refreshTask(context.id);
    if (refreshed === null) return mutations.run(request, () => claims.claim(context.principal, context.id, context.now));
    // The dry run found it current: the version the claim started from.
    const ifMatch = taskIfMatch(request.headers.get('if-match'));
    claimSources.startsAt(context.principal.organisationId, ifMatch.version);
    return refreshed.then(({ failed, changed }) => {
      // The lease runs 15 minutes from when it is granted, not from when the request came in.
      const now = clock.now();
      const granted = { ...request, now };
      const acquire = () => claims.claim(context.principal, context.id, now);
      // The client and its assignment were checked before the refresh; either may have gone since.
      context.reverify();
      if (failed) throw new ServiceError('source_unavailable', undefined, { 'retry-after': String(claimSources.retryAfterSeconds) });
      // What refreshes recorded since the If-Match was checked: whichever recorded it (this
      // claim's, or a list's that shared the source's answer and applied it first), a change of
      // the task's facts is the claim's 409, and a reply alone refuses nothing (contract 9),
      // though it moved the version the If-Match named. Any other step meanwhile (a write, a
      // change of another item's facts) still makes the If-Match stale.
      const since = claimSources.refreshedSince(context.principal.organisationId, ifMatch.version);
      if (changed || since?.changedTasks.has(context.id) === true) throw new ServiceError('source_context_changed');
      return mutations.run(since?.repliesOnly === true ? withIfMatchAt(granted, ifMatch, since.version) : granted, acquire);
    });
  };

  return {
    getIdentity: ({ principal }) => jsonResponse(200, identityView(principal)),
    listAvailableTasks: (c) => listResponse(cachedRead(c, 'available', () => afterAnyWait(c, tasks.listAvailable(c.principal, c.now)))),
    listWaitingTasks: (c) => listResponse(cachedRead(c, 'waiting', () => afterAnyWait(c, tasks.listWaiting(c.principal, c.now)))),
    getTask: (c): ServiceResponse => {
      const task = cachedRead(c, 'task', () => tasks.getTask(c.principal, c.id, c.now), (view) => view.etag);
      const etag = task.etag ?? '';
      // A 304 carries what the 200 would have for a cache to update its copy (RFC 9110 15.4.5).
      if (ifNoneMatchHits(c.headers.get('if-none-match'), etag)) return { status: 304, headers: { etag, ...REVALIDATED_PER_CLIENT } };
      return { status: 200, headers: { etag, ...REVALIDATED_PER_CLIENT, 'content-type': 'application/json' }, body: task.body };
    },
    patchTask: write((c) => writes.patch(c.principal, c.id, bodyOf<TaskPatchInput>(c), c.now)),
    replaceActualEffort: write((c) => writes.replaceEffort(c.principal, c.id, bodyOf<ActualEffortInput>(c), c.now)),
    appendNote: write((c) => writes.appendNote(c.principal, c.id, bodyOf<NoteCreateInput>(c), c.now)),
    claimTask: claim,
    renewClaim: write((c) => claims.renew(c.principal, c.id, bodyOf<ClaimRequestInput>(c).token, c.now)),
    releaseClaim: write((c) => claims.release(c.principal, c.id, bodyOf<ClaimRequestInput>(c).token, c.now)),
    createHumanRequest: writeThenPublish((c) => assistance.create(c.principal, c.id, bodyOf<AssistanceCreateInput>(c), c.now)),
    // One read transaction each, as for the task reads: their several statements see one snapshot.
    getHumanRequest: ({ id, now }) => jsonResponse(200, snapshots.within(() => assistance.read(id, now))),
    evaluateExternal: writeThenPublish((c) => evaluation.evaluate(c.id, bodyOf<ExternalEvaluationInput>(c), c.now)),
    listIncoming: ({ principal, query, now }) =>
      jsonResponse(200, snapshots.within(() => incoming.list(principal, query.get('includeAccepted') === 'true', now))),
    startIncoming: write((c) => incoming.start(c.id, c.now)),
    planIncoming: write((c) => incoming.plan(c.id, bodyOf<IncomingPlanInput>(c))),
    reassignIncoming: write((c) => incoming.reassign(c.principal, c.id, bodyOf<IncomingReassignInput>(c))),
    completeIncoming: write((c) => incoming.complete(c.id, bodyOf<IncomingCompleteInput>(c), c.now)),
  };
}
