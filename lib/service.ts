import { setMaxListeners } from 'node:events';
import { ServiceError } from './domain/errors.js';
import { FixedWindowRateLimiter } from './auth/rate-limit.js';
import { assertIncomingAddressed, assertStageVisible } from './domain/assistance/access.js';
import { externalEvaluation } from './domain/assistance/evaluation.js';
import { incomingWork } from './domain/assistance/incoming.js';
import { assistanceRequests } from './domain/assistance/requests.js';
import { claimUseCases } from './domain/claims.js';
import { mutationRunner } from './http/write-runner.js';
import { assertTaskOwned, type TaskAccess } from './domain/tasks/access.js';
import { taskReads } from './domain/tasks/read.js';
import { taskWrites } from './domain/tasks/write.js';
import { operationHandlers } from './http/handlers.js';
import { OPERATIONS } from './http/operations.js';
import { createPipeline } from './http/pipeline.js';
import { newTraceId, problemResponse } from './http/problem.js';
import { Router } from './http/router.js';
import type { ServiceRequest, ServiceResponse } from './http/types.js';
import { resolveOptions, type ServiceOptions } from './options.js';
import { createPlanner } from './domain/planning/planner.js';
import { remainingMinutesFor } from './domain/planning/remaining-minutes.js';
import type { Allocation } from './domain/tasks/read.js';
import { planInputStatements } from './store/plan-inputs.js';
import { openApiText } from './schemas/openapi.js';
import { calendarStatements } from './store/calendars.js';
import { claimStatements } from './store/claims.js';
import { clientStatements } from './store/clients.js';
import { fileIdentity } from './store/files.js';
import { databaseFileCheck, mainFile, openDatabase, withoutBusyWait, type Db } from './store/open.js';
import { organisationStatements } from './store/organisations.js';
import { assistanceStatements } from './store/assistance.js';
import { receiptStatements } from './store/receipts.js';
import { sourceChangeStatements } from './store/source-changes.js';
import { taskReadStatements } from './store/task-reads.js';
import { taskWriteStatements } from './store/task-writes.js';
import { sourceStatements, type TaskSourceRow } from './store/sources.js';
import { sourceRefresher } from './sources/refresher.js';
import { sourcePublisher } from './sources/publisher.js';
import { validatorFor } from './schemas/validator.js';
import { groupCommit, outsideBatch } from './store/group-commit.js';
import { EpochMemo, snapshotStatements } from './store/snapshots.js';
import { ResponseCache } from './http/response-cache.js';
import { publicationsOf } from './domain/assistance/publications.js';

/** A running service over one database. */
export interface Service {
  /** Answers one request; synchronous unless an operation has to wait for I/O. */
  handle(request: ServiceRequest): ServiceResponse | Promise<ServiceResponse>;
  /** Closes the database if the service opened it (a Database passed in stays open). */
  close(): void;
  /** Resolves when work in flight has finished: answers still being made, the open write batch, then publishing to linked sources. */
  idle(): Promise<void>;
}

/** Creates the service: opens the database, applies the schema and prepares every statement. */
export function createService(options: ServiceOptions): Service {
  const resolved = resolveOptions(options);
  // Two services on one connection would open transactions inside each other's write batches.
  if (typeof resolved.db !== 'string' && servedHandles.has(resolved.db)) {
    throw new TypeError('createService: this Database is already used by another service; give each service its own connection');
  }
  const { db, owned } = openDatabase(resolved.db);
  // Two services writing one file from one process block each other: one's write waits,
  // synchronously, for a write lock the other releases only on a later turn of the event loop.
  const file = mainFile(db);
  const servedFile = file === '' ? undefined : fileIdentity(file);
  // A connection closed without its service's close() serves nothing any more.
  if (servedFile !== undefined && servedFiles.get(servedFile)?.open === true) {
    if (owned) db.close();
    throw new TypeError(`createService: ${file} is already served by another service in this process; close() that one first`);
  }
  let closed = false;
  // Ends the provider calls still under way when the service is closed. Each call listens while it
  // runs, and an offer list may refresh many items at once: no listener count is a leak here.
  const shutdown = new AbortController();
  setMaxListeners(0, shutdown.signal);
  const inFlight = new Set<Promise<ServiceResponse>>();

  const organisations = organisationStatements(db);
  const reads = taskReadStatements(db);
  const calendars = calendarStatements(db);
  const claimRows = claimStatements(db);
  const assistance = assistanceStatements(db);
  const sources = sourceStatements(db);
  const commits = groupCommit(db, databaseFileCheck(db));
  const refresher = sourceRefresher({
    db, sources, organisations, providers: resolved.sources, timeoutMs: resolved.sourceTimeoutMs, clock: resolved.clock,
    logger: resolved.logger, batches: commits,
    closed: () => closed, stop: shutdown.signal,
  });
  const refresh = (items: readonly TaskSourceRow[]) => refresher.refresh(items, () => resolved.clock.now());
  const publisher = sourcePublisher({
    sources, providers: resolved.sources, timeoutMs: resolved.sourceTimeoutMs, logger: resolved.logger,
    clock: resolved.clock,
    inTransaction: () => db.inTransaction,
    batches: commits,
    closed: () => closed, stop: shutdown.signal,
  });
  const publications = publicationsOf(sources);
  const snapshots = snapshotStatements(db);
  const planner = createPlanner({ inputs: planInputStatements(db), calendars, organisations, committedOnly: () => snapshots.committedOnly });
  const allocation: Allocation = (principal, now) => {
    if (principal.resource === null) return { allocated: () => false, validUntil: Number.POSITIVE_INFINITY };
    const plan = planner.planFor(principal.organisationId, principal.resource.id, now);
    return { allocated: (row) => plan.placements.has(row.id), validUntil: plan.validUntil };
  };

  const taskAccess = new EpochMemo<TaskAccess | null>();
  const handlers = operationHandlers({
    clock: resolved.clock,
    readCache: new ResponseCache(),
    snapshots,
    claimSources: {
      retryAfterSeconds: Math.max(1, Math.ceil(resolved.sourceMaxAgeMs / 1000)),
      refreshTask(taskId) {
        const items = sources.ofTasks([taskId]);
        if (items.length === 0) return null;
        return refresh(items).then((result) => ({
          failed: items.some((item) => result.failedItems.has(item.id)),
          changed: result.changedTasks.has(taskId),
        }));
      },
      refreshedSince: (organisationId, version) => refresher.refreshedSince(organisationId, version),
      startsAt: (organisationId, version) => refresher.forgetStepsAfter(organisationId, version),
    },
    tasks: taskReads({
      sources: {
        itemsOf: (ids) => sources.ofTasks(ids),
        expectingReplies: (id) => sources.expectingReplies(id),
        // Closed while waiting for a batch, the connection may already be another service's.
        refreshThenRead: (items, read) => refresh(items).then(() => outsideBatch(commits, () => {
          if (closed) throw new ServiceError('temporarily_unavailable', 'the service is closed', { 'retry-after': '1' });
          return snapshots.within(read);
        })),
        maxAgeMs: resolved.sourceMaxAgeMs,
      },
      reads,
      remaining: (resourceId, now) => remainingMinutesFor(calendars, resourceId, now),
      allocation,
    }),
    writes: taskWrites({ writes: taskWriteStatements(db), calendars }),
    claims: claimUseCases({ reads, claims: claimRows, allocation }),
    mutations: mutationRunner({
      db, commits, receipts: receiptStatements(db), organisations, claims: claimRows,
      incomingRevision: (id) => assistance.incoming(id)?.revision, closed: () => closed,
    }),
    assistance: assistanceRequests(assistance, publications, (row, now) => remainingMinutesFor(calendars, row.assignedHumanId, now).humanRequest(row)),
    publisher,
    incoming: incomingWork({ assistance, planner }),
    evaluation: externalEvaluation({ assistance, changes: sourceChangeStatements(db), publications }),
  });

  // Request schemas are compiled now (once per process), not by the first request of each operation.
  for (const operation of OPERATIONS) if (operation.body !== null) validatorFor(operation.body.schema);

  const handle = createPipeline({
    router: new Router(OPERATIONS),
    clients: clientStatements(db),
    snapshots,
    batches: commits,
    closed: () => closed,
    limiter: new FixedWindowRateLimiter(resolved.rateLimit),
    clock: resolved.clock,
    logger: resolved.logger,
    handlers,
    anonymousHandlers: {
      getOpenApi: () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: openApiText() }),
    },
    targetChecks: {
      task: (principal, id, read) => assertTaskOwned(principal, id, reads, { memo: taskAccess, ...read }),
      'assistance-stage': (principal, id) => assertStageVisible(principal, id, assistance),
      incoming: (principal, id) => assertIncomingAddressed(principal, id, assistance),
    },
  });

  // Registered once nothing above can throw: a failed construction holds no file.
  servedHandles.add(db);
  if (servedFile !== undefined) servedFiles.set(servedFile, db);
  return {
    handle(request) {
      // A host still passing requests on while it shuts down: retry later, elsewhere.
      if (closed) return problemResponse('temporarily_unavailable', newTraceId(), { 'retry-after': '1' });
      const response = handle(request);
      if (response instanceof Promise) {
        inFlight.add(response);
        void response.finally(() => inFlight.delete(response));
      }
      // Failed publications are retried later, driven by traffic: no timer keeps the process busy.
      // The answer is already made: a failure here (a closed database, an embedder's clock that
      // throws) is the log's business, never the client's, and handle() must not throw.
      try {
        publisher.kickIfDue();
      } catch (error) {
        resolved.logger.error({ message: 'publication check failed', error: error instanceof Error ? error.stack ?? error.message : String(error) });
      }
      return response;
    },
    async idle() {
      // Answers still being made (a claim waiting on its source) and the open write batch finish
      // first: close() after idle() must not pull the database from under them. Publications are
      // kicked once the writes' answers are made, a turn of the event loop later.
      while (inFlight.size > 0 || commits.open) await Promise.allSettled([...inFlight, commits.settled()]);
      await new Promise<void>((resolve) => setImmediate(resolve));
      await publisher.idle();
    },
    close() {
      // Once only: a second close() must not free the file or connection of a later service.
      if (closed) return;
      closed = true;
      // Answers waiting on a linked source (a claim) end now, with 503, not at the source's deadline.
      shutdown.abort();
      // Writes of the open batch are answered 503 and take nothing with them: a Database passed
      // in must not carry this service's open transaction to the next one.
      commits.abandonOpen(new Error('the service was closed'));
      // Without waiting on another process's lock: close() must not hold the host for the busy timeout.
      withoutBusyWait(db, () => publisher.settleOnClose());
      servedHandles.delete(db);
      if (servedFile !== undefined && servedFiles.get(servedFile) === db) servedFiles.delete(servedFile);
      if (owned && db.open) db.close();
      // After the database: its last connection closing removes the -shm file, and only then
      // may the watch's own descriptor on it be closed (lib/store/commit-watch.ts).
      snapshots.close();
    },
  };
}

/** Connections a live service uses: one service per connection. */
const servedHandles = new WeakSet<Db>();

/** Database files (by device and inode) a live service of this process writes, with its connection: one service per file. */
const servedFiles = new Map<string, Db>();
