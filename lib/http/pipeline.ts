import { cachedAuthenticator, type Principal } from '../auth/authenticate.js';
import { assertMayCall } from '../auth/permissions.js';
import type { FixedWindowRateLimiter } from '../auth/rate-limit.js';
import { ServiceError } from '../domain/errors.js';
import { INT32_MAX } from '../domain/limits.js';
import type { ClientStatements } from '../store/clients.js';
import { RefusalWithdrawn, type GroupCommit } from '../store/group-commit.js';
import { transientDatabaseFailure } from '../store/open.js';
import type { ReadEpoch, SnapshotStatements } from '../store/snapshots.js';
import type { Clock } from '../time/clock.js';
import { bodyByteLength, MAX_BODY_BYTES, readBody, type ParsedBody } from './body.js';
import { NOT_STORED } from './conditional.js';
import { requestHeaders, type RequestHeaders } from './headers.js';
import { BASE_PATH, type AnonymousOperationId, type ClientOperationId, type OperationSpec } from './operations.js';
import { newTraceId, problemResponse } from './problem.js';
import { isCommittedAnswer } from './write-runner.js';
import type { Logger } from '../logger.js';
import type { Router } from './router.js';
import type { ResponseMeta, ServiceRequest, ServiceResponse } from './types.js';

/** Everything an operation handler gets once the generic steps have passed. */
export interface OperationContext {
  readonly traceId: string;
  readonly now: number;
  readonly principal: Principal;
  /** The path `{id}`, or 0 for paths without one. */
  readonly id: number;
  readonly query: ReadonlyMap<string, string>;
  readonly body: ParsedBody | undefined;
  readonly headers: RequestHeaders;
  readonly operation: OperationSpec;
  readonly method: string;
  /**
   * The operation's path with the parsed id (`/api/v1/tasks/1` also for `/api/v1/tasks/%31`),
   * part of idempotency fingerprints: two spellings of one target are one request.
   */
  readonly path: string;
  /** The data the request's synchronous reads see (for cached answers, see ResponseCache). */
  readonly epoch: ReadEpoch;
  /** False inside an open write transaction, whose uncommitted rows must not be cached. */
  readonly cacheable: boolean;
  /**
   * Runs authentication, scope and the target check (steps 3, 5 and 7) again on current data,
   * for a handler that awaited I/O after them: a credential revoked or a task reassigned
   * meanwhile must not still get its write.
   */
  readonly reverify: (this: OperationContext) => void;
}

export type OperationHandler = (context: OperationContext) => ServiceResponse | Promise<ServiceResponse>;

/** Step 7: not-found and ownership checks for the kind of object the path names. */
export type TargetCheck = (principal: Principal, id: number, read: { readonly epoch: ReadEpoch; readonly cacheable: boolean }) => void;

export interface PipelineDependencies {
  readonly router: Router;
  readonly clients: ClientStatements;
  readonly snapshots: SnapshotStatements;
  /** The write batch whose uncommitted rows no answer may show before they are durable. */
  readonly batches: Pick<GroupCommit, 'open' | 'settled'>;
  /** True once the service is closed: what is still being answered then gets 503, not a 500. */
  readonly closed?: () => boolean;
  readonly limiter: FixedWindowRateLimiter;
  readonly clock: Clock;
  readonly logger: Logger;
  readonly handlers: Readonly<Record<ClientOperationId, OperationHandler>>;
  readonly anonymousHandlers: Readonly<Record<AnonymousOperationId, () => ServiceResponse>>;
  readonly targetChecks: Readonly<Partial<Record<OperationSpec['target'], TargetCheck>>>;
}

const ID_PATTERN = /^[1-9][0-9]*$/;

/** A JSON success response. */
export function jsonResponse(status: number, value: unknown, headers?: Record<string, string>): ServiceResponse {
  return { status, headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify(value) };
}

/**
 * The request pipeline of contract 1. Each step either passes or throws a ServiceError; the
 * first failure answers. Every response gets `X-Trace-Id`; every authenticated one the
 * RateLimit fields.
 */
export function createPipeline(deps: PipelineDependencies): (request: ServiceRequest) => ServiceResponse | Promise<ServiceResponse> {
  const policy = `"default";q=${deps.limiter.limit};w=${Math.round(deps.limiter.windowMs / 1000)}`;
  const authenticate = cachedAuthenticator(deps.clients);
  const explainInvalid = deps.logger.debug !== undefined;

  // One function for every context, not a closure made per request: `this` is the context.
  function reverify(this: OperationContext): void {
    const current = deps.snapshots.epoch();
    const again = authenticate(this.headers.get('authorization'), current.credentials, deps.snapshots.credentialsCommitted(current.credentials));
    assertMayCall(this.operation, again);
    deps.targetChecks[this.operation.target]?.(again, this.id, { epoch: current, cacheable: deps.snapshots.committedOnly });
  }

  function finish(
    response: ServiceResponse,
    traceId: string,
    rate: { remaining: number; reset: number } | null,
    meta: ResponseMeta,
  ): ServiceResponse {
    response.headers['x-trace-id'] = traceId;
    response.headers['cache-control'] ??= NOT_STORED;
    // For the host's request log (route template, client id); adapters never send it.
    if (meta.route !== undefined || meta.clientId !== undefined) response.meta = { ...meta };
    if (rate !== null) {
      response.headers['ratelimit-policy'] = policy;
      response.headers['ratelimit'] = `"default";r=${rate.remaining};t=${rate.reset}`;
    }
    return response;
  }

  // The embedder's logger comes wrapped by resolveOptions: a throwing one cannot reach here.
  function log(level: 'error' | 'debug', entry: Record<string, unknown>): void {
    if (level === 'error') deps.logger.error(entry);
    else deps.logger.debug?.(entry);
  }

  function failure(thrown: unknown, traceId: string, request: ServiceRequest): ServiceResponse {
    // A refusal withdrawn with its rolled-back batch is 503 (as in `withdrawn`), its batch's
    // failure logged once; anything else a write threw there is answered as itself.
    let error = thrown;
    if (thrown instanceof RefusalWithdrawn) {
      if (thrown.refusal instanceof ServiceError) {
        if (thrown.unreported && deps.closed?.() !== true) logFailure(thrown.failure, traceId, undefined);
        return problemResponse('temporarily_unavailable', traceId, { 'retry-after': '1' });
      }
      error = thrown.refusal;
    }
    if (error instanceof ServiceError) {
      const extra: Record<string, string> = { ...error.headers };
      if (error.code === 'authentication_failed') extra['www-authenticate'] = 'Bearer';
      log('debug', { traceId, code: error.code, detail: error.detail });
      return problemResponse(error.code, traceId, extra);
    }
    // `request` itself may be what is wrong (an untyped host passing null, a getter that throws):
    // reading it must not throw here.
    let method: unknown;
    try {
      method = typeof request === 'object' && request !== null ? request.method : undefined;
    } catch {
      method = undefined;
    }
    // An answer that outlived close() (a read queued behind the last batch, a source refresh
    // finishing late) found the database gone: shutting down is no internal error.
    if (deps.closed?.() === true) return problemResponse('temporarily_unavailable', traceId, { 'retry-after': '1' });
    return logFailure(error, traceId, method)
      ? problemResponse('temporarily_unavailable', traceId, { 'retry-after': '1' })
      : problemResponse('internal_error', traceId);
  }

  /** Logs a failure that is not the request's fault; true when it is a transient database one. */
  function logFailure(error: unknown, traceId: string, method: unknown): boolean {
    const stack = error instanceof Error ? error.stack ?? error.message : String(error);
    const transient = transientDatabaseFailure(error);
    // Transient: the transaction was rolled back, so nothing was applied; the operator has a line to act on.
    log('error', { traceId, message: transient === null ? 'unexpected error' : `database ${transient}`, method, error: stack });
    return transient !== null;
  }

  /**
   * An answer made while a write batch is open may rest on the batch's uncommitted rows (a 412
   * naming a version not yet committed, a replay of a receipt not yet on disk), so it waits for
   * the batch like the batch's own writes do. If the batch is rolled back instead, what the
   * answer showed never happened: the client gets 503 and may retry.
   */
  function afterBatch(response: ServiceResponse): ServiceResponse | Promise<ServiceResponse> {
    if (!deps.batches.open) return response;
    return deps.batches.settled().then((committed) => (committed ? response : withdrawn(response)));
  }

  /** 503 instead of an answer whose grounds were rolled back; a 5xx showed nothing and stays. */
  function withdrawn(response: ServiceResponse): ServiceResponse {
    if (response.status >= 500) return response;
    const unavailable = problemResponse('temporarily_unavailable', response.headers['x-trace-id'] ?? newTraceId(), { 'retry-after': '1' });
    for (const name of ['ratelimit-policy', 'ratelimit'] as const) {
      const value = response.headers[name];
      if (value !== undefined) unavailable.headers[name] = value;
    }
    if (response.meta !== undefined) unavailable.meta = response.meta;
    return unavailable;
  }

  /**
   * Reads (GET, HEAD) wait for an open write batch to end and then see only committed rows; they
   * cannot join it, as writes do, since a read does not change anything to commit.
   */
  return function handle(request: ServiceRequest): ServiceResponse | Promise<ServiceResponse> {
    // Also for a read that waited for the last batch: after close() the connection may be another
    // service's (a Database passed in), and nothing may run on it any more.
    if (deps.closed?.() === true) return problemResponse('temporarily_unavailable', newTraceId(), { 'retry-after': '1' });
    if (deps.batches.open && isRead(request)) return deps.batches.settled().then(() => handle(request));
    const response = answer(request);
    if (!(response instanceof Promise)) return afterBatch(response);
    return response.then((made) => {
      // A write whose batch committed rests on nothing uncommitted: neither a later batch nor
      // close() can take it back, and a 503 would invite a retry that applies it twice.
      if (isCommittedAnswer(made)) return made;
      // Still being made when the service closed: close() rolled back the batch it may rest on
      // (and ended it, so it is no longer open to wait for).
      return deps.closed?.() === true ? withdrawn(made) : afterBatch(made);
    });
  };

  function answer(request: ServiceRequest): ServiceResponse | Promise<ServiceResponse> {
    const traceId = newTraceId();
    let rate: { remaining: number; reset: number } | null = null;
    const meta: ResponseMeta = {};
    try {
      const headers = requestHeaders(request.headers ?? {});
      const url = typeof request.url === 'string' ? request.url : '';
      const queryAt = url.indexOf('?');
      const path = queryAt === -1 ? url : url.slice(0, queryAt);
      const rawQuery = queryAt === -1 ? '' : url.slice(queryAt + 1);

      // 1. Route.
      // Paths are exact (contract 1): find-my-way would ignore a `#fragment`, which no HTTP client
      // sends, so a path carrying one is simply unknown.
      const routable = path.startsWith(`${BASE_PATH}/`) && !path.includes('#');
      const match = routable ? deps.router.find(path.slice(BASE_PATH.length)) : null;
      if (match === null) throw new ServiceError('route_not_found');
      const operation = match.operations.get(request.method);
      if (operation === undefined) {
        // The path is an operation's, only the method is wrong: the log still names the route.
        const known = match.operations.values().next();
        if (known.done !== true) meta.route = BASE_PATH + known.value.path;
        throw new ServiceError('method_not_allowed', request.method, { allow: match.allow });
      }
      const route = BASE_PATH + operation.path;
      meta.route = route;

      // 2. Body size, before anything reads the body.
      const declared = Number(headers.get('content-length') ?? 0);
      if (declared > MAX_BODY_BYTES || bodyByteLength(request.body) > MAX_BODY_BYTES) {
        throw new ServiceError('request_too_large');
      }

      if (operation.caller === 'anonymous') {
        const anonymous = deps.anonymousHandlers[operation.operationId as AnonymousOperationId];
        // Step 6 applies to anonymous operations too: unknown query parameters are 400 here as
        // everywhere else (only authentication, rate limit and scope are skipped).
        parseQuery(rawQuery, operation);
        readBody(operation.body, request.body, headers, false);
        return finish(anonymous(), traceId, null, meta);
      }

      // What this request's reads see; cached answers and credentials are checked against it.
      const epoch = deps.snapshots.epoch();
      const cacheable = deps.snapshots.committedOnly;

      // 3. Authentication.
      const principal = authenticate(headers.get('authorization'), epoch.credentials, deps.snapshots.credentialsCommitted(epoch.credentials));
      meta.clientId = principal.clientId;

      // 4. Rate limit, per client.
      const now = deps.clock.now();
      const decision = deps.limiter.take(principal.clientId, now);
      rate = { remaining: decision.remaining, reset: decision.resetSeconds };
      if (!decision.allowed) {
        throw new ServiceError('rate_limited', undefined, { 'retry-after': String(decision.resetSeconds) });
      }

      // 5. Scope; identity-only clients may only read their identity.
      assertMayCall(operation, principal);

      // 6. Request shape: path id, query, media type, JSON body.
      let id = 0;
      if (match.id !== undefined) {
        if (!ID_PATTERN.test(match.id) || match.id.length > 10 || Number(match.id) > INT32_MAX) {
          throw new ServiceError('validation_failed', 'path id');
        }
        id = Number(match.id);
      }
      const query = parseQuery(rawQuery, operation);
      const body = readBody(operation.body, request.body, headers, explainInvalid);

      // 7. Target: existence, organisation and ownership.
      deps.targetChecks[operation.target]?.(principal, id, { epoch, cacheable });

      const handler = deps.handlers[operation.operationId as ClientOperationId];
      const context: OperationContext = {
        traceId, now, principal, id, query, body, headers, operation, method: request.method,
        path: route.replace('{id}', String(id)), epoch, cacheable, reverify,
      };
      const result = handler(context);
      if (result instanceof Promise) {
        // Contract 10's `t` is the time left when the answer leaves, which a source or a commit
        // may have moved on (or past the window's end) since the request was counted.
        const rateNow = () => {
          const quota = deps.limiter.current(principal.clientId, deps.clock.now());
          return { remaining: quota.remaining, reset: quota.resetSeconds };
        };
        return result.then(
          (response) => finish(response, traceId, rateNow(), meta),
          // A credential revoked while the request waited is answered as one never authenticated:
          // a 401 carries no quota, here as in step 3.
          (error: unknown) => finish(failure(error, traceId, request), traceId, revokedMeanwhile(error) ? null : rateNow(), meta),
        );
      }
      return finish(result, traceId, rate, meta);
    } catch (error) {
      return finish(failure(error, traceId, request), traceId, rate, meta);
    }
  }
}

function revokedMeanwhile(error: unknown): boolean {
  return error instanceof ServiceError && error.code === 'authentication_failed';
}

/** Whether the request only reads; `request` may be anything an untyped host passes. */
function isRead(request: ServiceRequest): boolean {
  try {
    const method: unknown = typeof request === 'object' && request !== null ? request.method : undefined;
    // HEAD is refused (405, contract 1), but an answer made during a batch waits for it anyway
    // (and a batch rolled back would turn it into a 503): waiting first keeps it a plain 405.
    return method === 'GET' || method === 'HEAD';
  } catch {
    return false;
  }
}

/** Unknown or repeated query parameters are 400; booleans are exactly `true` or `false`. */
function parseQuery(rawQuery: string, operation: OperationSpec): ReadonlyMap<string, string> {
  const values = new Map<string, string>();
  if (rawQuery === '') return values;
  // URLSearchParams drops a leading "?", which would read `??includeAccepted=true` as the known
  // parameter: after the query's own "?", one more is part of the first name.
  const params = new URLSearchParams(rawQuery.startsWith('?') ? `&${rawQuery}` : rawQuery);
  for (const [name, value] of params) {
    const spec = operation.query.find((parameter) => parameter.name === name);
    if (spec === undefined) throw new ServiceError('validation_failed', `unknown query parameter ${name}`);
    if (values.has(name)) throw new ServiceError('validation_failed', `repeated query parameter ${name}`);
    if (spec.kind === 'boolean' && value !== 'true' && value !== 'false') {
      throw new ServiceError('validation_failed', `${name} must be true or false`);
    }
    values.set(name, value);
  }
  return values;
}
