import type t from 'tap';
import { harness, type CallResult, type Harness } from './service.js';
import { baseFixture, TOKENS, type FixtureShape } from './fixture.js';

/**
 * Small helpers the API tests share: reading a task and its ETag, task writes with the current
 * If-Match, the workspace version, a status-and-code check, and assistance rows built in SQL.
 */

/** The type of a subtest (the last overload of t.test takes only the callback). */
export type TapTest = Parameters<Parameters<typeof t.test>[0]>[0];

export const API = '/api/v1';
export { LEASE_11 } from './fixture.js';
/** The nil UUID: well-formed, never a lease. */
export const ZERO_UUID = '00000000-0000-0000-0000-000000000000';
/** The Warning of a response to a request that used the deprecated remainingMinutes. */
export const REMAINING_WARNING = '299 worker-task-api "remainingMinutes is deprecated; send estimatedMinutes"';

/** Anything with the test database: a harness, or `{ db }` around a bare connection. */
type WithDb = Pick<Harness, 'db'>;

const asCaller = (token: string | undefined) => (token === undefined ? {} : { token });

/**
 * A fresh harness acting as ada-bot by default, with a rate limit high enough never to get in the
 * way; `fixture` defaults to the shared world.
 */
export function adaWorld(options: { fixture?: FixtureShape; now?: string; token?: string; rateLimit?: number } = {}): Harness {
  return harness({
    fixture: options.fixture ?? baseFixture(),
    defaultToken: options.token ?? TOKENS.ada,
    rateLimit: options.rateLimit ?? 100_000,
    ...(options.now ? { now: options.now } : {}),
  });
}

/** GET /tasks/{id} as `token` (default: the harness's); throws unless it is a 200. */
export async function readTask(h: Harness, id: number, token?: string) {
  const response = await h.call('GET', `${API}/tasks/${id}`, asCaller(token));
  if (response.status !== 200) throw new Error(`GET /tasks/${id} gave ${response.status}`);
  return response.json;
}

/** The ETag header of GET /tasks/{id} as `token` (default: the harness's); throws unless it is a 200. */
export async function etagOf(h: Harness, id: number, token?: string): Promise<string> {
  const response = await h.call('GET', `${API}/tasks/${id}`, asCaller(token));
  if (response.status !== 200) throw new Error(`GET /tasks/${id} gave ${response.status}`);
  return response.headers['etag'] as string;
}

/** A write to `path` with task `id`'s current ETag (read first, as the same caller) as If-Match. */
export async function writeTask(h: Harness, method: string, path: string, id: number, body: unknown, token?: string): Promise<CallResult> {
  const { etag } = await readTask(h, id, token);
  return h.call(method, path, { headers: { 'if-match': etag }, body, ...asCaller(token) });
}

/** PATCH /tasks/{id} with the task's current ETag. */
export const patchTask = (h: Harness, id: number, body: unknown, token?: string): Promise<CallResult> =>
  writeTask(h, 'PATCH', `${API}/tasks/${id}`, id, body, token);

/** POST /tasks/{id}/notes with the task's current ETag. */
export const postNote = (h: Harness, id: number, body: unknown, token?: string): Promise<CallResult> =>
  writeTask(h, 'POST', `${API}/tasks/${id}/notes`, id, body, token);

/** PUT /tasks/{id}/actual-effort with the task's current ETag. */
export const putEffort = (h: Harness, id: number, body: unknown, token?: string): Promise<CallResult> =>
  writeTask(h, 'PUT', `${API}/tasks/${id}/actual-effort`, id, body, token);

/** The organisation's workspace version, read from the database. */
export function workspaceVersion(h: WithDb, organisationId = 1): number {
  return (h.db.prepare('SELECT workspace_version AS v FROM organisations WHERE id = ?').get(organisationId) as { v: number }).v;
}

/**
 * Direct SQL changes skip the API, so they also skip the workspace-version bump every real
 * mutation makes; this bumps it as a mutation would.
 */
export function bumpVersion(h: WithDb, organisationId = 1): void {
  h.db.prepare('UPDATE organisations SET workspace_version = workspace_version + 1 WHERE id = ?').run(organisationId);
}

/** Asserts only the status and the problem's `code` (the full problem shape is `expectProblem`'s). */
export function expectCode(t: TapTest, response: CallResult, status: number, code: string, label: string): void {
  t.equal(response.status, status, `${label}: status ${status}`);
  t.equal(response.json?.code, code, `${label}: code ${code}`);
}

export interface AssistanceInput {
  stageId: number;
  taskId: number;
  /** The Incoming item's id; default stageId + 1000. */
  incomingId?: number;
  /** Default true. */
  isBlocking?: boolean;
  kind?: 'Question' | 'Review' | 'Approval' | 'Action';
  title?: string;
  details?: string | null;
  estimatedMinutes?: number;
  priority?: 'critical' | 'high' | 'normal' | 'low';
  lifecycle?: 'floating' | 'planned' | 'inprogress' | 'completed';
  responseState?: 'open' | 'responded' | 'resolved';
  response?: string | null;
  respondedUtc?: string | null;
  completedUtc?: string | null;
  revision?: string;
  /** When the request was raised (the stage's and the item's time); default 09:00Z on the test day. */
  createdUtc?: string;
}

/**
 * An assistance request raised by ada-bot from task `taskId` and its Incoming item for Grace,
 * built directly in SQL (there is no write endpoint yet). Unset members take the schema's defaults
 * (a blocking, open, floating, normal-priority Question) or neutral values.
 */
export function addAssistance(h: WithDb, a: AssistanceInput): void {
  const ms = (value: string | null | undefined) => (value == null ? null : Date.parse(value));
  const created = ms(a.createdUtc ?? '2026-11-16T09:00:00.000Z');
  h.db.prepare("INSERT INTO stages (id, kind) VALUES (?, 'assistance')").run(a.stageId);
  h.db.prepare(`INSERT INTO assistance_stages (id, organisation_id, origin_task_id, requested_by_client_id,
      requested_by_staff_id, assistance_kind, is_blocking, created_utc) VALUES (?, 1, ?, 100, 10, ?, ?, ?)`)
    .run(a.stageId, a.taskId, a.kind ?? 'Question', a.isBlocking === false ? 0 : 1, created);
  h.db.prepare(`INSERT INTO incoming_items (id, organisation_id, stage_id, recipient_id, title, details, estimated_minutes,
      priority_name, requester, requested_at_utc, lifecycle, response, response_state, responded_at_utc, completed_utc, revision)
      VALUES (?, 1, ?, 11, ?, ?, ?, ?, 'Ada', ?, ?, ?, ?, ?, ?, ?)`)
    .run(a.incomingId ?? a.stageId + 1000, a.stageId, a.title ?? 'Please check', a.details ?? null, a.estimatedMinutes ?? 15,
      a.priority ?? 'normal', created, a.lifecycle ?? 'floating', a.response ?? null, a.responseState ?? 'open',
      ms(a.respondedUtc), ms(a.completedUtc), a.revision ?? '0b7e2f9c-5d1a-4c3e-8f6b-9a2d4e1c7b30');
}
