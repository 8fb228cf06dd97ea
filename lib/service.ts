import { FixedWindowRateLimiter } from './auth/rate-limit.js';
import { assertTaskOwned } from './domain/tasks/access.js';
import { taskReads } from './domain/tasks/read.js';
import { identityView } from './domain/identity.js';
import { OPERATIONS } from './http/operations.js';
import { createPipeline, jsonResponse, type OperationHandler } from './http/pipeline.js';
import { Router } from './http/router.js';
import type { ServiceRequest, ServiceResponse } from './http/types.js';
import { resolveOptions, type ServiceOptions } from './options.js';
import { provisionalAllocation, provisionalRemaining } from './plan/provisional.js';
import { openApiText } from './schemas/openapi.js';
import { clientStatements } from './store/clients.js';
import { openDatabase } from './store/open.js';
import { organisationStatements } from './store/organisations.js';
import { taskReadStatements } from './store/task-reads.js';
import { ifNoneMatchHits } from './http/conditional.js';

/** A running service over one database. */
export interface Service {
  /** Answers one request; synchronous unless an operation has to wait for I/O. */
  handle(request: ServiceRequest): ServiceResponse | Promise<ServiceResponse>;
  /** Closes the database if the service opened it (a Database passed in stays open). */
  close(): void;
}

/** Creates the service: opens the database, applies the schema and prepares every statement. */
export function createService(options: ServiceOptions): Service {
  const resolved = resolveOptions(options);
  const { db, owned } = openDatabase(resolved.db);

  const clients = clientStatements(db);
  const organisations = organisationStatements(db);
  const reads = taskReadStatements(db);
  const tasks = taskReads({ reads, organisations, remaining: provisionalRemaining, hasAllocation: provisionalAllocation });

  const handlers = new Map<string, OperationHandler>([
    ['getIdentity', ({ principal }) => jsonResponse(200, identityView(principal))],
    ['listAvailableTasks', ({ principal, now }) => jsonResponse(200, tasks.listAvailable(principal, now))],
    ['listWaitingTasks', ({ principal, now }) => jsonResponse(200, tasks.listWaiting(principal, now))],
    [
      'getTask',
      ({ principal, id, now, headers }) => {
        const task = tasks.getTask(principal, id, now);
        if (ifNoneMatchHits(headers.get('if-none-match'), task.etag)) {
          return { status: 304, headers: { etag: task.etag } };
        }
        return jsonResponse(200, task, { etag: task.etag });
      },
    ],
  ]);

  const handle = createPipeline({
    router: new Router(OPERATIONS.filter((operation) => handlers.has(operation.operationId) || operation.caller === 'anonymous')),
    clients,
    limiter: new FixedWindowRateLimiter(resolved.rateLimit),
    clock: resolved.clock,
    logger: resolved.logger,
    handlers,
    anonymousHandlers: new Map([
      ['getOpenApi', () => ({ status: 200, headers: { 'content-type': 'application/json' }, body: openApiText() })],
    ]),
    targetChecks: { task: (principal, id) => assertTaskOwned(principal, id, reads) },
  });

  return {
    handle,
    close() {
      if (owned && db.open) db.close();
    },
  };
}
