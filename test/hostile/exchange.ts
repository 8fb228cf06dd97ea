import { ERROR_CATALOGUE } from '../../lib/http/problem.js';
import { OPERATIONS } from '../../lib/http/operations.js';
import type { ServiceRequest, ServiceResponse } from '../../lib/http/types.js';
import { LEASE_11 } from '../helpers/fixture.js';
import { openApiProblems, openApiRequestProblems } from '../helpers/openapi-check.js';
import { isPlaceholder, payload, textOf, type BodyGen, type PayloadName, type RequestGen } from './arbitraries.js';
import { changedTables, databaseDigest, type World } from './world.js';

/**
 * Turning a generated request into a real one against a world (placeholders resolved), sending
 * it through handle() and checking what must hold for every response, whatever was sent.
 */

const TRACE_ID = /^[0-9a-f]{32}$/;
const PROBLEM_MEMBERS = ['code', 'status', 'title', 'traceId', 'type'];
/** Used for If-Match when the target Incoming item does not exist. */
const UNKNOWN_REVISION = '11111111-1111-4111-8111-111111111111';

const payloads = new Map<PayloadName, string | Uint8Array>();
function cachedPayload(name: PayloadName): string | Uint8Array {
  let built = payloads.get(name);
  if (built === undefined) {
    built = payload(name);
    payloads.set(name, built);
  }
  return built;
}

function targetOf(path: string): { kind: string; id: number } | null {
  const match = /^\/api\/v1\/(tasks|incoming|human-requests)\/([1-9][0-9]{0,9})(?:\/|$)/.exec(path);
  return match === null ? null : { kind: match[1]!, id: Number(match[2]) };
}

/** The live lease on a task (any client's), or the fixture's lease of task 11. */
function leaseOf(world: World, taskId: number): string {
  const now = world.h.clock.now();
  const row = world.h.db
    .prepare('SELECT token FROM claims WHERE task_id = ? AND released_utc IS NULL AND expires_utc > ? ORDER BY id DESC LIMIT 1')
    .get(taskId, now) as { token: string } | undefined;
  return row?.token ?? LEASE_11;
}

function revisionOf(world: World, incomingId: unknown): string {
  if (typeof incomingId !== 'number') return UNKNOWN_REVISION;
  const row = world.h.db.prepare('SELECT revision FROM incoming_items WHERE id = ?').get(incomingId) as { revision: string } | undefined;
  return row?.revision ?? UNKNOWN_REVISION;
}

function workspaceVersion(world: World): number {
  return (world.h.db.prepare('SELECT workspace_version AS v FROM organisations WHERE id = 1').get() as { v: number }).v;
}

function bodyOf(body: BodyGen, world: World, taskId: number): string | Uint8Array | null | undefined {
  switch (body.kind) {
    case 'none': return undefined;
    case 'null': return null;
    case 'empty': return '';
    case 'text': return body.text;
    case 'bytes': return Uint8Array.from(body.bytes);
    case 'payload': return cachedPayload(body.name);
    case 'json': {
      const root = body.value;
      const incomingId = typeof root === 'object' && root !== null ? (root as Record<string, unknown>)['incomingId'] : undefined;
      return JSON.stringify(root, (_key, value: unknown) => {
        if (value === '$LEASE') return leaseOf(world, taskId);
        if (value === '$REVISION') return revisionOf(world, incomingId);
        return value;
      });
    }
  }
}

/** The ServiceRequest a generated request stands for, against the world as it is now. */
export function materialise(gen: RequestGen, world: World): ServiceRequest {
  const operation = OPERATIONS.find((candidate) => candidate.operationId === gen.operationId);
  const path = textOf(gen.path);
  const target = targetOf(path);
  const taskId = target?.kind === 'tasks' ? target.id : 1;

  const currentIfMatch = (): string => {
    if (target?.kind === 'incoming' || operation?.ifMatch === 'incoming-revision') return `"${revisionOf(world, target?.id)}"`;
    return `"task-${taskId}-plan-${workspaceVersion(world)}"`;
  };

  const headers: Record<string, string | readonly string[]> = {};
  for (const [name, value] of gen.headers) {
    if (isPlaceholder(value)) headers[name] = value.placeholder === 'if-match' ? currentIfMatch() : leaseOf(world, taskId);
    else headers[name] = value;
  }

  let body = bodyOf(gen.body, world, taskId);
  if (gen.encoding === 'bytes' && typeof body === 'string') body = new Uint8Array(Buffer.from(body, 'utf8'));

  return { method: textOf(gen.method), url: `${path}${textOf(gen.query)}`, headers, body };
}

/** What must hold for every response to anything (empty when it does). */
export function responseProblems(response: unknown): string[] {
  if (typeof response !== 'object' || response === null) return [`handle() answered ${String(response)}`];
  const { status, headers, body } = response as ServiceResponse;
  const problems: string[] = [];
  if (!Number.isInteger(status) || status < 200 || status > 599) problems.push(`status ${String(status)} is not an HTTP status`);
  if (status >= 500) problems.push(`status ${status} (a 5xx)`);
  if (typeof headers !== 'object' || headers === null) return [...problems, 'no headers object'];
  const traceId = headers['x-trace-id'];
  if (typeof traceId !== 'string' || !TRACE_ID.test(traceId)) problems.push(`x-trace-id ${String(traceId)} is not 32 lowercase hex`);
  for (const [name, value] of Object.entries(headers)) {
    if (name !== name.toLowerCase()) problems.push(`header name ${name} is not lower case`);
    if (typeof value !== 'string') problems.push(`header ${name} is not a string`);
    else if (/[\r\n\0]/.test(value)) problems.push(`header ${name} carries CR, LF or NUL`);
  }
  if (body !== undefined && typeof body !== 'string') problems.push('body is neither absent nor a string');

  if (status >= 400) {
    if (headers['content-type'] !== 'application/problem+json') problems.push(`error content-type ${String(headers['content-type'])}`);
    let parsed: unknown;
    try {
      parsed = JSON.parse(body ?? '');
    } catch {
      return [...problems, 'error body is not JSON'];
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return [...problems, 'error body is not an object'];
    const problem = parsed as Record<string, unknown>;
    const members = Object.keys(problem).sort();
    if (JSON.stringify(members) !== JSON.stringify(PROBLEM_MEMBERS)) problems.push(`error members ${members.join(',')}`);
    if (problem['status'] !== status) problems.push(`error status member ${String(problem['status'])} differs from ${status}`);
    if (problem['type'] !== 'about:blank') problems.push(`error type ${String(problem['type'])}`);
    if (problem['traceId'] !== traceId) problems.push('error traceId differs from X-Trace-Id');
    const entry = ERROR_CATALOGUE[problem['code'] as keyof typeof ERROR_CATALOGUE] as { status: number; title: string } | undefined;
    if (entry === undefined) problems.push(`unknown code ${String(problem['code'])}`);
    else {
      if (entry.status !== status) problems.push(`code ${String(problem['code'])} is ${entry.status}, answered ${status}`);
      if (entry.title !== problem['title']) problems.push(`title of ${String(problem['code'])} is not the catalogue's`);
    }
    if (status === 401 && headers['www-authenticate'] !== 'Bearer') problems.push('401 without WWW-Authenticate: Bearer');
    if (status === 405 && !headers['allow']) problems.push('405 without Allow');
    if (status === 429 && !headers['retry-after']) problems.push('429 without Retry-After');
  } else if (status === 204 || status === 304) {
    if (body !== undefined && body !== '') problems.push(`${status} with a body`);
  } else if (body !== undefined) {
    if (headers['content-type'] !== 'application/json') problems.push(`success content-type ${String(headers['content-type'])}`);
    try {
      JSON.parse(body);
    } catch {
      problems.push('success body is not JSON');
    }
  }
  return problems;
}

/** What the OpenAPI document says of the exchange, for the requests a client of it could send. */
function documentProblems(request: ServiceRequest, response: ServiceResponse): string[] {
  if (typeof request.method !== 'string' || typeof request.url !== 'string') return [];
  const body = typeof request.body === 'string' || request.body instanceof Uint8Array ? request.body : undefined;
  return [...openApiProblems(request.method, request.url, response), ...openApiRequestProblems(request.method, request.url, body, response.status)];
}

export interface Exchange {
  readonly request: ServiceRequest;
  readonly response: ServiceResponse;
  /** The problem's code for an error, else the status as text. */
  readonly outcome: string;
  /** Tables that changed while the request was handled. */
  readonly changed: string[];
}

/** A short, printable account of a request (long parts cut). */
export function describe(request: ServiceRequest): string {
  const cut = (text: string) => (text.length > 160 ? `${text.slice(0, 160)}...(${text.length} chars)` : text);
  const body = request.body;
  const bodyText =
    body === undefined ? 'no body'
      : body === null ? 'body null'
        : typeof body === 'string' ? `body ${JSON.stringify(cut(body))}`
          : `body bytes(${body.byteLength}) ${Buffer.from(body.subarray(0, 60)).toString('hex')}`;
  return `${cut(JSON.stringify(request.method))} ${cut(JSON.stringify(request.url))} headers ${cut(JSON.stringify(request.headers))} ${bodyText}`;
}

/**
 * Sends a request through handle(), failing (with the request described) if handle() throws or
 * rejects or the response breaks a rule every response must keep. Digests the database before
 * and after, so callers can say when it must not have changed.
 */
export async function exchange(world: World, gen: RequestGen): Promise<Exchange> {
  const request = materialise(gen, world);
  const before = databaseDigest(world.h.db);
  let response: ServiceResponse;
  try {
    response = await world.h.service.handle(request);
  } catch (error) {
    throw new Error(`handle() threw or rejected (${String(error)}) for ${describe(request)}`);
  }
  const problems = [...responseProblems(response), ...documentProblems(request, response)];
  if (problems.length > 0) {
    throw new Error(`${problems.join('; ')} for ${describe(request)} -> ${response.status} ${response.body?.slice(0, 200) ?? ''}`);
  }
  const changed = changedTables(before, databaseDigest(world.h.db));
  let outcome = String(response.status);
  if (response.status >= 400) outcome = (JSON.parse(response.body ?? '{}') as { code: string }).code;
  return { request, response, outcome, changed };
}
