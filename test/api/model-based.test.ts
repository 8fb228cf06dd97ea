import t from 'tap';
import fc from 'fast-check';
import { createHash, randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { createService, type Service } from '../../lib/service.js';
import { loadFixture } from '../../lib/fixtures/load.js';
import { adminClients } from '../../lib/admin/clients.js';
import { manualClock, type ManualClock } from '../../lib/time/clock.js';
import type { ServiceResponse } from '../../lib/http/types.js';
import type { ProviderItem, PublishRequest, SourceProvider } from '../../lib/sources/provider.js';
import { baseFixture, TEST_NOW, TOKENS, type FixtureShape } from '../helpers/fixture.js';
import { openApiProblems, openApiRequestProblems } from '../helpers/openapi-check.js';

/**
 * MODEL-BASED (stateful) test of the core handle(): fast-check (fc.commands, asyncModelRun)
 * generates sequences of valid and near-valid agent operations (task reads and lists, PATCH,
 * effort, notes, claim/renew/release, assistance requests, the human's Incoming actions,
 * external evaluation, keyed resends, two writes in one turn, a write beside a read, a linked
 * source that changes, fails or replies, an administrator revoking a client, clock moves to just
 * before and after lease expiries and other instants) by clients with different scopes, two of
 * one worker, another worker's and another organisation's. Each runs against a fresh in-memory
 * service and, side by side, a model written from the spec, contract.md and the README's
 * behaviour notes (not from lib/). After every step the test checks what those documents state:
 * the exact status and code of every refusal (contract 1's order of steps), that a refusal or a
 * replay changes no table, that the workspace version moves by exactly one per successful
 * mutation (none for PATCH {}), that replays repeat the stored answer byte for byte, the lease
 * rules, and, on reads, the task's fields, the offer and the waiting list. Every exchange is also
 * checked against the OpenAPI document (the answer's shape and code, an accepted body's schema).
 *
 * Three scenarios: a November Monday (London = UTC, weekday calendars, linked sources reused for
 * 15 s) and the two clock changes (around-the-clock calendars, every list refreshing its sources).
 * Where the documents leave a choice open (the order of several step-11 rules, what a reopened
 * request shows as its response), the model accepts each choice: an expected refusal lists every
 * code the documents allow (`codes` of an Expectation), and two writes in one turn may take either order.
 */

// ------------------------------------------------------------------------------------------
// World

type Scope = 'tasks:read' | 'tasks:update' | 'tasks:time' | 'tasks:notes' | 'human-requests:create' | 'human-requests:read';
const ALL: readonly Scope[] = ['tasks:read', 'tasks:update', 'tasks:time', 'tasks:notes', 'human-requests:create', 'human-requests:read'];

type ActorName = 'ada' | 'twin' | 'bob' | 'reader' | 'gus' | 'grace' | 'directory' | 'orphan';
interface Actor {
  readonly name: ActorName;
  /** The client's name and its resource's, as notes and Incoming items show them. */
  readonly clientName: string;
  readonly staffName: string;
  readonly clientId: number;
  readonly token: string;
  readonly org: number;
  readonly resource: number;
  readonly scopes: ReadonlySet<Scope>;
}

const TWIN_TOKEN = 'wta_test_mbt_ada_twin';
const GRACE_TOKEN = 'wta_test_mbt_grace_desk';
const ACTORS: Readonly<Record<ActorName, Actor>> = {
  ada: { name: 'ada', clientName: 'ada-bot', staffName: 'Ada', clientId: 100, token: TOKENS.ada, org: 1, resource: 10, scopes: new Set(ALL) },
  twin: { name: 'twin', clientName: 'ada-twin', staffName: 'Ada', clientId: 109, token: TWIN_TOKEN, org: 1, resource: 10, scopes: new Set<Scope>(['tasks:read', 'tasks:update', 'tasks:notes']) },
  bob: { name: 'bob', clientName: 'bob-bot', staffName: 'Bob', clientId: 103, token: TOKENS.bob, org: 1, resource: 12, scopes: new Set(ALL) },
  reader: { name: 'reader', clientName: 'ada-reader', staffName: 'Ada', clientId: 101, token: TOKENS.readOnly, org: 1, resource: 10, scopes: new Set<Scope>(['tasks:read']) },
  gus: { name: 'gus', clientName: 'gus-bot', staffName: 'Gus', clientId: 105, token: TOKENS.otherOrg, org: 2, resource: 20, scopes: new Set(ALL) },
  grace: { name: 'grace', clientName: 'grace-desk', staffName: 'Grace', clientId: 110, token: GRACE_TOKEN, org: 1, resource: 11, scopes: new Set<Scope>(['tasks:read', 'tasks:update']) },
  // An identity-only client (no resource: 403 on everything but /identity), and one whose sponsor is inactive (401).
  directory: { name: 'directory', clientName: 'directory', staffName: '', clientId: 102, token: TOKENS.identityOnly, org: 1, resource: 0, scopes: new Set<Scope>(['tasks:read']) },
  orphan: { name: 'orphan', clientName: 'orphan', staffName: 'Ada', clientId: 106, token: TOKENS.inactiveSponsor, org: 1, resource: 10, scopes: new Set(ALL) },
};

/**
 * Where a run starts. Two start just before a clock change, with calendars of 00:00-24:00 every
 * day (so working time is all real time and crosses the change).
 */
interface Scenario {
  readonly name: string;
  readonly start: string;
  readonly calendar: CalendarKind;
  /** Task 12's earliestStart, a wall time reached during the run. */
  readonly laterToday: string;
  /** The service's sourceMaxAgeMs: how old a refresh may be when work is offered (0: always refresh). */
  readonly sourceMaxAgeMs: number;
}
const SCENARIOS: readonly Scenario[] = [
  { name: 'a November Monday (GMT, Monday-Friday 09:00-17:00)', start: TEST_NOW, calendar: 'weekdays', laterToday: '2026-11-16T11:00:00', sourceMaxAgeMs: 15_000 },
  { name: 'the October clock change (01:00-02:00 happens twice; around-the-clock calendars)', start: '2026-10-25T00:20:00.000Z', calendar: 'always', laterToday: '2026-10-25T01:30:00', sourceMaxAgeMs: 0 },
  { name: 'the March clock change (01:00-02:00 does not exist; around-the-clock calendars)', start: '2026-03-29T00:30:00.000Z', calendar: 'always', laterToday: '2026-03-29T02:30:00', sourceMaxAgeMs: 0 },
];
const AROUND_THE_CLOCK = Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].map((day) => [day, [['00:00', '24:00']]]));

/** The shared world, plus a second client of Ada's resource, Grace's desk and two more tasks. */
function mbtFixture(scenario: Scenario): FixtureShape {
  const fixture = baseFixture();
  if (scenario.calendar === 'always') {
    for (const staff of fixture.staff) if ([10, 11, 12].includes(staff['id'] as number)) staff['calendar'] = AROUND_THE_CLOCK;
  }
  // Task 6 was finished before any of the start times; task 11's lease runs out 10 minutes in.
  const done = fixture.tasks.find((task) => task['id'] === 6) as Record<string, unknown>;
  Object.assign(done, { startedAt: '2026-03-02T09:00:00', completedAt: '2026-03-02T10:00:00', actualIntervals: [{ staffMemberId: 10, start: '2026-03-02T09:00:00', end: '2026-03-02T09:50:00' }] });
  (fixture.claims[0] as Record<string, unknown>)['expiresUtc'] = new Date(Date.parse(scenario.start) + 10 * MINUTE).toISOString();
  // Tasks 1 and 3 are linked to items of the fake source.
  for (const id of [1, 3]) (fixture.tasks.find((task) => task['id'] === id) as Record<string, unknown>)['sources'] = [{ providerKey: 'fake', itemId: `T-${id}` }];
  fixture.clients.push(
    { id: 109, organisationId: 1, name: 'ada-twin', token: TWIN_TOKEN, sponsorId: 11, resourceId: 10, isActive: true, scopes: ['tasks:read', 'tasks:update', 'tasks:notes'] },
    { id: 110, organisationId: 1, name: 'grace-desk', token: GRACE_TOKEN, sponsorId: 11, resourceId: 11, isActive: true, scopes: ['tasks:read', 'tasks:update'] },
  );
  fixture.tasks.push(
    // Arrives during a run (earliestStart 11:00 the same morning).
    { id: 12, projectId: 1, title: 'Later today', sequence: 65, estimatedMinutes: 30, earliestStart: scenario.laterToday, assignees: [{ staffMemberId: 10 }] },
    // Bob's, waiting on Ada's task 3.
    { id: 13, projectId: 2, title: "Bob's second", sequence: 3, estimatedMinutes: 20, dependencyIds: [3], assignees: [{ staffMemberId: 12 }] },
  );
  return fixture;
}

const ORG1_TASKS: readonly number[] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13];
const MINUTE = 60_000;
const LEASE_MS = 15 * MINUTE;
const DAY = 86_400_000;
const ZERO_UUID = '00000000-0000-0000-0000-000000000000';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const WARNING = '299 worker-task-api "remainingMinutes is deprecated; send estimatedMinutes"';

/** Spec "Errors": the status of every code (validation_failed is the 400 one in every case here). */
const STATUS: Readonly<Record<string, number>> = {
  validation_failed: 400, authentication_failed: 401, permission_denied: 403, task_not_owned: 403,
  route_not_found: 404, task_not_found: 404, request_not_found: 404, incoming_not_found: 404, method_not_allowed: 405,
  task_blocked: 409, task_completed: 409, task_not_runnable: 409, request_completed: 409, dependency_conflict: 409,
  idempotency_conflict: 409, task_claimed: 409, claim_expired: 409, incoming_state_conflict: 409, source_context_changed: 409,
  stale_update: 412, request_too_large: 413, unsupported_media_type: 415, invalid_field: 422, human_assignee_invalid: 422,
  idempotency_key_required: 422, precondition_required: 428, rate_limited: 429, internal_error: 500,
  source_unavailable: 503, temporarily_unavailable: 503,
};
const PRIORITY: Readonly<Record<string, number>> = { critical: 0, high: 50, normal: 100, low: 101 };

// ------------------------------------------------------------------------------------------
// Time: Europe/London (GMT, or BST from the last Sunday of March to the last Sunday of October,
// changing at 01:00 UTC), written apart from lib/time.

function lastSunday(year: number, month: number): number {
  const end = Date.UTC(year, month + 1, 0);
  return end - new Date(end).getUTCDay() * DAY;
}
const isSummerTime = (ms: number): boolean => {
  const year = new Date(ms).getUTCFullYear();
  return ms >= lastSunday(year, 2) + 3_600_000 && ms < lastSunday(year, 9) + 3_600_000;
};
/** The London wall time of an instant, to the second: `YYYY-MM-DDTHH:mm:ss`. */
const local = (ms: number): string => new Date(ms + (isSummerTime(ms) ? 3_600_000 : 0)).toISOString().slice(0, 19);
/** The instant a wall time names: its first occurrence when ambiguous, null when it does not exist (spring). */
function wallInstant(wall: string): number | null {
  const asUtc = Date.parse(`${wall}Z`);
  const found = [asUtc - 3_600_000, asUtc].filter((candidate) => local(candidate) === wall);
  timeEvents.set(found.length === 0 ? 'nonexistent' : found.length === 2 ? 'ambiguous' : 'plain', (timeEvents.get(found.length === 0 ? 'nonexistent' : found.length === 2 ? 'ambiguous' : 'plain') ?? 0) + 1);
  return found[0] ?? null;
}
/** How often the model met wall times that do not exist or happen twice (shown in the log). */
const timeEvents = new Map<string, number>();
/** A stored (so existing) wall time as an instant. */
const at = (wall: string): number => wallInstant(wall) ?? fail(`wall time ${wall} does not exist`);
/** The instant a time input names: a `Z` input keeps its instant (README), a bare one is a wall time. */
const inputInstant = (text: string): number | null => (text.endsWith('Z') ? Date.parse(text) : wallInstant(text));
/** The wall time a time input is stored and shown as. */
const inputWall = (text: string): string => (text.endsWith('Z') ? local(Date.parse(text)) : text);
/** Wall-clock arithmetic (may land in the spring gap or the autumn repeat). */
const wallPlus = (wall: string, minutes: number): string => new Date(Date.parse(`${wall}Z`) + minutes * MINUTE).toISOString().slice(0, 19);

type CalendarKind = 'weekdays' | 'always';

/**
 * Working minutes between two instants: the default calendar (Monday-Friday 09:00-17:00 London),
 * or 00:00-24:00 every day, which is all real time (README: a day with a clock change is as long
 * as it really is).
 */
function workingMinutes(kind: CalendarKind, from: number, to: number): number {
  if (to <= from) return 0;
  if (kind === 'always') return (to - from) / MINUTE;
  let total = 0;
  // London dates from the one `from` falls on to the one `to` falls on.
  for (let date = Date.parse(`${local(from).slice(0, 10)}T00:00:00Z`); date <= Date.parse(`${local(to).slice(0, 10)}T00:00:00Z`); date += DAY) {
    const weekday = new Date(date).getUTCDay();
    if (weekday === 0 || weekday === 6) continue;
    const day = new Date(date).toISOString().slice(0, 10);
    const start = Math.max(from, at(`${day}T09:00:00`));
    const end = Math.min(to, at(`${day}T17:00:00`));
    if (end > start) total += end - start;
  }
  return total / MINUTE;
}

// ------------------------------------------------------------------------------------------
// Model

type Status = 'Ready' | 'InProgress' | 'Done';
type Lifecycle = 'floating' | 'planned' | 'inprogress' | 'completed';
type ResponseState = 'open' | 'responded' | 'resolved';

interface TaskState {
  readonly id: number;
  readonly org: number;
  readonly projectId: number;
  readonly priority: number;
  readonly projectActive: boolean;
  readonly assignees: readonly number[];
  title: string;
  description: string | null;
  status: Status;
  sequence: number;
  estimate: number;
  /** Wall times, as stored and shown. */
  startedAt: string | null;
  completedAt: string | null;
  earliestStart: string | null;
  releaseDate: string | null;
  isWaiting: boolean;
  resourceMode: string;
  deps: number[];
  /** Actual intervals by staff member, [start, end] in epoch ms. */
  intervals: Map<number, [number, number][]>;
  notes: { text: string; clientName: string; staffName: string; created: number }[];
}

interface Lease {
  readonly taskId: number;
  readonly clientId: number;
  readonly token: string;
  expires: number;
  released: boolean;
}

interface Answer {
  readonly status: number;
  readonly body: string | undefined;
  readonly headers: Readonly<Record<string, string>>;
}

interface Receipt {
  readonly fingerprint: string;
  readonly created: number;
  readonly answer: Answer;
}

interface Assist {
  readonly stageId: number;
  incomingId: number;
  readonly taskId: number;
  readonly requester: ActorName;
  readonly title: string;
  details: string | null;
  readonly estimate: number;
  readonly kind: string;
  readonly isBlocking: boolean;
  readonly priority: string;
  readonly requestedAt: number;
  response: string | null;
  respondedAt: number | null;
  completedAt: number | null;
  actualStart: number | null;
  plannedStart: string | null;
  /** After keepwaiting or followup: what response and respondedAtUtc show is not stated. */
  responseUnstated: boolean;
  /** Published to the task's first linked item (publishExternally). */
  readonly published: boolean;
  /** The references the source gave for it (the request, then each follow-up). */
  readonly refs: string[];
  lifecycle: Lifecycle;
  responseState: ResponseState;
  revision: string;
  readonly oldRevisions: string[];
}

type Op = 'patch' | 'effort' | 'note' | 'claim' | 'renew' | 'release' | 'assist' | 'evaluate'
  | 'incStart' | 'incPlan' | 'incComplete' | 'incReassign';

/** One write as sent (everything resolved against the model at the time), kept for replays. */
interface Attempt {
  readonly op: Op;
  readonly actor: ActorName;
  /** Task id for task writes, Incoming id for Incoming actions. */
  readonly target: number;
  readonly body: unknown;
  /** Whether to send no body at all (claim, Incoming start). */
  readonly noBody: boolean;
  readonly key: string | undefined;
  readonly ifMatch: string | undefined;
  readonly claimHeader: string | undefined;
  readonly reorder: boolean;
  /**
   * How the JSON text spells the body: as JSON.stringify does, with every integer written `N.0`
   * (another number spelling: README, another fingerprint), or with each string's first letter
   * as a `\\u` escape (the same string: README, the same fingerprint).
   */
  readonly spelling?: 'plain' | 'decimals' | 'escapes';
}

/** SourceFacts. */
interface Facts {
  readonly title: string;
  readonly description: string | null;
  readonly businessStatus: string | null;
}
/** What the fake linked source holds for an item (the test sets it). */
interface SourceTruth {
  facts: Facts;
  failing: boolean;
  /** Replies on the item (to requests published there, or to nothing the service knows). */
  replies: { id: string; inReplyTo: string; author: string; text: string }[];
}
/** A linked item as the service should know it (contract 9). */
interface ItemState {
  readonly itemId: string;
  readonly taskId: number;
  /** The facts of the last successful refresh; null before the first (then the item has no baseline). */
  known: Facts | null;
  isAvailable: boolean;
  lastSuccess: number | null;
  /** The last refresh, successful or not (lists reuse one at most sourceMaxAgeMs old). */
  lastAttempt: number | null;
  /** Replies already recorded (each is recorded once). */
  readonly seen: string[];
}
interface ChangeState {
  /** The event id, learnt from a read. */
  id: number | null;
  readonly taskId: number;
  readonly kind: 'source' | 'reply';
  readonly before: Facts | null;
  readonly after: Facts | null;
  /** For replies: the request's Incoming id, the text and its author. */
  readonly incomingId: number | null;
  readonly response: string | null;
  readonly author: string | null;
  readonly received: number;
  acknowledged: number | null;
}
interface ActivationState {
  readonly taskId: number;
  readonly at: number;
  readonly sources: readonly Facts[];
}

interface Model {
  readonly sourceMaxAgeMs: number;
  /** Published requests just followed up: their next publication is the follow-up's. */
  readonly followUps: number[];
  /** Clients revoked by an administrator during the run. */
  readonly revoked: ActorName[];
  readonly calendar: CalendarKind;
  readonly truth: Record<string, SourceTruth>;
  readonly items: ItemState[];
  readonly changes: ChangeState[];
  readonly activations: ActivationState[];
  now: number;
  version: number;
  readonly tasks: Map<number, TaskState>;
  readonly leases: Lease[];
  readonly receipts: Map<string, Receipt>;
  readonly assists: Assist[];
  readonly sent: Attempt[];
  readonly stats: Map<string, number>;
}

interface Real {
  /** What the fake provider answers: the test's copy, changed only by the source commands. */
  readonly truth: Record<string, SourceTruth>;
  /** What the fake provider was asked to publish, in order. */
  readonly published: { itemId: string; ref: string; title: string }[];
  readonly service: Service;
  readonly db: Database.Database;
  readonly clock: ManualClock;
  readonly errors: unknown[];
}

function initialModel(fixture: FixtureShape, version: number, scenario: Scenario): Model {
  const projects = new Map<number, { org: number; priority: number; active: boolean }>();
  for (const project of fixture.projects) {
    projects.set(project['id'] as number, {
      org: project['organisationId'] as number,
      priority: PRIORITY[(project['priorityName'] as string | undefined) ?? 'normal'] as number,
      active: project['isActive'] !== false,
    });
  }
  const tasks = new Map<number, TaskState>();
  const optLocal = (value: unknown): string | null => (typeof value === 'string' ? value : null);
  for (const raw of fixture.tasks) {
    const project = projects.get(raw['projectId'] as number);
    if (project === undefined) throw new Error('fixture project missing');
    const intervals = new Map<number, [number, number][]>();
    for (const interval of (raw['actualIntervals'] as { staffMemberId: number; start: string; end: string }[] | undefined) ?? []) {
      const list = intervals.get(interval.staffMemberId) ?? [];
      list.push([at(interval.start), at(interval.end)]);
      intervals.set(interval.staffMemberId, list);
    }
    tasks.set(raw['id'] as number, {
      id: raw['id'] as number,
      org: project.org,
      projectId: raw['projectId'] as number,
      priority: project.priority,
      projectActive: project.active,
      assignees: (raw['assignees'] as { staffMemberId: number }[]).map((a) => a.staffMemberId),
      title: raw['title'] as string,
      description: (raw['description'] as string | null | undefined) ?? null,
      status: (raw['status'] as Status | undefined) ?? 'Ready',
      sequence: (raw['sequence'] as number | undefined) ?? 0,
      estimate: (raw['estimatedMinutes'] as number | undefined) ?? 0,
      startedAt: optLocal(raw['startedAt']),
      completedAt: optLocal(raw['completedAt']),
      earliestStart: optLocal(raw['earliestStart']),
      releaseDate: optLocal(raw['releaseDate']),
      isWaiting: raw['isWaiting'] === true,
      resourceMode: (raw['resourceMode'] as string | undefined) ?? 'Independent',
      deps: [...((raw['dependencyIds'] as number[] | undefined) ?? [])],
      intervals,
      notes: [],
    });
  }
  const leases: Lease[] = fixture.claims.map((claim) => ({
    taskId: claim['taskId'] as number,
    clientId: claim['clientId'] as number,
    token: claim['token'] as string,
    expires: Date.parse(claim['expiresUtc'] as string),
    released: false,
  }));
  const items: ItemState[] = [];
  const truth: Record<string, SourceTruth> = {};
  for (const raw of fixture.tasks) {
    for (const link of (raw['sources'] as { itemId: string }[] | undefined) ?? []) {
      items.push({ itemId: link.itemId, taskId: raw['id'] as number, known: null, isAvailable: false, lastSuccess: null, lastAttempt: null, seen: [] });
      truth[link.itemId] = { facts: FACT_VARIANTS[0] as Facts, failing: false, replies: [] };
    }
  }
  return { sourceMaxAgeMs: scenario.sourceMaxAgeMs, followUps: [], revoked: [], calendar: scenario.calendar, truth, items, changes: [], activations: [], now: Date.parse(scenario.start), version, tasks, leases, receipts: new Map(), assists: [], sent: [], stats: new Map() };
}

const tally = (m: Model, what: string): void => {
  m.stats.set(what, (m.stats.get(what) ?? 0) + 1);
};

// Derived facts (contract 5).

function liveLease(m: Model, taskId: number): Lease | undefined {
  // The latest live one; the invariant check makes sure there is never more than one.
  return [...m.leases].reverse().find((lease) => lease.taskId === taskId && !lease.released && lease.expires > m.now);
}

function humanBlocker(m: Model, taskId: number): boolean {
  return m.assists.some((a) => a.taskId === taskId && a.isBlocking && a.responseState !== 'resolved');
}

function unmetPrerequisites(m: Model, deps: readonly number[]): boolean {
  return deps.some((id) => m.tasks.get(id)?.status !== 'Done');
}

function blockingReasons(m: Model, task: TaskState): string[] {
  const reasons: string[] = [];
  if (unmetPrerequisites(m, task.deps)) reasons.push('unmet prerequisites');
  if (humanBlocker(m, task.id)) reasons.push('human assistance');
  if (task.isWaiting) reasons.push('external waiting');
  return reasons;
}

function elapsedMinutes(m: Model, task: TaskState): number {
  return task.startedAt === null ? 0 : Math.floor(workingMinutes(m.calendar, at(task.startedAt), m.now));
}

function remainingMinutes(m: Model, task: TaskState): number {
  return task.status === 'Done' ? 0 : Math.max(0, task.estimate - elapsedMinutes(m, task));
}

function actualMinutes(task: TaskState): number {
  let total = 0;
  for (const list of task.intervals.values()) for (const [start, end] of list) total += (end - start) / MINUTE;
  return total;
}

/**
 * Runnable (contract 5). "A current scheduler allocation" is, in this small world (default
 * calendars, a few hours of work in all), "remaining time > 0": the plan places every unfinished,
 * unblocked task with remaining minutes well within 365 days.
 */
function runnable(m: Model, task: TaskState): boolean {
  if (task.status === 'Done' || blockingReasons(m, task).length > 0 || !task.projectActive) return false;
  if (task.earliestStart !== null && at(task.earliestStart) > m.now) return false;
  if (task.releaseDate !== null && at(task.releaseDate) > m.now) return false;
  return task.estimate === 0 || remainingMinutes(m, task) > 0;
}

const offerOrder = (a: TaskState, b: TaskState): number =>
  a.priority - b.priority || a.projectId - b.projectId || a.sequence - b.sequence || a.id - b.id;

function expectedAvailable(m: Model, actor: Actor): number[] {
  return [...m.tasks.values()]
    .filter((task) => task.org === actor.org && task.assignees.includes(actor.resource) && runnable(m, task) && liveLease(m, task.id) === undefined)
    .sort(offerOrder).map((task) => task.id);
}

function expectedWaiting(m: Model, actor: Actor): number[] {
  return [...m.tasks.values()]
    .filter((task) => task.org === actor.org && task.assignees.includes(actor.resource) && task.status !== 'Done' && blockingReasons(m, task).length > 0)
    .sort(offerOrder).map((task) => task.id);
}

const etagOf = (m: Model, taskId: number): string => `"task-${taskId}-plan-${m.version}"`;
const lifecycleStatus = (lifecycle: Lifecycle): Status =>
  lifecycle === 'inprogress' ? 'InProgress' : lifecycle === 'completed' ? 'Done' : 'Ready';

// ------------------------------------------------------------------------------------------
// Linked sources (contract 9, README "Linked sources"): tasks 1 and 3 are linked to items T-1 and
// T-3 of a fake provider; lists reuse a refresh up to sourceMaxAgeMs old (15 s, or 0: never).

const FACT_VARIANTS: readonly Facts[] = [
  { title: 'Ticket', description: null, businessStatus: 'open' },
  { title: 'Ticket', description: 'More detail', businessStatus: 'open' },
  { title: 'Ticket', description: null, businessStatus: 'closed' },
  { title: 'Ticket renamed', description: null, businessStatus: 'open' },
];
const sameFacts = (a: Facts, b: Facts): boolean =>
  a.title === b.title && a.description === b.description && a.businessStatus === b.businessStatus;
const itemsOfTask = (m: Model, taskId: number): ItemState[] => m.items.filter((item) => item.taskId === taskId);

/**
 * Applies a refresh of these items to the model: failures make an item unavailable; the first
 * success sets the baseline; later differences record a change and an activation on a task not
 * Done; new facts or replies bump the version once. Returns the tasks with a failed item and those with a change.
 */
function refreshModel(m: Model, items: readonly ItemState[]): { failed: Set<number>; changed: Set<number> } {
  const failed = new Set<number>();
  const changed = new Set<number>();
  let replied = false;
  let factsMoved = false;
  for (const item of new Set(items)) {
    const truth = m.truth[item.itemId] as SourceTruth;
    item.lastAttempt = m.now;
    if (truth.failing) {
      item.isAvailable = false;
      failed.add(item.taskId);
      continue;
    }
    if (item.known !== null && !sameFacts(item.known, truth.facts)) {
      factsMoved = true;
      // A Done task shows the new facts but records no change (README: Linked sources, Facts).
      if (m.tasks.get(item.taskId)?.status !== 'Done') {
        m.changes.push({
          id: null, taskId: item.taskId, kind: 'source', before: item.known, after: truth.facts, incomingId: null, response: null, author: null,
          received: m.now, acknowledged: null,
        });
        changed.add(item.taskId);
      }
    }
    item.known = truth.facts;
    item.isAvailable = true;
    item.lastSuccess = m.now;
    // Replies are read on every successful refresh: one to a request published on this item is
    // recorded once and marks the request responded (a resolved one stays resolved: README).
    for (const reply of truth.replies) {
      const request = m.assists.find((a) => a.refs.includes(reply.inReplyTo) && itemsOfTask(m, a.taskId)[0] === item);
      if (request === undefined || item.seen.includes(reply.id)) continue;
      item.seen.push(reply.id);
      m.changes.push({
        id: null, taskId: request.taskId, kind: 'reply', before: null, after: null, incomingId: request.incomingId, response: reply.text,
        author: reply.author, received: m.now, acknowledged: null,
      });
      replied = true;
      if (request.responseState !== 'resolved') {
        request.responseState = 'responded';
        request.response = reply.text;
        request.respondedAt = m.now;
        request.responseUnstated = false;
        request.oldRevisions.push(request.revision);
        request.revision = '';
      }
    }
  }
  for (const taskId of changed) {
    m.activations.push({ taskId, at: m.now, sources: itemsOfTask(m, taskId).filter((i) => i.isAvailable).map((i) => i.known as Facts) });
  }
  if (factsMoved || replied) {
    m.version += 1;
    tally(m, replied ? 'source:reply-recorded' : 'source:change-recorded');
  }
  return { failed, changed };
}

/** The fake provider: answers from the test's truth, or fails. */
function fakeProvider(truth: Record<string, SourceTruth>, published: { itemId: string; ref: string; title: string }[]): SourceProvider {
  return {
    refresh(itemId: string): ProviderItem {
      const item = truth[itemId];
      if (item === undefined || item.failing) throw new Error(`item ${itemId} is unavailable`);
      return { ...item.facts, replies: item.replies.map((reply) => ({ ...reply, createdUtc: null })) };
    },
    publish(itemId: string, request: PublishRequest) {
      const ref = `ref-${randomUUID()}`;
      published.push({ itemId, ref, title: request.title });
      return { ref };
    },
  };
}

// ------------------------------------------------------------------------------------------
// Requests

/** Steps 3 and 5 for the client itself: a credential that cannot work (401), an identity-only client (403). */
function clientRefusal(m: Model, name: ActorName): string | null {
  if (name === 'orphan' || m.revoked.includes(name)) return 'authentication_failed';
  if (name === 'directory') return 'permission_denied';
  return null;
}

class ModelFailure extends Error {}
function fail(message: string): never {
  throw new ModelFailure(message);
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** The same JSON value with object members in reverse order, at every depth. */
function reversed(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(reversed);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value as Record<string, unknown>).reverse().map(([k, v]) => [k, reversed(v)]));
  }
  return value;
}

interface Sent {
  readonly method: string;
  readonly url: string;
  readonly headers: Record<string, string>;
  readonly body?: string;
}

function describeSent(sent: Sent, actor: ActorName): string {
  const headers = Object.entries(sent.headers).filter(([name]) => name !== 'authorization' && name !== 'content-type')
    .map(([name, value]) => `${name}: ${value}`).join('; ');
  return `${actor} ${sent.method} ${sent.url}${headers === '' ? '' : ` [${headers}]`}${sent.body === undefined ? '' : ` ${sent.body}`}`;
}

async function send(r: Real, actor: Actor, sent: Sent): Promise<ServiceResponse> {
  const headers: Record<string, string> = { authorization: `Bearer ${actor.token}`, ...sent.headers };
  if (sent.body !== undefined) headers['content-type'] = 'application/json';
  const response = await r.service.handle({ method: sent.method, url: sent.url, headers, ...(sent.body === undefined ? {} : { body: sent.body }) });
  if (process.env['MBT_TRACE'] !== undefined) console.error('TRACE', describeSent(sent, actor.name), '->', response.status, (response.body ?? '').slice(0, Number(process.env['MBT_TRACE'])));
  checkEnvelope(response, sent.method);
  const documentProblems = [...openApiProblems(sent.method, sent.url, response), ...openApiRequestProblems(sent.method, sent.url, sent.body, response.status)];
  if (documentProblems.length > 0) fail(`${describeSent(sent, actor.name)}: ${documentProblems.join('; ')}`);
  return response;
}

/** What holds for every answer: no 5xx, a trace id, and the five-member problem+json on errors. */
function checkEnvelope(response: ServiceResponse, what: string): void {
  // No 5xx, but the 503 a failing linked source gives a claim (contract 2).
  if (response.status >= 500 && !(response.status === 503 && (response.body ?? '').includes('"code":"source_unavailable"'))) {
    fail(`${what}: a ${response.status}: ${response.body ?? ''}`);
  }
  const traceId = response.headers['x-trace-id'];
  if (traceId === undefined || !/^[0-9a-f]{32}$/.test(traceId)) fail(`${what}: X-Trace-Id missing or malformed`);
  // Contract 10: every authenticated answer carries the RateLimit fields (every request here is authenticated but a 401).
  if (response.status !== 401 && (response.headers['ratelimit-policy'] !== '"default";q=1000000;w=60' || !/^"default";r=\d+;t=\d+$/.test(response.headers['ratelimit'] ?? ''))) {
    fail(`${what}: RateLimit fields ${response.headers['ratelimit-policy'] ?? 'none'} / ${response.headers['ratelimit'] ?? 'none'}`);
  }
  if (response.status < 400) return;
  if (response.headers['content-type'] !== 'application/problem+json') fail(`${what}: error without problem+json`);
  const problem = JSON.parse(response.body ?? 'null') as Record<string, unknown> | null;
  if (problem === null || typeof problem !== 'object') fail(`${what}: problem body is not an object`);
  const keys = Object.keys(problem).sort().join(',');
  if (keys !== 'code,status,title,traceId,type') fail(`${what}: problem members ${keys}`);
  if (problem['type'] !== 'about:blank' || problem['status'] !== response.status || problem['traceId'] !== traceId) {
    fail(`${what}: problem type/status/traceId wrong: ${response.body ?? ''}`);
  }
  const code = problem['code'];
  if (code === 'authentication_failed' && response.headers['www-authenticate'] !== 'Bearer') fail(`${what}: a 401 without WWW-Authenticate: Bearer`);
  if (typeof code !== 'string' || (STATUS[code] !== response.status && !(code === 'validation_failed' && response.status === 422))) {
    fail(`${what}: code ${String(code)} with status ${response.status}`);
  }
}

const codeOf = (response: ServiceResponse): string =>
  response.status >= 400 ? String((JSON.parse(response.body ?? '{}') as { code?: unknown }).code) : String(response.status);

const json = <T>(response: ServiceResponse): T => JSON.parse(response.body ?? 'null') as T;

// ------------------------------------------------------------------------------------------
// The expected outcome of a write (contract 1's steps, then the operation's rules)

interface Success {
  readonly status: number;
  /** Whether the workspace version moves (every successful mutation but PATCH {}). */
  readonly bump: boolean;
  /** Checks the answer and applies the write to the model. */
  readonly apply: (m: Model, response: ServiceResponse) => void;
  /** What happens before the write itself (a claim's refresh, which may bump the version). */
  readonly before?: (m: Model) => void;
}
type Expectation =
  | {
    readonly kind: 'error'; readonly codes: readonly string[]; readonly why: string;
    /** What a refused claim's source refresh still does (contract 2 and 9): applied by judge. */
    readonly refreshed?: (m: Model) => void;
  }
  | { readonly kind: 'replay'; readonly receipt: Receipt }
  | { readonly kind: 'ok'; readonly success: Success };

const refuse = (why: string, ...codes: string[]): Expectation => ({ kind: 'error', codes, why });

interface OpSpec {
  readonly method: string;
  readonly path: (target: number) => string;
  readonly scope: Scope;
  readonly keyRequired: boolean;
  readonly incoming: boolean;
  readonly claimHeader: boolean;
}
const OPS: Readonly<Record<Op, OpSpec>> = {
  patch: { method: 'PATCH', path: (id) => `/api/v1/tasks/${id}`, scope: 'tasks:update', keyRequired: false, incoming: false, claimHeader: true },
  effort: { method: 'PUT', path: (id) => `/api/v1/tasks/${id}/actual-effort`, scope: 'tasks:time', keyRequired: false, incoming: false, claimHeader: true },
  note: { method: 'POST', path: (id) => `/api/v1/tasks/${id}/notes`, scope: 'tasks:notes', keyRequired: false, incoming: false, claimHeader: true },
  claim: { method: 'POST', path: (id) => `/api/v1/tasks/${id}/claim`, scope: 'tasks:update', keyRequired: true, incoming: false, claimHeader: false },
  renew: { method: 'POST', path: (id) => `/api/v1/tasks/${id}/claim/renew`, scope: 'tasks:update', keyRequired: true, incoming: false, claimHeader: false },
  release: { method: 'POST', path: (id) => `/api/v1/tasks/${id}/claim/release`, scope: 'tasks:update', keyRequired: true, incoming: false, claimHeader: false },
  assist: { method: 'POST', path: (id) => `/api/v1/tasks/${id}/human-requests`, scope: 'human-requests:create', keyRequired: false, incoming: false, claimHeader: true },
  evaluate: { method: 'POST', path: (id) => `/api/v1/tasks/${id}/external-evaluation`, scope: 'tasks:update', keyRequired: true, incoming: false, claimHeader: true },
  incStart: { method: 'POST', path: (id) => `/api/v1/incoming/${id}/start`, scope: 'tasks:update', keyRequired: true, incoming: true, claimHeader: false },
  incPlan: { method: 'POST', path: (id) => `/api/v1/incoming/${id}/plan`, scope: 'tasks:update', keyRequired: true, incoming: true, claimHeader: false },
  incComplete: { method: 'POST', path: (id) => `/api/v1/incoming/${id}/complete`, scope: 'tasks:update', keyRequired: true, incoming: true, claimHeader: false },
  incReassign: { method: 'POST', path: (id) => `/api/v1/incoming/${id}/reassign`, scope: 'tasks:update', keyRequired: true, incoming: true, claimHeader: false },
};

const KEY_PATTERN = /^[a-zA-Z0-9._:-]{1,100}$/;
const TASK_ETAG = /^"task-([1-9][0-9]{0,9})-plan-([1-9][0-9]{0,15})"$/;
const QUOTED_UUID = /^"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})"$/;

const fingerprintOf = (attempt: Attempt): string => {
  const spec = OPS[attempt.op];
  const body = attempt.noBody ? {} : attempt.body;
  const respelled = attempt.spelling === 'decimals' && spell(JSON.stringify(body), 'decimals') !== JSON.stringify(body);
  return `${spec.method} ${spec.path(attempt.target)}\n${canonical(body)}${respelled ? ' (decimals)' : ''}`;
};
const receiptKey = (actor: Actor, key: string): string => `${actor.clientId}|${key}`;

/** Step 6 (request shape): whether the body breaks its schema (400). */
function shapeInvalid(attempt: Attempt): boolean {
  const body = attempt.body as Record<string, unknown>;
  const isObject = typeof body === 'object' && body !== null && !Array.isArray(body);
  switch (attempt.op) {
    case 'claim':
    case 'incStart':
      return !attempt.noBody && (!isObject || Object.keys(body).length > 0);
    case 'renew':
    case 'release': {
      const token = body['token'];
      return Object.keys(body).join() !== 'token' || typeof token !== 'string' || !UUID.test(token) || token === ZERO_UUID;
    }
    case 'patch':
      return (typeof body['title'] === 'string' && body['title'] === '')
        || ('status' in body && !['Ready', 'InProgress', 'Done'].includes(body['status'] as string))
        || (typeof body['sequence'] === 'number' && body['sequence'] > 100_000)
        || 'project' in body
        || ((body['actualIntervals'] as { staffMemberId: number }[] | undefined) ?? []).some((i) => i.staffMemberId < 1);
    case 'note':
      return body['text'] === '';
    case 'assist':
      return body['estimatedMinutes'] === 0 || body['title'] === '';
    case 'effort':
      return ((body['actualIntervals'] as { staffMemberId: number }[] | undefined) ?? []).some((i) => i.staffMemberId < 1);
    default:
      return false;
  }
}

/** Step 7: not found / not owned, or null. */
function targetRefusal(m: Model, actor: Actor, attempt: Attempt): string | null {
  if (OPS[attempt.op].incoming) {
    const item = m.assists.find((a) => a.incomingId === attempt.target);
    // Every item of the model is addressed to Grace (resource 11) in organisation 1.
    return item === undefined || actor.resource !== 11 || actor.org !== 1 ? 'incoming_not_found' : null;
  }
  const task = m.tasks.get(attempt.target);
  if (task === undefined || task.org !== actor.org) return 'task_not_found';
  if (!task.assignees.includes(actor.resource)) return 'task_not_owned';
  return null;
}

/** Step 9: whether the If-Match header is missing (428), malformed or stale (412), or current. */
function ifMatchState(m: Model, attempt: Attempt): 'missing' | 'malformed' | 'stale' | 'current' {
  const header = attempt.ifMatch;
  if (header === undefined) return 'missing';
  if (OPS[attempt.op].incoming) {
    const match = QUOTED_UUID.exec(header.trim());
    if (match === null) return 'malformed';
    const item = m.assists.find((a) => a.incomingId === attempt.target);
    return item !== undefined && (match[1] as string).toLowerCase() === item.revision ? 'current' : 'stale';
  }
  const match = TASK_ETAG.exec(header.trim());
  if (match === null) return 'malformed';
  return Number(match[1]) === attempt.target && Number(match[2]) === m.version ? 'current' : 'stale';
}

function predict(m: Model, attempt: Attempt): Expectation {
  const actor = ACTORS[attempt.actor];
  const spec = OPS[attempt.op];
  // 3. Authentication: a revoked credential fails at once (spec Authentication 3).
  const refusal = clientRefusal(m, attempt.actor);
  if (refusal !== null) return refuse('the client itself', refusal);
  // 5. Scope.
  if (!actor.scopes.has(spec.scope)) return refuse('scope', 'permission_denied');
  // 6. Shape.
  if (shapeInvalid(attempt)) return refuse('request shape', 'validation_failed');
  // 7. Target.
  const target = targetRefusal(m, actor, attempt);
  if (target !== null) return refuse('target', target);
  // 8. Idempotency-Key.
  if (attempt.key === undefined ? spec.keyRequired : !KEY_PATTERN.test(attempt.key)) return refuse('key', 'idempotency_key_required');
  const ifMatch = ifMatchState(m, attempt);
  if (attempt.key !== undefined) {
    const receipt = m.receipts.get(receiptKey(actor, attempt.key));
    if (receipt !== undefined && receipt.created + DAY > m.now) {
      if (receipt.fingerprint !== fingerprintOf(attempt)) return refuse('same key, other request', 'idempotency_conflict');
      if (ifMatch === 'missing') return refuse('replay without If-Match', 'precondition_required');
      if (ifMatch === 'malformed') return refuse('replay with malformed If-Match', 'stale_update');
      return { kind: 'replay', receipt };
    }
  }
  // 9. If-Match.
  if (ifMatch === 'missing') return refuse('If-Match', 'precondition_required');
  if (ifMatch !== 'current') return refuse('If-Match', 'stale_update');
  // 10. X-Task-Claim.
  if (spec.claimHeader) {
    const header = attempt.claimHeader;
    const token = header === undefined ? null : header.trim().toLowerCase();
    if (token !== null && (!UUID.test(token) || token === ZERO_UUID)) return refuse('X-Task-Claim malformed', 'validation_failed');
    const live = liveLease(m, attempt.target);
    if (live !== undefined) {
      if (token === null || token !== live.token || live.clientId !== actor.clientId) return refuse('live lease, not this token', 'task_claimed');
    } else if (token !== null) {
      return refuse('no live lease, token sent', 'claim_expired');
    }
  }
  // 11. Business rules.
  return business(m, actor, attempt);
}

function business(m: Model, actor: Actor, attempt: Attempt): Expectation {
  const body = attempt.body as Record<string, unknown>;
  switch (attempt.op) {
    case 'patch': return patchRules(m, actor, attempt.target, body);
    case 'effort': return effortRules(m, actor, attempt.target, body);
    case 'note': return noteRules(m, actor, attempt.target, body);
    case 'claim': return claimRules(m, actor, attempt.target);
    case 'renew': case 'release': return leaseRules(m, actor, attempt.target, body['token'] as string, attempt.op);
    case 'assist': return assistRules(m, actor, attempt.target, body);
    case 'evaluate': return evaluateRules(m, attempt.target, body);
    default: return incomingRules(m, attempt.op, attempt.target, body);
  }
}

const taskWriteOk = (bump: boolean, more?: (m: Model, response: ServiceResponse) => void, warning = false) => ({
  kind: 'ok' as const,
  success: {
    status: 204,
    bump,
    apply(m: Model, response: ServiceResponse) {
      if (response.body !== undefined && response.body !== '') fail('a 204 with a body');
      if ((response.headers['warning'] ?? null) !== (warning ? WARNING : null)) fail(`Warning header: ${response.headers['warning'] ?? 'none'}`);
      more?.(m, response);
    },
  },
});

interface IntervalInput { staffMemberId: number; start: string; end: string }

/** Contract 6's interval rules, or the refusal they give. */
function intervalRefusal(actor: Actor, intervals: readonly IntervalInput[], now: number): string | null {
  const spans: [number, number][] = [];
  for (const interval of intervals) {
    if (interval.staffMemberId !== actor.resource) return 'invalid_field';
    const start = inputInstant(interval.start);
    const end = inputInstant(interval.end);
    if (start === null || end === null || !(start < end) || end > now) return 'invalid_field';
    spans.push([start, end]);
  }
  spans.sort((a, b) => a[0] - b[0]);
  for (let i = 1; i < spans.length; i++) if ((spans[i] as [number, number])[0] < (spans[i - 1] as [number, number])[1]) return 'invalid_field';
  return null;
}

function reaches(m: Model, from: number, to: number, seen = new Set<number>()): boolean {
  if (from === to) return true;
  if (seen.has(from)) return false;
  seen.add(from);
  return (m.tasks.get(from)?.deps ?? []).some((next) => reaches(m, next, to, seen));
}

function patchRules(m: Model, actor: Actor, taskId: number, body: Record<string, unknown>): Expectation {
  const task = m.tasks.get(taskId) as TaskState;
  const errors = new Set<string>();
  if (task.status === 'Done') errors.add('task_completed');
  // README: actualIntervals in PATCH needs tasks:time, checked as a business rule.
  if ('actualIntervals' in body && !actor.scopes.has('tasks:time')) errors.add('permission_denied');
  if (typeof body['title'] === 'string' && body['title'].trim() === '') errors.add('invalid_field');
  const deps = body['dependencyIds'] as number[] | undefined;
  if (deps !== undefined) {
    const known = deps.every((id) => m.tasks.get(id)?.org === task.org);
    if (deps.includes(taskId) || new Set(deps).size !== deps.length || !known) errors.add('invalid_field');
    else if (deps.some((id) => reaches(m, id, taskId))) errors.add('dependency_conflict');
  }
  // Contract 7: a wall time that does not exist (the spring gap) is 422.
  for (const member of ['earliestStart', 'releaseDate']) {
    if (typeof body[member] === 'string' && inputInstant(body[member] as string) === null) errors.add('invalid_field');
  }
  const intervals = body['actualIntervals'] as IntervalInput[] | undefined;
  if (intervals !== undefined) {
    const refusal = intervalRefusal(actor, intervals, m.now);
    if (refusal !== null) errors.add(refusal);
  }
  const status = (body['status'] as Status | undefined) ?? task.status;
  const isWaiting = (body['isWaiting'] as boolean | undefined) ?? task.isWaiting;
  const depsAfter = deps ?? task.deps;
  let startedAt = task.startedAt;
  if ('startedAt' in body) {
    const value = body['startedAt'] as string | null;
    if (value === null) {
      let after = 0;
      for (const [staff, list] of task.intervals) if (staff !== actor.resource) after += list.length;
      after += intervals?.length ?? task.intervals.get(actor.resource)?.length ?? 0;
      if (status !== 'Ready' || after > 0) errors.add('invalid_field');
      startedAt = null;
    } else {
      const instant = inputInstant(value);
      startedAt = inputWall(value);
      // README: a startedAt is checked against the clock at its instant (a Z input keeps its pass).
      if (instant === null || instant > m.now) errors.add('invalid_field');
    }
  }
  let completedAt = task.completedAt;
  if (status !== task.status && task.status !== 'Done') {
    const unmet = unmetPrerequisites(m, depsAfter);
    const human = humanBlocker(m, taskId);
    if (status === 'InProgress' && task.status === 'Ready') {
      if (unmet || human || isWaiting) errors.add('task_blocked');
      startedAt ??= local(m.now);
    }
    if (status === 'Done') {
      // Contract 6; README: with both, the human blocker is named (task_blocked).
      if (human) errors.add('task_blocked');
      else if (unmet) errors.add('dependency_conflict');
      completedAt = local(m.now);
    }
  }
  if (errors.size > 0) return refuse('PATCH rules', ...errors);
  const keys = Object.keys(body);
  const estimate = body['estimatedMinutes'] !== undefined
    ? (body['estimatedMinutes'] as number)
    : body['remainingMinutes'] !== undefined
      ? (startedAt === null ? 0 : Math.floor(workingMinutes(m.calendar, at(startedAt), m.now))) + (body['remainingMinutes'] as number)
      : task.estimate;
  return taskWriteOk(keys.length > 0, (model) => {
    const target = model.tasks.get(taskId) as TaskState;
    if (typeof body['title'] === 'string') target.title = body['title'];
    if ('description' in body) target.description = body['description'] as string | null;
    if (typeof body['sequence'] === 'number') target.sequence = body['sequence'];
    if (typeof body['resourceMode'] === 'string') target.resourceMode = body['resourceMode'];
    if ('earliestStart' in body) target.earliestStart = body['earliestStart'] === null ? null : inputWall(body['earliestStart'] as string);
    if ('releaseDate' in body) target.releaseDate = body['releaseDate'] === null ? null : inputWall(body['releaseDate'] as string);
    target.status = status;
    target.isWaiting = isWaiting;
    target.deps = [...depsAfter];
    target.startedAt = startedAt;
    target.completedAt = completedAt;
    target.estimate = estimate;
    if (intervals !== undefined) {
      target.intervals.set(actor.resource, intervals.map((i): [number, number] => [inputInstant(i.start) as number, inputInstant(i.end) as number]));
    }
  }, 'remainingMinutes' in body);
}

function effortRules(m: Model, actor: Actor, taskId: number, body: Record<string, unknown>): Expectation {
  const intervals = body['actualIntervals'] as IntervalInput[];
  const refusal = intervalRefusal(actor, intervals, m.now);
  if (refusal !== null) return refuse('interval rules', refusal);
  return taskWriteOk(true, (model) => {
    (model.tasks.get(taskId) as TaskState).intervals.set(actor.resource, intervals.map((i): [number, number] => [inputInstant(i.start) as number, inputInstant(i.end) as number]));
  });
}

function noteRules(m: Model, actor: Actor, taskId: number, body: Record<string, unknown>): Expectation {
  const text = body['text'] as string;
  if (text.trim() === '') return refuse('blank note', 'invalid_field');
  return taskWriteOk(true, (model) => {
    (model.tasks.get(taskId) as TaskState).notes.push({ text, clientName: actor.clientName, staffName: actor.staffName, created: model.now });
  });
}

function claimRules(m: Model, actor: Actor, taskId: number): Expectation {
  const task = m.tasks.get(taskId) as TaskState;
  // Contract 2: Done, blocked, otherwise not runnable, live lease.
  if (task.status === 'Done') return refuse('claim of Done work', 'task_completed');
  if (blockingReasons(m, task).length > 0) return refuse('claim of blocked work', 'task_blocked');
  if (!runnable(m, task)) return refuse('claim of unrunnable work', 'task_not_runnable');
  if (liveLease(m, taskId) !== undefined) return refuse('claim of leased work', 'task_claimed');
  // Then the task's linked items are refreshed, whatever their age: a failure is 503, changed
  // facts are recorded and answered 409; neither creates a lease.
  const linked = itemsOfTask(m, taskId);
  if (linked.some((item) => (m.truth[item.itemId] as SourceTruth).failing)) {
    return { kind: 'error', codes: ['source_unavailable'], why: 'a linked item fails', refreshed: (model) => { refreshModel(model, itemsOfTask(model, taskId)); } };
  }
  if (linked.some((item) => item.known !== null && !sameFacts(item.known, (m.truth[item.itemId] as SourceTruth).facts))) {
    return { kind: 'error', codes: ['source_context_changed'], why: 'the linked facts changed', refreshed: (model) => { refreshModel(model, itemsOfTask(model, taskId)); } };
  }
  return {
    kind: 'ok',
    success: {
      status: 200,
      bump: true,
      // A reply found by the refresh is recorded (a version step) and does not refuse the claim.
      before: (model) => { refreshModel(model, itemsOfTask(model, taskId)); },
      apply(model, response) {
        const claim = json<{ token: string; expiresUtc: string }>(response);
        if (Object.keys(claim).sort().join() !== 'expiresUtc,token') fail(`claim body ${response.body ?? ''}`);
        if (!UUID_V4.test(claim.token)) fail(`claim token ${claim.token} is no v4 UUID`);
        const expires = model.now + LEASE_MS;
        if (claim.expiresUtc !== new Date(expires).toISOString()) fail(`claim expiresUtc ${claim.expiresUtc}, expected now + 15 min ${new Date(expires).toISOString()}`);
        model.leases.push({ taskId, clientId: actor.clientId, token: claim.token, expires, released: false });
      },
    },
  };
}

function leaseRules(m: Model, actor: Actor, taskId: number, token: string, op: 'renew' | 'release'): Expectation {
  const lease = m.leases.find((l) => l.token === token.toLowerCase());
  if (lease === undefined || lease.released || lease.expires <= m.now || lease.taskId !== taskId || lease.clientId !== actor.clientId) {
    return refuse(`${op} with a token that is not the caller's live lease`, 'claim_expired');
  }
  return {
    kind: 'ok',
    success: {
      status: 200,
      bump: true,
      apply(model, response) {
        const answer = json<Record<string, unknown>>(response);
        if (op === 'renew') {
          const expected = JSON.stringify({ token: lease.token, expiresUtc: new Date(model.now + LEASE_MS).toISOString() });
          if (canonical(answer) !== canonical(JSON.parse(expected))) fail(`renew answered ${response.body ?? ''}, expected ${expected}`);
          lease.expires = model.now + LEASE_MS;
        } else {
          const expected = JSON.stringify({ released: true, releasedUtc: new Date(model.now).toISOString() });
          if (canonical(answer) !== canonical(JSON.parse(expected))) fail(`release answered ${response.body ?? ''}, expected ${expected}`);
          lease.released = true;
        }
      },
    },
  };
}

function assistRules(m: Model, requester: Actor, taskId: number, body: Record<string, unknown>): Expectation {
  const errors = new Set<string>();
  // Contract 8: an active human staff member of the organisation (Grace, 11) only.
  if (body['humanAssigneeId'] !== 11) errors.add('human_assignee_invalid');
  if (typeof body['title'] === 'string' && body['title'].trim() === '') errors.add('invalid_field');
  if (body['publishExternally'] === true && itemsOfTask(m, taskId).length === 0) errors.add('invalid_field');
  if (errors.size > 0) return refuse('assistance rules', ...errors);
  return {
    kind: 'ok',
    success: {
      status: 201,
      bump: true,
      apply(model, response) {
        const created = json<{ id: number; originatingTaskId: number }>(response);
        if (Object.keys(created).sort().join() !== 'id,originatingTaskId' || created.originatingTaskId !== taskId) {
          fail(`201 body ${response.body ?? ''}`);
        }
        if (response.headers['location'] !== `/api/v1/human-requests/${created.id}`) fail(`Location ${response.headers['location'] ?? 'none'}`);
        if (model.tasks.has(created.id) || model.assists.some((a) => a.stageId === created.id)) fail(`stage id ${created.id} reused`);
        // The Incoming id and revision are read afterwards (see learn).
        model.assists.push({
          stageId: created.id,
          incomingId: 0,
          taskId,
          requester: requester.name,
          title: body['title'] as string,
          details: (body['details'] as string | null | undefined) ?? null,
          estimate: body['estimatedMinutes'] as number,
          kind: (body['assistanceKind'] as string | undefined) ?? 'Question',
          response: null,
          respondedAt: null,
          completedAt: null,
          actualStart: null,
          plannedStart: null,
          responseUnstated: false,
          published: body['publishExternally'] === true,
          refs: [],
          isBlocking: body['isBlocking'] !== false,
          priority: (body['priority'] as string | undefined) ?? 'normal',
          requestedAt: model.now,
          lifecycle: 'floating',
          responseState: 'open',
          revision: '',
          oldRevisions: [],
        });
      },
    },
  };
}

interface RequestDetail {
  stageId: number; requestedForStageId: number; incomingId: number | null; requestedByApiClientId: number; requestedByStaffMemberId: number;
  assignedHumanId: number; assignedHumanName: string; requestedByName: string; title: string; details: string | null; estimatedMinutes: number;
  remainingMinutes: number; status: string; isBlocking: boolean; response: string | null; createdUtc: string; completedUtc: string | null;
  lifecycle: string; priorityName: string | null; responseState: string; actualStartUtc: string | null; actualEffortMinutes: number | null;
  incomingRevision: string; respondedAtUtc: string | null; assistanceKind: string;
}

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

/** What an assistance request shows (HumanRequest), from the model. */
function checkRequestDetail(m: Model, item: Assist, shown: RequestDetail, what: string): void {
  const requester = ACTORS[item.requester];
  const remaining = item.lifecycle === 'completed' ? 0
    : item.lifecycle === 'inprogress' && item.actualStart !== null ? Math.max(0, item.estimate - Math.floor(workingMinutes(m.calendar, item.actualStart, m.now)))
      : item.estimate;
  const expected: Record<string, unknown> = {
    stageId: item.stageId, requestedForStageId: item.taskId, incomingId: item.incomingId, requestedByApiClientId: requester.clientId,
    requestedByStaffMemberId: requester.resource, assignedHumanId: 11, assignedHumanName: 'Grace', requestedByName: requester.staffName,
    title: item.title, details: item.details, estimatedMinutes: item.estimate, remainingMinutes: remaining, status: lifecycleStatus(item.lifecycle),
    isBlocking: item.isBlocking, createdUtc: iso(item.requestedAt), completedUtc: iso(item.completedAt), lifecycle: item.lifecycle,
    priorityName: item.priority, responseState: item.responseState, actualStartUtc: iso(item.actualStart), actualEffortMinutes: null,
    incomingRevision: item.revision, assistanceKind: item.kind,
    ...(item.responseUnstated ? {} : { response: item.response, respondedAtUtc: iso(item.respondedAt) }),
  };
  for (const [name, value] of Object.entries(expected)) {
    const actual = (shown as unknown as Record<string, unknown>)[name];
    if (JSON.stringify(actual) !== JSON.stringify(value)) fail(`${what}: request ${item.stageId} ${name} is ${JSON.stringify(actual)}, model ${JSON.stringify(value)}`);
  }
}

/** GET /human-requests/{id} as whoever may read it (Ada, or Bob for Bob-only work). */
async function readRequest(r: Real, stageId: number): Promise<RequestDetail> {
  for (const actor of [ACTORS.ada, ACTORS.bob]) {
    const response = await send(r, actor, { method: 'GET', url: `/api/v1/human-requests/${stageId}`, headers: {} });
    if (response.status === 200) return json<RequestDetail>(response);
  }
  return fail(`GET /human-requests/${stageId} failed for Ada and Bob`);
}

function evaluateRules(m: Model, taskId: number, body: Record<string, unknown>): Expectation {
  if (body['decision'] === 'acknowledge') {
    const change = m.changes.find((c) => c.id === body['eventId']);
    if (change === undefined || change.taskId !== taskId) return refuse('no such source change of this task', 'invalid_field');
    if (change.acknowledged !== null) return refuse('already acknowledged', 'source_context_changed');
    const eventId = change.id;
    return taskWriteOk(true, (model) => {
      (model.changes.find((c) => c.id === eventId) as ChangeState).acknowledged = model.now;
    });
  }
  const item = m.assists.find((a) => a.incomingId === body['incomingId']);
  if (item === undefined || item.taskId !== taskId) return refuse('incomingId of no assistance of this task', 'invalid_field');
  const errors = new Set<string>();
  if ((body['revision'] as string).toLowerCase() !== item.revision) errors.add('stale_update');
  if (item.responseState === 'resolved') errors.add('request_completed');
  else if (item.responseState !== 'responded') errors.add('incoming_state_conflict');
  if (body['decision'] === 'followup' && (body['message'] as string).trim() === '') errors.add('invalid_field');
  if (errors.size > 0) return refuse('evaluation rules', ...errors);
  return taskWriteOk(true, (model) => {
    const target = model.assists.find((a) => a.incomingId === item.incomingId) as Assist;
    target.oldRevisions.push(target.revision);
    target.revision = '';
    if (body['decision'] === 'resolve') {
      target.responseState = 'resolved';
      target.lifecycle = 'completed';
      target.completedAt ??= model.now;
    } else {
      target.responseState = 'open';
      target.responseUnstated = true;
      if (target.lifecycle === 'completed') {
        target.lifecycle = 'inprogress';
        target.completedAt = null;
      }
      // README: followup appends "Follow-up: " and the message as a paragraph (or becomes the details).
      if (body['decision'] === 'followup') {
        if (target.published) model.followUps.push(target.stageId);
        const message = body['message'] as string;
        target.details = target.details === null || /^\p{White_Space}*$/u.test(target.details) ? message : `${target.details}\n\nFollow-up: ${message}`;
      }
    }
  });
}

function incomingRules(m: Model, op: Op, incomingId: number, body: Record<string, unknown>): Expectation {
  const item = m.assists.find((a) => a.incomingId === incomingId) as Assist;
  const floatingOrPlanned = item.lifecycle === 'floating' || item.lifecycle === 'planned';
  let next: { lifecycle: Lifecycle; responseState: ResponseState } | null = null;
  if (op === 'incStart' && floatingOrPlanned) next = { lifecycle: 'inprogress', responseState: item.responseState };
  if (op === 'incPlan' && floatingOrPlanned) next = { lifecycle: 'planned', responseState: item.responseState };
  if (op === 'incComplete' && item.lifecycle !== 'completed') next = { lifecycle: 'completed', responseState: 'responded' };
  if (op === 'incReassign' && item.lifecycle === 'floating') {
    if (body['assigneeId'] !== 11) return refuse('reassign to an inactive human', 'human_assignee_invalid');
    next = { lifecycle: 'floating', responseState: item.responseState };
  }
  if (next === null) return refuse(`${op} from ${item.lifecycle}`, 'incoming_state_conflict');
  const after = next;
  return {
    kind: 'ok',
    success: {
      status: 204,
      bump: true,
      apply(model, response) {
        const target = model.assists.find((a) => a.incomingId === incomingId) as Assist;
        const etag = QUOTED_UUID.exec(response.headers['etag'] ?? '');
        if (etag === null) fail(`Incoming action ETag ${response.headers['etag'] ?? 'none'}`);
        const revision = (etag[1] as string).toLowerCase();
        if (revision === target.revision || target.oldRevisions.includes(revision)) fail('Incoming action kept an old revision');
        target.oldRevisions.push(target.revision);
        target.revision = revision;
        target.lifecycle = after.lifecycle;
        target.responseState = after.responseState;
        if (op === 'incStart') target.actualStart = model.now;
        if (op === 'incPlan') target.plannedStart = body['plannedStart'] as string;
        if (op === 'incComplete') {
          target.response = (body['response'] as string | null | undefined) ?? null;
          target.respondedAt = model.now;
          target.completedAt = model.now;
          target.responseUnstated = false;
        }
      },
    },
  };
}

// ------------------------------------------------------------------------------------------
// Invariants checked after every step

/**
 * A digest of every table, row by row. Housekeeping the README describes is left out: receipts
 * past their 24 hours and leases ended a day ago are deleted by later writes, and a lookup never
 * sees them, so only the live part of those two tables counts.
 */
const tableReaders = new WeakMap<Database.Database, [string, Database.Statement][]>();

function digest(db: Database.Database, now: number): Map<string, string> {
  let readers = tableReaders.get(db);
  if (readers === undefined) {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all() as { name: string }[];
    readers = tables.map(({ name }): [string, Database.Statement] => {
      const where = name === 'idempotency_receipts' ? ' WHERE expires_utc > @now' : name === 'claims' ? ` WHERE expires_utc > @now - ${DAY}` : '';
      return [name, db.prepare(`SELECT * FROM "${name}"${where}`)];
    });
    tableReaders.set(db, readers);
  }
  const result = new Map<string, string>();
  for (const [name, statement] of readers) {
    const rows = (statement.all(statement.source.includes('@now') ? { now } : {}) as Record<string, unknown>[]).map((row) => JSON.stringify(row)).sort();
    result.set(name, createHash('sha256').update(rows.join('\n')).digest('hex'));
  }
  return result;
}

/** Rows changed on the service's connection so far (a read must not add to it). */
const totalChanges = (r: Real): number => (r.db.prepare('SELECT total_changes() AS n').get() as { n: number }).n;

function changedTables(before: Map<string, string>, after: Map<string, string>): string[] {
  return [...after.keys()].filter((name) => before.get(name) !== after.get(name));
}

function dbVersion(r: Pick<Real, 'db'>): number {
  return (r.db.prepare('SELECT workspace_version AS v FROM organisations WHERE id = 1').get() as { v: number }).v;
}

function checkStore(m: Model, r: Real, what: string): void {
  if (dbVersion(r) !== m.version) fail(`${what}: workspace version ${dbVersion(r)}, model ${m.version}`);
  const live = r.db.prepare(
    'SELECT task_id AS taskId, client_id AS clientId, token, expires_utc AS expires FROM claims WHERE released_utc IS NULL AND expires_utc > ? ORDER BY task_id',
  ).all(m.now) as { taskId: number; clientId: number; token: string; expires: number }[];
  const perTask = new Set<number>();
  for (const lease of live) {
    if (perTask.has(lease.taskId)) fail(`${what}: two live leases on task ${lease.taskId}`);
    perTask.add(lease.taskId);
  }
  const expected = m.leases.filter((l) => !l.released && l.expires > m.now).map((l) => ({ taskId: l.taskId, clientId: l.clientId, token: l.token, expires: l.expires }))
    .sort((a, b) => a.taskId - b.taskId);
  if (JSON.stringify(live) !== JSON.stringify(expected)) fail(`${what}: live leases ${JSON.stringify(live)}, model ${JSON.stringify(expected)}`);
}

// ------------------------------------------------------------------------------------------
// Attempt parameters (generated) and their resolution against the model

type KeyChoice = 'none' | 'fresh' | 'k1' | 'K1' | 'k2' | 'k3' | 'k4' | 'bad';
let freshKeys = 0;
type IfMatchChoice = 'current' | 'stale' | 'missing' | 'malformed' | 'otherTask';
type ClaimChoice = 'auto' | 'none' | 'holder' | 'ended' | 'zero' | 'upper';
type TokenChoice = 'own' | 'holder' | 'ended' | 'otherTask' | 'random' | 'zero' | 'missing' | 'malformed' | 'upper';
/** A time input `minutes` from now: a wall time of that instant, the instant with Z, or wall-clock arithmetic. */
interface TimeSpec { readonly minutes: number; readonly form: 'wall' | 'z' | 'arith' }
type IntervalsChoice = 'one' | 'two' | 'overlap' | 'future' | 'reversed' | 'foreign' | 'empty' | 'zeroStaff';

interface Common {
  readonly actor: ActorName;
  readonly key: KeyChoice;
  readonly ifMatch: IfMatchChoice;
  readonly claim: ClaimChoice;
  readonly reorder: boolean;
  /** How interval times are written. */
  readonly timeForm: TimeSpec['form'];
}

type PatchMember =
  | ['title', 'New title' | '   ' | '']
  | ['description', string | null]
  | ['sequence', number]
  | ['status', 'Ready' | 'InProgress' | 'Done' | 'Paused']
  | ['isWaiting', boolean]
  | ['estimatedMinutes', number]
  | ['remainingMinutes', number]
  | ['dependencyIds', number[]]
  | ['startedAt', 'null' | TimeSpec]
  | ['earliestStart', 'null' | TimeSpec]
  | ['releaseDate', 'null' | TimeSpec]
  | ['resourceMode', 'Independent' | 'Collaboration']
  | ['actualIntervals', IntervalsChoice]
  | ['project', number];

type WriteParams =
  | (Common & { readonly op: 'patch'; readonly task: number; readonly members: readonly PatchMember[] })
  | (Common & { readonly op: 'effort'; readonly task: number; readonly intervals: IntervalsChoice })
  | (Common & { readonly op: 'note'; readonly task: number; readonly text: string })
  | (Common & { readonly op: 'claim'; readonly task: number; readonly body: 'none' | 'empty' | 'member' })
  | (Common & { readonly op: 'renew' | 'release'; readonly task: number; readonly token: TokenChoice })
  | (Common & { readonly op: 'assist'; readonly task: number; readonly human: number; readonly title: string; readonly estimate: number; readonly blocking: boolean | null; readonly priority: string | null; readonly publish: boolean; readonly details: string | null | undefined; readonly kind: string | undefined })
  | (Common & { readonly op: 'evaluate'; readonly which: number; readonly onOtherTask: boolean; readonly decision: 'resolve' | 'keepwaiting' | 'followup' | 'acknowledge'; readonly staleRevision: boolean; readonly message: string })
  | (Common & { readonly op: 'incStart' | 'incPlan' | 'incComplete' | 'incReassign'; readonly which: number; readonly variant: number });

/**
 * -1 stands for "the newest assistance stage id" (a stage is no task: 404), or 999 without one;
 * -2 for a task under a live lease (the actor's own first); -100 - i for the i-th task (modulo)
 * assigned to the actor's resource.
 */
function resolveTask(m: Model, task: number, actor?: Actor): number {
  if (task === -1) return m.assists.at(-1)?.stageId ?? 999;
  if (task === -3) {
    // A task of the actor's resource under another client's live lease (else as -2).
    const lease = m.leases.find((l) => !l.released && l.expires > m.now && l.clientId !== actor?.clientId
      && actor !== undefined && (m.tasks.get(l.taskId) as TaskState).assignees.includes(actor.resource));
    return lease?.taskId ?? resolveTask(m, -2, actor);
  }
  if (task === -2) {
    // A task the actor holds a live lease on (else any live lease, else one of its own).
    const leases = m.leases.filter((l) => !l.released && l.expires > m.now);
    const lease = leases.find((l) => l.clientId === actor?.clientId) ?? leases[0];
    return lease?.taskId ?? resolveTask(m, -100, actor);
  }
  if (task <= -100) {
    const own = actor === undefined ? [] : ORG1_TASKS.filter((id) => actor.org === 1 && (m.tasks.get(id) as TaskState).assignees.includes(actor.resource));
    return own.length === 0 ? ORG1_TASKS[(-100 - task) % ORG1_TASKS.length] as number : own[(-100 - task) % own.length] as number;
  }
  return task;
}

function timeText(now: number, spec: TimeSpec): string {
  const instant = Math.floor((now + spec.minutes * MINUTE) / 1000) * 1000;
  if (spec.form === 'z') return `${new Date(instant).toISOString().slice(0, 19)}Z`;
  if (spec.form === 'arith') return wallPlus(local(now), spec.minutes);
  return local(instant);
}

function intervalsFor(choice: IntervalsChoice, actor: Actor, now: number, form: TimeSpec['form']): IntervalInput[] {
  const at = (minutesAgo: number) => timeText(now, { minutes: -minutesAgo, form });
  const me = actor.resource;
  switch (choice) {
    case 'one': return [{ staffMemberId: me, start: at(90), end: at(60) }];
    case 'two': return [{ staffMemberId: me, start: at(200), end: at(150) }, { staffMemberId: me, start: at(40), end: at(10) }];
    case 'overlap': return [{ staffMemberId: me, start: at(90), end: at(60) }, { staffMemberId: me, start: at(70), end: at(30) }];
    case 'future': return [{ staffMemberId: me, start: at(30), end: at(-10) }];
    case 'reversed': return [{ staffMemberId: me, start: at(30), end: at(30) }];
    case 'foreign': return [{ staffMemberId: me === 10 ? 12 : 10, start: at(90), end: at(60) }];
    case 'empty': return [];
    case 'zeroStaff': return [{ staffMemberId: 0, start: at(90), end: at(60) }];
  }
}

function tokenFor(m: Model, actor: Actor, taskId: number, choice: TokenChoice | ClaimChoice): string | undefined {
  const live = liveLease(m, taskId);
  const own = live !== undefined && live.clientId === actor.clientId ? live.token : undefined;
  const ended = [...m.leases].reverse().find((l) => l.released || l.expires <= m.now)?.token;
  switch (choice) {
    case 'auto': return own;
    case 'own': return own ?? m.leases.filter((l) => l.taskId === taskId).at(-1)?.token ?? randomUUID();
    case 'none': case 'missing': return undefined;
    case 'holder': return live?.token ?? randomUUID();
    case 'ended': return ended ?? randomUUID();
    case 'otherTask': return m.leases.filter((l) => l.taskId !== taskId && l.clientId === actor.clientId).at(-1)?.token ?? randomUUID();
    case 'random': return randomUUID();
    case 'zero': return ZERO_UUID;
    case 'malformed': return 'not-a-lease-token';
    case 'upper': return (own ?? randomUUID()).toUpperCase();
  }
}

function ifMatchFor(m: Model, p: WriteParams, target: number, incoming: Assist | undefined): string | undefined {
  switch (p.ifMatch) {
    case 'missing': return undefined;
    case 'malformed': return incoming === undefined && !OPS[p.op].incoming ? `W/"task-${target}-plan-${m.version}"` : '*';
    case 'otherTask': return OPS[p.op].incoming ? `"task-${target}-plan-${m.version}"` : `"task-${target === 1 ? 3 : 1}-plan-${m.version}"`;
    case 'stale':
      if (OPS[p.op].incoming) return `"${incoming?.oldRevisions.at(-1) ?? randomUUID()}"`;
      return `"task-${target}-plan-${Math.max(1, m.version - 1)}"`;
    case 'current':
      if (OPS[p.op].incoming) return `"${incoming?.revision ?? randomUUID()}"`;
      return etagOf(m, target);
  }
}

/** Turns generated parameters into a concrete request against the model as it is now. */
function materialise(m: Model, p: WriteParams): Attempt {
  const actor = ACTORS[p.actor];
  const key = p.key === 'none' ? undefined : p.key === 'bad' ? 'bad key!' : p.key === 'fresh' ? `u${(freshKeys += 1)}` : p.key;
  let target: number;
  let body: unknown = {};
  let noBody = false;
  let incoming: Assist | undefined;
  // Another organisation's own work is outside the model (its reads are checked, not its writes).
  const taskOf = (choice: number): number => {
    const id = resolveTask(m, choice, actor);
    return actor.org !== 1 && id === 90 ? 1 : id;
  };
  switch (p.op) {
    case 'patch': {
      target = taskOf(p.task);
      const patch: Record<string, unknown> = {};
      for (const [name, value] of p.members) {
        if (name === 'startedAt' || name === 'earliestStart' || name === 'releaseDate') patch[name] = value === 'null' ? null : timeText(m.now, value);
        else if (name === 'actualIntervals') patch[name] = intervalsFor(value, actor, m.now, p.timeForm);
        else if (name === 'dependencyIds') patch[name] = value.map((id) => (id === 0 ? target : resolveTask(m, id)));
        else patch[name] = value;
      }
      // remainingMinutes is judged against the start the PATCH leaves; keep it apart from start changes.
      if ('remainingMinutes' in patch && ('status' in patch || 'startedAt' in patch)) delete patch['remainingMinutes'];
      body = patch;
      break;
    }
    case 'effort':
      target = taskOf(p.task);
      body = { actualIntervals: intervalsFor(p.intervals, actor, m.now, p.timeForm) };
      break;
    case 'note':
      target = taskOf(p.task);
      body = { text: p.text };
      break;
    case 'claim':
      target = taskOf(p.task);
      noBody = p.body === 'none';
      body = p.body === 'member' ? { token: randomUUID() } : {};
      break;
    case 'renew':
    case 'release': {
      target = taskOf(p.task);
      const token = tokenFor(m, actor, target, p.token);
      body = token === undefined ? {} : { token };
      break;
    }
    case 'assist': {
      target = taskOf(p.task);
      // Valid titles are made unique, so a publication can be told apart by its title.
      const title = p.title.trim() === '' ? p.title : `${p.title} #${(freshKeys += 1)}`;
      const request: Record<string, unknown> = { humanAssigneeId: p.human, title, estimatedMinutes: p.estimate };
      if (p.blocking !== null) request['isBlocking'] = p.blocking;
      if (p.priority !== null) request['priority'] = p.priority;
      if (p.publish) request['publishExternally'] = true;
      if (p.details !== undefined) request['details'] = p.details;
      if (p.kind !== undefined) request['assistanceKind'] = p.kind;
      body = request;
      break;
    }
    case 'evaluate': {
      // -1: an item awaiting evaluation, if there is one.
      const item = p.which === -1 && m.assists.some((a) => a.responseState === 'responded')
        ? m.assists.find((a) => a.responseState === 'responded')
        : m.assists.length === 0 ? undefined : m.assists[Math.max(0, p.which) % m.assists.length];
      target = item === undefined ? 3 : p.onOtherTask ? (item.taskId === 3 ? 1 : 3) : item.taskId;
      if (p.decision === 'acknowledge') {
        body = { decision: 'acknowledge', eventId: 999_999 };
      } else {
        const revision = item === undefined ? randomUUID() : p.staleRevision ? item.oldRevisions.at(-1) ?? randomUUID() : item.revision;
        const evaluation: Record<string, unknown> = { decision: p.decision, incomingId: item?.incomingId ?? 999, revision };
        if (p.decision === 'followup') evaluation['message'] = p.message;
        body = evaluation;
      }
      break;
    }
    default: {
      incoming = m.assists.length === 0 || p.which >= 90 ? undefined : m.assists[p.which % m.assists.length];
      target = incoming?.incomingId ?? 999_999;
      if (p.op === 'incStart') {
        noBody = p.variant % 2 === 0;
        body = {};
      } else if (p.op === 'incPlan') {
        body = { plannedStart: p.variant % 2 === 0 ? '2026-11-17T10:00:00' : '2026-11-18T14:30:00' };
      } else if (p.op === 'incComplete') {
        body = p.variant % 3 === 0 ? {} : { response: p.variant % 3 === 1 ? 'Headline A' : null };
      } else {
        body = { assigneeId: p.variant % 3 === 0 ? 13 : 11 };
      }
    }
  }
  const claimHeader = OPS[p.op].claimHeader ? tokenFor(m, actor, target, p.claim) : undefined;
  return { op: p.op, actor: p.actor, target, body, noBody, key, ifMatch: ifMatchFor(m, p, target, incoming), claimHeader, reorder: p.reorder };
}

function sentOf(attempt: Attempt): Sent {
  const spec = OPS[attempt.op];
  const headers: Record<string, string> = {};
  if (attempt.ifMatch !== undefined) headers['if-match'] = attempt.ifMatch;
  if (attempt.key !== undefined) headers['idempotency-key'] = attempt.key;
  if (attempt.claimHeader !== undefined) headers['x-task-claim'] = attempt.claimHeader;
  return {
    method: spec.method,
    url: spec.path(attempt.target),
    headers,
    ...(attempt.noBody ? {} : { body: spell(JSON.stringify(attempt.reorder ? reversed(attempt.body) : attempt.body), attempt.spelling ?? 'plain') }),
  };
}

function spell(text: string, spelling: 'plain' | 'decimals' | 'escapes'): string {
  // Integers only occur as member values or array elements here; strings hold no quotes.
  if (spelling === 'decimals') return text.replace(/([:,[])(-?\d+)(?=[,}\]])/g, '$1$2.0');
  if (spelling === 'escapes') return text.replace(/"([A-Za-z])([^"]*)"(?!:)/g, (_all, first: string, rest: string) => `"\\u00${first.charCodeAt(0).toString(16)}${rest}"`);
  return text;
}

const REPLAYED = ['etag', 'location', 'warning', 'content-type'] as const;
/** What a claim's refresh of its linked items writes (and the version, when it records a change). */
const SOURCE_TABLES: readonly string[] = ['source_items', 'source_changes', 'source_activations', 'source_replies_seen', 'incoming_items', 'organisations'];

/**
 * Compares one answer with the model's expectation and, for a success, applies the write to the
 * model (receipt included). Synchronous and free of I/O, so a race can try it on copies of the
 * model in either order. `duplicate` allows the other answer contract 3 gives the loser of two
 * concurrent first requests with the same key (409 idempotency_conflict instead of a replay).
 */
function judge(m: Model, attempt: Attempt, expectation: Expectation, response: ServiceResponse, duplicate = false): void {
  const actor = ACTORS[attempt.actor];
  const what = describeSent(sentOf(attempt), attempt.actor);
  const outcome = codeOf(response);
  if (expectation.kind === 'error') {
    if (!expectation.codes.includes(outcome)) {
      fail(`${what}\n  -> ${response.status} ${response.body ?? ''}\n  expected ${expectation.codes.join(' or ')} (${expectation.why})`);
    }
    if (outcome === 'source_unavailable' && !/^[1-9][0-9]*$/.test(response.headers['retry-after'] ?? '')) fail(`${what}\n  -> 503 without a Retry-After`);
    expectation.refreshed?.(m);
    if (outcome === 'stale_update') {
      const item = m.assists.find((a) => a.incomingId === attempt.target);
      const current = OPS[attempt.op].incoming ? `"${item?.revision ?? ''}"` : etagOf(m, attempt.target);
      if (response.headers['etag'] !== current) fail(`${what}\n  -> 412 with ETag ${response.headers['etag'] ?? 'none'}, current is ${current}`);
    }
    return;
  }
  if (expectation.kind === 'replay') {
    if (duplicate && outcome === 'idempotency_conflict') return;
    const stored = expectation.receipt.answer;
    if (response.status !== stored.status || response.body !== stored.body) {
      fail(`${what}\n  -> replay answered ${response.status} ${response.body ?? ''}\n  original was ${stored.status} ${stored.body ?? ''}`);
    }
    for (const name of REPLAYED) {
      if (response.headers[name] !== stored.headers[name]) fail(`${what}\n  -> replay header ${name}: ${response.headers[name] ?? 'none'}, original ${stored.headers[name] ?? 'none'}`);
    }
    if (response.headers['idempotent-replayed'] !== 'true') fail(`${what}\n  -> replay without Idempotent-Replayed: true`);
    return;
  }
  const { success } = expectation;
  if (response.status !== success.status) fail(`${what}\n  -> ${response.status} ${response.body ?? ''}\n  expected ${success.status}`);
  if (response.headers['idempotent-replayed'] !== undefined) fail(`${what}\n  -> a first request marked as replayed`);
  success.before?.(m);
  if (success.bump) m.version += 1;
  if (!OPS[attempt.op].incoming && response.headers['etag'] !== etagOf(m, attempt.target)) {
    fail(`${what}\n  -> ETag ${response.headers['etag'] ?? 'none'}, expected ${etagOf(m, attempt.target)}`);
  }
  success.apply(m, response);
  if (attempt.key !== undefined) {
    const headers: Record<string, string> = {};
    for (const name of REPLAYED) {
      const value = response.headers[name];
      if (value !== undefined) headers[name] = value;
    }
    m.receipts.set(receiptKey(actor, attempt.key), {
      fingerprint: fingerprintOf(attempt), created: m.now, answer: { status: response.status, body: response.body, headers },
    });
  }
}

/**
 * Fills in what a write's answer does not say: a new request's Incoming id, a new revision, and
 * the references of publications made since (in order: a new request, or a follow-up of one).
 */
async function learn(m: Model, r: Real): Promise<void> {
  for (const publication of r.published.splice(0)) {
    // A publication is a new request's (the newest with that title and no reference yet) or a
    // follow-up's (the newest with that title). Titles are numbered; a resent request repeats one.
    const candidates = [...m.assists].reverse()
      .filter((a) => a.published && a.title === publication.title && itemsOfTask(m, a.taskId)[0]?.itemId === publication.itemId);
    const followed = candidates.find((a) => m.followUps.includes(a.stageId));
    const request = followed ?? candidates.find((a) => a.refs.length === 0) ?? candidates[0];
    if (followed !== undefined) m.followUps.splice(m.followUps.indexOf(followed.stageId), 1);
    if (request === undefined) fail(`a publication to ${publication.itemId} for no published request`);
    request.refs.push(publication.ref);
    tally(m, 'source:published');
  }
  for (const item of m.assists) {
    if (item.revision !== '') continue;
    const detail = await readRequest(r, item.stageId);
    if (item.incomingId === 0) {
      if (detail.incomingId === null || m.assists.some((a) => a.incomingId === detail.incomingId)) fail(`request ${item.stageId}: Incoming id ${String(detail.incomingId)}`);
      item.incomingId = detail.incomingId;
    }
    item.revision = detail.incomingRevision;
  }
}

/** Sends one write, compares the answer with the model's expectation and checks the store. */
async function performWrite(m: Model, r: Real, attempt: Attempt): Promise<void> {
  const sent = sentOf(attempt);
  const what = describeSent(sent, attempt.actor);
  const expectation = predict(m, attempt);
  const before = digest(r.db, m.now);
  const response = await send(r, ACTORS[attempt.actor], sent);
  // Publications to linked sources run after the answer (README): let them finish first.
  await r.service.idle();
  const changed = changedTables(before, digest(r.db, m.now));
  const outcome = codeOf(response);
  tally(m, `${attempt.op}:${expectation.kind === 'replay' ? 'replay' : outcome}`);
  if (attempt.key !== undefined && m.sent.length < 200) m.sent.push(attempt);
  judge(m, attempt, expectation, response);
  if (expectation.kind === 'error' && expectation.refreshed !== undefined) {
    const other = changed.filter((name) => !SOURCE_TABLES.includes(name));
    if (other.length > 0) fail(`${what}\n  -> ${outcome}, yet ${other.join(', ')} changed`);
  } else if (expectation.kind !== 'ok' && changed.length > 0) fail(`${what}\n  -> ${expectation.kind === 'replay' ? 'a replay' : outcome}, yet ${changed.join(', ')} changed`);
  if (expectation.kind === 'ok' && !expectation.success.bump && changed.some((name) => name !== 'idempotency_receipts')) {
    fail(`${what}\n  -> a write that changes nothing changed ${changed.join(', ')}`);
  }
  await learn(m, r);
  checkStore(m, r, what);
  // What this step showed, for the log and the rule counts (the checks above would have failed).
  if (expectation.kind === 'error') tally(m, outcome === 'stale_update' ? 'rule:412' : 'rule:refusal');
  if (expectation.kind === 'error' && outcome === 'task_claimed' && attempt.op !== 'claim') tally(m, 'rule:not-holder');
  if (expectation.kind === 'error' && outcome === 'idempotency_conflict') tally(m, 'rule:key-conflict');
  if (expectation.kind === 'replay') tally(m, 'rule:replay');
  if (expectation.kind === 'ok') tally(m, expectation.success.bump ? 'rule:mutation' : 'rule:no-op');
  if (attempt.op === 'claim' || attempt.op === 'renew') tally(m, 'rule:lease');
}

// ------------------------------------------------------------------------------------------
// Reads and their checks

interface TaskView {
  id: number; title: string; description: string | null; status: string; sequence: number; estimatedMinutes: number;
  remainingMinutes: number; actualMinutes: number; startedAt: string | null; completedAt: string | null; earliestStart: string | null;
  isWaiting: boolean; resourceMode: string; dependencies: { taskId: number; status: string }[]; blocked: boolean;
  blockingReasons: string[]; notes: { text: string; clientName: string; staffName: string; createdUtc: string }[]; etag: string; requiresAttention: boolean;
  externalContext: unknown[]; sourceActivations: unknown[];
  externalChanges: { id: number; kind: string; incomingId: number | null; before: unknown; after: unknown; response: unknown; author: unknown; occurredUtc: string; receivedUtc: string; acknowledgedUtc: string | null }[];
  actualIntervals: { staffMemberId: number; start: string; end: string }[]; assignees: { staffMemberId: number; remainingMinutes: number | null }[];
  humanRequests: (RequestDetail & { stageId: number })[];
  responsesAwaitingEvaluation: { id: number; revision: string }[];
}

function checkTaskView(m: Model, actor: Actor, view: TaskView, inList: boolean, what: string): void {
  const task = m.tasks.get(view.id);
  if (task === undefined) return fail(`${what}: unknown task ${view.id}`);
  const expected: Record<string, unknown> = {
    title: task.title, description: task.description, status: task.status, sequence: task.sequence, estimatedMinutes: task.estimate,
    remainingMinutes: remainingMinutes(m, task), startedAt: task.startedAt, completedAt: task.completedAt,
    earliestStart: task.earliestStart, releaseDate: task.releaseDate, isWaiting: task.isWaiting, resourceMode: task.resourceMode,
    blocked: blockingReasons(m, task).length > 0, blockingReasons: blockingReasons(m, task), etag: etagOf(m, task.id),
  };
  for (const [name, value] of Object.entries(expected)) {
    const actual = (view as unknown as Record<string, unknown>)[name];
    if (JSON.stringify(actual) !== JSON.stringify(value)) fail(`${what}: task ${task.id} ${name} is ${JSON.stringify(actual)}, model ${JSON.stringify(value)}`);
  }
  if (Math.abs(view.actualMinutes - actualMinutes(task)) > 1e-9) fail(`${what}: task ${task.id} actualMinutes ${view.actualMinutes}, model ${actualMinutes(task)}`);
  const deps = view.dependencies.map((d) => `${d.taskId}:${d.status}`).sort();
  const modelDeps = task.deps.map((id) => `${id}:${m.tasks.get(id)?.status ?? '?'}`).sort();
  if (JSON.stringify(deps) !== JSON.stringify(modelDeps)) fail(`${what}: task ${task.id} dependencies ${JSON.stringify(deps)}, model ${JSON.stringify(modelDeps)}`);
  const notes = view.notes.map((n) => `${n.text}/${n.clientName}/${n.staffName}/${n.createdUtc}`);
  const modelNotes = inList ? [] : task.notes.map((n) => `${n.text}/${n.clientName}/${n.staffName}/${new Date(n.created).toISOString()}`);
  if (JSON.stringify(notes) !== JSON.stringify(modelNotes)) fail(`${what}: task ${task.id} notes ${JSON.stringify(notes)}, model ${JSON.stringify(modelNotes)}`);
  const intervals = view.actualIntervals.map((i) => `${i.staffMemberId}/${i.start}/${i.end}`).sort();
  const modelIntervals = [...task.intervals].flatMap(([staff, list]) => list.map(([start, end]) => `${staff}/${local(start)}/${local(end)}`)).sort();
  if (JSON.stringify(intervals) !== JSON.stringify(modelIntervals)) fail(`${what}: task ${task.id} actualIntervals ${JSON.stringify(intervals)}, model ${JSON.stringify(modelIntervals)}`);
  // Each assignee's remaining time: Collaboration shares the task's, Independent has it whole.
  const share = (remaining: number) => (task.resourceMode === 'Collaboration' ? Math.ceil(remaining / task.assignees.length) : remaining);
  const assignees = view.assignees.map((a) => `${a.staffMemberId}/${String(a.remainingMinutes)}`).sort();
  const modelAssignees = task.assignees.map((id) => `${id}/${share(remainingMinutes(m, task))}`).sort();
  if (JSON.stringify(assignees) !== JSON.stringify(modelAssignees)) fail(`${what}: task ${task.id} assignees ${JSON.stringify(assignees)}, model ${JSON.stringify(modelAssignees)}`);
  const readsAssistance = actor.scopes.has('human-requests:read');
  const assists = m.assists.filter((a) => a.taskId === task.id).sort((a, b) => a.stageId - b.stageId);
  const responded = assists.filter((a) => a.responseState === 'responded');
  if (view.requiresAttention !== (responded.length > 0 || m.changes.some((c) => c.taskId === task.id && c.acknowledged === null))) fail(`${what}: task ${task.id} requiresAttention ${String(view.requiresAttention)}`);
  if (view.humanRequests.length !== (readsAssistance ? assists.length : 0)) fail(`${what}: task ${task.id} shows ${view.humanRequests.length} human requests, model ${readsAssistance ? assists.length : 0}`);
  view.humanRequests.forEach((shown, index) => checkRequestDetail(m, assists[index] as Assist, shown, `${what}: task ${task.id} humanRequests[${index}]`));
  // Linked sources: context, changes (ids learnt here), activations; requiresAttention.
  const context = view.externalContext.map((c) => JSON.stringify(c));
  const modelContext = itemsOfTask(m, task.id).map((item) => JSON.stringify({
    providerKey: 'fake', itemId: item.itemId, facts: item.known ?? { title: item.itemId, description: null, businessStatus: null },
    lastSuccessUtc: iso(item.lastSuccess), isAvailable: item.isAvailable,
  }));
  if (JSON.stringify(context) !== JSON.stringify(modelContext)) fail(`${what}: task ${task.id} externalContext ${JSON.stringify(context)}, model ${JSON.stringify(modelContext)}`);
  const changes = m.changes.filter((c) => c.taskId === task.id);
  const shownChanges = [...view.externalChanges].sort((a, b) => a.id - b.id);
  const describeChange = (c: { kind: string; incomingId: number | null; before: unknown; after: unknown; response: unknown; author: unknown; occurredUtc: string; receivedUtc: string; acknowledgedUtc: string | null }) =>
    JSON.stringify([c.kind, c.incomingId, c.before, c.after, c.response, c.author, c.occurredUtc, c.receivedUtc, c.acknowledgedUtc]);
  // Contract 8: without human-requests:read, reply changes show response and author as null.
  const hidden = !actor.scopes.has('human-requests:read');
  const modelChanges = changes.map((c) => describeChange({
    kind: c.kind, incomingId: c.incomingId, before: c.before, after: c.after, response: hidden ? null : c.response, author: hidden ? null : c.author,
    occurredUtc: iso(c.received) as string, receivedUtc: iso(c.received) as string, acknowledgedUtc: iso(c.acknowledged),
  }));
  if (JSON.stringify(shownChanges.map(describeChange)) !== JSON.stringify(modelChanges)) {
    fail(`${what}: task ${task.id} externalChanges ${JSON.stringify(shownChanges.map(describeChange))}, model ${JSON.stringify(modelChanges)}`);
  }
  shownChanges.forEach((shown, index) => {
    const change = changes[index] as ChangeState;
    if (change.id !== null && change.id !== shown.id) fail(`${what}: task ${task.id} change id ${shown.id}, was ${change.id}`);
    change.id = shown.id;
  });
  const activations = view.sourceActivations.map((a) => JSON.stringify(a));
  const modelActivations = m.activations.filter((a) => a.taskId === task.id).map((a) => JSON.stringify({ activatedUtc: iso(a.at), sources: a.sources }));
  if (JSON.stringify([...activations].sort()) !== JSON.stringify([...modelActivations].sort())) fail(`${what}: task ${task.id} sourceActivations ${JSON.stringify(activations)}, model ${JSON.stringify(modelActivations)}`);
  const awaiting = view.responsesAwaitingEvaluation.map((a) => `${a.id}/${a.revision}`).sort();
  const modelAwaiting = readsAssistance ? responded.map((a) => `${a.incomingId}/${a.revision}`).sort() : [];
  if (JSON.stringify(awaiting) !== JSON.stringify(modelAwaiting)) fail(`${what}: task ${task.id} responsesAwaitingEvaluation ${JSON.stringify(awaiting)}, model ${JSON.stringify(modelAwaiting)}`);
}

async function getTask(m: Model, r: Real, actorName: ActorName, taskChoice: number, conditional: 'none' | 'current' | 'stale'): Promise<void> {
  const actor = ACTORS[actorName];
  const id = resolveTask(m, taskChoice, actor);
  const headers: Record<string, string> = {};
  // Conditional reads only where the model knows the version (organisation 1).
  const known = m.tasks.get(id)?.org === 1 && actor.org === 1;
  if (known && conditional === 'current') headers['if-none-match'] = etagOf(m, id);
  if (known && conditional === 'stale') headers['if-none-match'] = `"task-${id}-plan-${Math.max(1, m.version - 1)}"`;
  const sent: Sent = { method: 'GET', url: `/api/v1/tasks/${id}`, headers };
  const what = describeSent(sent, actorName);
  const before = totalChanges(r);
  const response = await send(r, actor, sent);
  if (totalChanges(r) !== before) fail(`${what}: a read changed the database`);
  const outcome = codeOf(response);
  tally(m, `get:${outcome}`);
  let expected = '200';
  if (clientRefusal(m, actorName) !== null) expected = clientRefusal(m, actorName) as string;
  else if (!actor.scopes.has('tasks:read')) expected = 'permission_denied';
  else {
    const task = m.tasks.get(id);
    if (task === undefined || task.org !== actor.org) expected = 'task_not_found';
    else if (!task.assignees.includes(actor.resource)) expected = 'task_not_owned';
    else if (known && conditional === 'current') expected = '304';
  }
  if (outcome !== expected) fail(`${what}\n  -> ${response.status} ${response.body ?? ''}\n  expected ${expected}`);
  if (response.status === 304) {
    if (response.headers['etag'] !== etagOf(m, id) || (response.body !== undefined && response.body !== '')) fail(`${what}: 304 without the ETag or with a body`);
    return;
  }
  if (response.status !== 200) return;
  tally(m, 'rule:task-read');
  const view = json<TaskView>(response);
  if (response.headers['etag'] !== view.etag) fail(`${what}: ETag header ${response.headers['etag'] ?? 'none'} differs from etag ${view.etag}`);
  if (actor.org === 1) checkTaskView(m, actor, view, false, what);
}

async function getList(m: Model, r: Real, actorName: ActorName, which: 'available' | 'waiting'): Promise<void> {
  const actor = ACTORS[actorName];
  const sent: Sent = { method: 'GET', url: `/api/v1/tasks/${which}`, headers: {} };
  const what = describeSent(sent, actorName);
  const before = totalChanges(r);
  const response = await send(r, actor, sent);
  tally(m, `${which}:${codeOf(response)}`);
  if (clientRefusal(m, actorName) !== null) {
    if (codeOf(response) !== clientRefusal(m, actorName)) fail(`${what}: expected ${String(clientRefusal(m, actorName))}, got ${response.status} ${response.body ?? ''}`);
    return;
  }
  if (response.status !== 200) return fail(`${what}\n  -> ${response.status} ${response.body ?? ''}`);
  const views = json<TaskView[]>(response);
  const ids = views.map((v) => v.id);
  if (actor.org !== 1) {
    if (totalChanges(r) !== before) fail(`${what}: a read changed the database`);
    if (ids.some((id) => ORG1_TASKS.includes(id))) fail(`${what}: another organisation's tasks listed: ${JSON.stringify(ids)}`);
    return;
  }
  // The lists refresh linked items first (sourceMaxAgeMs 0: all of them): the offer those of its
  // candidates, leaving out a task whose item failed; the waiting list those of the tasks it
  // lists and those owing a reply to a published, open request of the caller's tasks.
  let expected: number[];
  // Contract 9 and README: items last refreshed more than sourceMaxAgeMs ago (all, at 0) are
  // refreshed; an item refreshed exactly that long ago still counts.
  const stale = (item: ItemState) => item.lastAttempt === null || m.sourceMaxAgeMs === 0 || m.now - item.lastAttempt > m.sourceMaxAgeMs;
  if (which === 'available') {
    const candidates = expectedAvailable(m, actor);
    refreshModel(m, candidates.flatMap((id) => itemsOfTask(m, id)).filter(stale));
    expected = candidates.filter((id) => itemsOfTask(m, id).every((item) => item.isAvailable));
  } else {
    expected = expectedWaiting(m, actor);
    const owing = m.assists.filter((a) => a.published && a.responseState === 'open' && (m.tasks.get(a.taskId) as TaskState).assignees.includes(actor.resource))
      .flatMap((a) => itemsOfTask(m, a.taskId).slice(0, 1));
    refreshModel(m, [...expected.flatMap((id) => itemsOfTask(m, id)), ...owing].filter(stale));
  }
  await learn(m, r);
  checkStore(m, r, what);
  if (JSON.stringify(ids) !== JSON.stringify(expected)) {
    const detail = [...new Set([...ids, ...expected])].map((id) => {
      const task = m.tasks.get(id) as TaskState;
      const lease = liveLease(m, id);
      return `${id}{${task.status} est=${task.estimate} rem=${remainingMinutes(m, task)} reasons=${blockingReasons(m, task).join('+') || '-'} lease=${lease === undefined ? '-' : `${lease.clientId}@${new Date(lease.expires).toISOString()}`}}`;
    }).join(' ');
    fail(`${what} at ${new Date(m.now).toISOString()}\n  -> ${JSON.stringify(ids)}\n  model ${JSON.stringify(expected)}\n  ${detail}`);
  }
  for (const view of views) checkTaskView(m, actor, view, true, what);
  tally(m, 'rule:lists');
  if (which === 'available') {
    for (const id of ids) {
      const lease = liveLease(m, id);
      if (lease !== undefined) fail(`${what}: task ${id} offered under a live lease`);
    }
  }
}

interface IncomingView {
  id: number; title: string; details: string | null; estimatedMinutes: number; priority: string; requester: string; requestedAtUtc: string;
  status: string; suggestedStart: string | null; suggestionReason: string | null; plannedStart: string | null; response: string | null;
  responseState: string; actualStartUtc: string | null; actualEffortMinutes: number | null; etag: string;
}

async function getIncoming(m: Model, r: Real, actorName: ActorName, includeAccepted: boolean): Promise<void> {
  const actor = ACTORS[actorName];
  const sent: Sent = { method: 'GET', url: `/api/v1/incoming${includeAccepted ? '?includeAccepted=true' : ''}`, headers: {} };
  const what = describeSent(sent, actorName);
  const response = await send(r, actor, sent);
  tally(m, `incoming:${codeOf(response)}`);
  if (clientRefusal(m, actorName) !== null) {
    if (codeOf(response) !== clientRefusal(m, actorName)) fail(`${what}: expected ${String(clientRefusal(m, actorName))}, got ${response.status} ${response.body ?? ''}`);
    return;
  }
  if (response.status !== 200) return fail(`${what}\n  -> ${response.status} ${response.body ?? ''}`);
  const items = json<IncomingView[]>(response);
  const mine = actor.resource === 11 && actor.org === 1
    ? m.assists.filter((a) => includeAccepted || a.lifecycle === 'floating')
      .sort((a, b) => PRIORITY[a.priority]! - PRIORITY[b.priority]! || a.requestedAt - b.requestedAt || a.incomingId - b.incomingId)
    : [];
  const shown = items.map((i) => `${i.id}/${i.status}/${i.responseState}/${i.etag}`);
  const model = mine.map((a) => `${a.incomingId}/${a.lifecycle}/${a.responseState}/"${a.revision}"`);
  if (JSON.stringify(shown) !== JSON.stringify(model)) fail(`${what}\n  -> ${JSON.stringify(shown)}\n  model ${JSON.stringify(model)}`);
  items.forEach((item, index) => {
    const a = mine[index] as Assist;
    const expected: Record<string, unknown> = {
      title: a.title, details: a.details, estimatedMinutes: a.estimate, priority: a.priority, requester: ACTORS[a.requester].staffName,
      requestedAtUtc: iso(a.requestedAt), plannedStart: a.plannedStart, actualStartUtc: iso(a.actualStart), actualEffortMinutes: null,
      ...(a.responseUnstated ? {} : { response: a.response }),
      // README: suggestions are given for floating items only.
      ...(a.lifecycle === 'floating' ? {} : { suggestedStart: null, suggestionReason: null }),
    };
    for (const [name, value] of Object.entries(expected)) {
      const actual = (item as unknown as Record<string, unknown>)[name];
      if (JSON.stringify(actual) !== JSON.stringify(value)) fail(`${what}: item ${item.id} ${name} is ${JSON.stringify(actual)}, model ${JSON.stringify(value)}`);
    }
  });
}

async function getHumanRequest(m: Model, r: Real, actorName: ActorName, which: number): Promise<void> {
  const actor = ACTORS[actorName];
  const item = m.assists.length === 0 || which >= 90 ? undefined : m.assists[which % m.assists.length];
  const stageId = item?.stageId ?? 3;
  const sent: Sent = { method: 'GET', url: `/api/v1/human-requests/${stageId}`, headers: {} };
  const what = describeSent(sent, actorName);
  const response = await send(r, actor, sent);
  const outcome = codeOf(response);
  tally(m, `request:${outcome}`);
  let expected = '200';
  if (clientRefusal(m, actorName) !== null) expected = clientRefusal(m, actorName) as string;
  else if (!actor.scopes.has('human-requests:read')) expected = 'permission_denied';
  else if (item === undefined || actor.org !== 1) expected = 'request_not_found';
  else if (!(m.tasks.get(item.taskId) as TaskState).assignees.includes(actor.resource)) expected = 'task_not_owned';
  if (outcome !== expected) fail(`${what}\n  -> ${response.status} ${response.body ?? ''}\n  expected ${expected}`);
  if (response.status !== 200 || item === undefined) return;
  checkRequestDetail(m, item, json<RequestDetail>(response), what);
}

/** Everything the two workers can see, at the end of a run. */
async function observeAll(m: Model, r: Real): Promise<void> {
  for (const actor of ['ada', 'bob'] as const) {
    await getList(m, r, actor, 'available');
    await getList(m, r, actor, 'waiting');
    for (const id of ORG1_TASKS) if ((m.tasks.get(id) as TaskState).assignees.includes(ACTORS[actor].resource)) await getTask(m, r, actor, id, 'none');
  }
  await getIncoming(m, r, 'grace', true);
}

// ------------------------------------------------------------------------------------------
// Commands

type Cmd = fc.AsyncCommand<Model, Real>;

class WriteCommand implements Cmd {
  constructor(readonly params: WriteParams) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    await performWrite(m, r, materialise(m, this.params));
  }
  toString = (): string => `write(${JSON.stringify(this.params)})`;
}

/** Sends an earlier keyed request again: the same, reordered, changed, or with another If-Match. */
class ResendCommand implements Cmd {
  constructor(readonly index: number, readonly variant: 'same' | 'reordered' | 'changed' | 'originalIfMatch' | 'noIfMatch' | 'malformedIfMatch' | 'otherClient'
    | 'decimals' | 'escapes' | 'arraysReversed') {}
  check = (m: Readonly<Model>): boolean => m.sent.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const original = m.sent[this.index % m.sent.length] as Attempt;
    const current = materialiseIfMatch(m, original);
    let attempt: Attempt = { ...original, ifMatch: current };
    if (this.variant === 'reordered') attempt = { ...attempt, reorder: !original.reorder };
    if (this.variant === 'originalIfMatch') attempt = { ...original };
    if (this.variant === 'noIfMatch') attempt = { ...attempt, ifMatch: undefined };
    if (this.variant === 'malformedIfMatch') attempt = { ...attempt, ifMatch: '"task-x"' };
    if (this.variant === 'otherClient') attempt = { ...attempt, actor: original.actor === 'ada' ? 'twin' : original.actor === 'twin' ? 'ada' : original.actor };
    if (this.variant === 'changed') attempt = { ...attempt, ...changedBody(original) };
    if (this.variant === 'decimals' || this.variant === 'escapes') attempt = { ...attempt, spelling: this.variant };
    if (this.variant === 'arraysReversed') attempt = { ...attempt, body: arraysReversed(original.body) };
    // The claim header a write sends is the one valid now (a replay must not look at it anyway).
    if (this.variant !== 'originalIfMatch' && OPS[attempt.op].claimHeader && original.claimHeader !== undefined) {
      attempt = { ...attempt, claimHeader: tokenFor(m, ACTORS[attempt.actor], attempt.target, 'auto') ?? original.claimHeader };
    }
    await performWrite(m, r, attempt);
  }
  toString = (): string => `resend(${this.index}, ${this.variant})`;
}

/** The same body with every array in reverse order (another request: README, array order counts). */
function arraysReversed(value: unknown): unknown {
  if (Array.isArray(value)) return [...value].reverse().map(arraysReversed);
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, arraysReversed(v)]));
  return value;
}

function materialiseIfMatch(m: Model, attempt: Attempt): string {
  if (!OPS[attempt.op].incoming) return etagOf(m, attempt.target);
  return `"${m.assists.find((a) => a.incomingId === attempt.target)?.revision ?? randomUUID()}"`;
}

function changedBody(attempt: Attempt): Partial<Attempt> {
  const body = attempt.body as Record<string, unknown>;
  switch (attempt.op) {
    case 'patch': return { body: { ...body, sequence: typeof body['sequence'] === 'number' ? body['sequence'] + 1 : 7 } };
    case 'note': return { body: { text: `${String(body['text'])} (again)` } };
    case 'claim': return { target: attempt.target === 1 ? 3 : 1 };
    case 'renew': return { op: 'release' };
    case 'release': return { op: 'renew' };
    case 'assist': return { body: { ...body, title: 'Another question' } };
    case 'incPlan': return { body: { plannedStart: '2026-11-19T09:00:00' } };
    case 'incStart': return { op: 'incComplete', body: {}, noBody: false };
    default: return { target: attempt.target + 1 };
  }
}

/**
 * Two writes sent in the same turn of the event loop (they share a group commit). The answers
 * must be those of the two writes applied one after the other, in one order or the other
 * (contract 3 and the README: of two writes with the same ETag one succeeds and the other gets
 * 412; a key is applied once). `duplicate` sends the same request twice, key included.
 */
class RaceCommand implements Cmd {
  constructor(readonly first: WriteParams, readonly second: WriteParams, readonly duplicate: boolean) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    const a = materialise(m, this.first);
    const b = this.duplicate ? { ...a } : materialise(m, this.second);
    // A claim of linked work refreshes its items between its checks and its write, so in a race
    // it is not one step: such races are left out (claims of linked work are tested one at a time).
    if ([a, b].some((x) => x.op === 'claim' && itemsOfTask(m, x.target).length > 0)) return;
    const before = digest(r.db, m.now);
    const [ra, rb] = await Promise.all([send(r, ACTORS[a.actor], sentOf(a)), send(r, ACTORS[b.actor], sentOf(b))]);
    await r.service.idle();
    const changed = changedTables(before, digest(r.db, m.now));
    const failures: string[] = [];
    let settled: Model | undefined;
    for (const [x, rx, y, ry] of [[a, ra, b, rb], [b, rb, a, ra]] as const) {
      const copy = structuredClone(m);
      try {
        judge(copy, x, predict(copy, x), rx, this.duplicate);
        judge(copy, y, predict(copy, y), ry, this.duplicate);
        settled = copy;
        break;
      } catch (error) {
        failures.push(error instanceof Error ? error.message : String(error));
      }
    }
    if (settled === undefined) fail(`race: no order explains both answers\n${failures.join('\n--- or ---\n')}`);
    Object.assign(m, settled);
    for (const [attempt, response] of [[a, ra], [b, rb]] as const) {
      tally(m, `race:${attempt.op}:${codeOf(response)}`);
      if (attempt.key !== undefined && m.sent.length < 200) m.sent.push(attempt);
    }
    // A refused claim may still have refreshed its linked items (contract 2 and 9).
    const claimed = a.op === 'claim' || b.op === 'claim';
    const unexplained = changed.filter((name) => !(claimed && SOURCE_TABLES.includes(name)));
    if (ra.status >= 400 && rb.status >= 400 && unexplained.length > 0) fail(`race: both refused, yet ${unexplained.join(', ')} changed`);
    await learn(m, r);
    checkStore(m, r, 'race');
    tally(m, 'rule:race');
  }
  toString = (): string => `race(${JSON.stringify(this.first)}, ${JSON.stringify(this.second)}, ${String(this.duplicate)})`;
}

/**
 * The assistance loop in one step, so evaluations are reached often: Grace completes an open
 * item (with an answer or none) and the requesting worker evaluates it at once.
 */
class AnswerAndEvaluate implements Cmd {
  constructor(readonly which: number, readonly answer: boolean, readonly decision: 'resolve' | 'keepwaiting' | 'followup', readonly evaluator: ActorName) {}
  check = (m: Readonly<Model>): boolean => m.assists.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    const open = m.assists.filter((a) => a.lifecycle !== 'completed');
    const item = open.length === 0 ? m.assists[this.which % m.assists.length] as Assist : open[this.which % open.length] as Assist;
    await performWrite(m, r, {
      op: 'incComplete', actor: 'grace', target: item.incomingId, body: this.answer ? { response: 'Use headline B' } : {}, noBody: false,
      key: `u${(freshKeys += 1)}`, ifMatch: `"${item.revision}"`, claimHeader: undefined, reorder: false,
    });
    const evaluator = ACTORS[this.evaluator];
    const body: Record<string, unknown> = { decision: this.decision, incomingId: item.incomingId, revision: item.revision };
    if (this.decision === 'followup') body['message'] = 'And the subhead?';
    await performWrite(m, r, {
      op: 'evaluate', actor: this.evaluator, target: item.taskId, body, noBody: false, key: `u${(freshKeys += 1)}`,
      ifMatch: etagOf(m, item.taskId), claimHeader: tokenFor(m, evaluator, item.taskId, 'auto'), reorder: false,
    });
  }
  toString = (): string => `answerAndEvaluate(${this.which}, ${String(this.answer)}, ${this.decision}, ${this.evaluator})`;
}

/** The linked source changes its facts, or starts or stops failing (no request is made). */
class SourceCommand implements Cmd {
  constructor(readonly itemId: string, readonly facts: number, readonly failing: boolean) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    const current = m.truth[this.itemId] as SourceTruth;
    current.facts = FACT_VARIANTS[this.facts % FACT_VARIANTS.length] as Facts;
    current.failing = this.failing;
    r.truth[this.itemId] = structuredClone(current);
    tally(m, this.failing ? 'source:failing' : 'source:facts');
  }
  toString = (): string => `source(${this.itemId}, facts ${this.facts}, ${this.failing ? 'failing' : 'answering'})`;
}

/** Ada asks Grace from a linked task and publishes the request to the task's item. */
class AskPublished implements Cmd {
  constructor(readonly taskId: 1 | 3, readonly blocking: boolean) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    await performWrite(m, r, {
      op: 'assist', actor: 'ada', target: this.taskId, noBody: false, key: `u${(freshKeys += 1)}`, ifMatch: etagOf(m, this.taskId),
      claimHeader: tokenFor(m, ACTORS.ada, this.taskId, 'auto'), reorder: false,
      body: { humanAssigneeId: 11, title: `Ask the tracker #${(freshKeys += 1)}`, estimatedMinutes: 10, isBlocking: this.blocking, publishExternally: true },
    });
  }
  toString = (): string => `askPublished(${this.taskId}, ${this.blocking ? 'blocking' : 'not blocking'})`;
}

/**
 * Someone answers a published request on the linked item (or writes a reply that answers no
 * request the service published): nothing is recorded until a refresh reads it.
 */
class SourceReplyCommand implements Cmd {
  constructor(readonly which: number, readonly stray: boolean) {}
  check = (m: Readonly<Model>): boolean => m.assists.some((a) => a.refs.length > 0);
  async run(m: Model, r: Real): Promise<void> {
    const published = m.assists.filter((a) => a.refs.length > 0);
    const request = published[this.which % published.length] as Assist;
    const itemId = (itemsOfTask(m, request.taskId)[0] as ItemState).itemId;
    const reply = { id: `reply-${(freshKeys += 1)}`, inReplyTo: this.stray ? 'ref-of-nothing' : request.refs.at(-1) as string, author: 'Tracker user', text: `Answer ${freshKeys}` };
    (m.truth[itemId] as SourceTruth).replies.push(reply);
    r.truth[itemId] = structuredClone(m.truth[itemId] as SourceTruth);
    tally(m, this.stray ? 'source:stray-reply' : 'source:reply');
  }
  toString = (): string => `sourceReply(${this.which}, ${this.stray ? 'stray' : 'to the request'})`;
}

/**
 * The linked source moves under an agent about to claim: Ada reads her offer (which refreshes the
 * items of the tasks offered), the source changes or fails, and Ada claims the linked task with
 * the ETag she holds (contract 2: 409 source_context_changed or 503 source_unavailable, no lease).
 */
class ClaimAfterSourceMoves implements Cmd {
  constructor(readonly taskId: 1 | 3, readonly facts: number, readonly failing: boolean) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    await getList(m, r, 'ada', 'available');
    await new SourceCommand(`T-${this.taskId}`, this.facts, this.failing).run(m, r);
    await performWrite(m, r, {
      op: 'claim', actor: 'ada', target: this.taskId, body: {}, noBody: true, key: `u${(freshKeys += 1)}`,
      ifMatch: etagOf(m, this.taskId), claimHeader: undefined, reorder: false,
    });
  }
  toString = (): string => `claimAfterSourceMoves(${this.taskId}, facts ${this.facts}, ${this.failing ? 'failing' : 'answering'})`;
}

/**
 * Acknowledges a recorded source change (a read first learns the event ids): an open one, one
 * already acknowledged (409), or one of the other linked task (422).
 */
class AcknowledgeCommand implements Cmd {
  constructor(readonly actor: ActorName, readonly which: number, readonly variant: 'open' | 'again' | 'otherTask') {}
  check = (m: Readonly<Model>): boolean => m.changes.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    for (const id of new Set(m.changes.map((c) => c.taskId))) await getTask(m, r, 'ada', id, 'none');
    const pool = m.changes.filter((c) => (this.variant === 'again' ? c.acknowledged !== null : c.acknowledged === null));
    const change = (pool.length > 0 ? pool : m.changes)[this.which % (pool.length > 0 ? pool.length : m.changes.length)] as ChangeState;
    const target = this.variant === 'otherTask' ? (change.taskId === 1 ? 3 : 1) : change.taskId;
    const actor = ACTORS[this.actor];
    tally(m, `acknowledge:${this.variant}`);
    await performWrite(m, r, {
      op: 'evaluate', actor: this.actor, target, body: { decision: 'acknowledge', eventId: change.id }, noBody: false, key: `u${(freshKeys += 1)}`,
      ifMatch: etagOf(m, target), claimHeader: tokenFor(m, actor, target, 'auto'), reorder: false,
    });
  }
  toString = (): string => `acknowledge(${this.actor}, ${this.which}, ${this.variant})`;
}

/**
 * A write and a read of its task sent in the same turn (README: reads wait for an open write
 * batch and see only committed rows). The read must show the task as it was before the write or
 * as the write left it, never anything else; its ETag names that state's version.
 */
class WriteWhileReading implements Cmd {
  constructor(readonly write: WriteParams, readonly reader: ActorName) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    const attempt = materialise(m, this.write);
    if (attempt.op === 'claim' && itemsOfTask(m, attempt.target).length > 0) return;
    const reader = ACTORS[m.revoked.includes(this.reader) ? 'ada' : this.reader];
    const readable = attempt.op !== 'incStart' && attempt.op !== 'incPlan' && attempt.op !== 'incComplete' && attempt.op !== 'incReassign'
      && m.tasks.get(attempt.target)?.org === 1 && (m.tasks.get(attempt.target) as TaskState).assignees.includes(reader.resource);
    const target = readable ? attempt.target : resolveTask(m, -100, reader);
    const [written, read] = await Promise.all([
      send(r, ACTORS[attempt.actor], sentOf(attempt)),
      send(r, reader, { method: 'GET', url: `/api/v1/tasks/${target}`, headers: {} }),
    ]);
    await r.service.idle();
    const before = structuredClone(m);
    judge(m, attempt, predict(m, attempt), written);
    tally(m, `concurrent-read:${attempt.op}:${codeOf(written)}`);
    await learn(m, r);
    if (read.status !== 200) fail(`GET /tasks/${target} beside a write: ${read.status} ${read.body ?? ''}`);
    const view = json<TaskView>(read);
    const failures: string[] = [];
    for (const state of [m, before]) {
      try {
        checkTaskView(state, reader, view, false, `GET /tasks/${target} as ${reader.name}, sent with ${describeSent(sentOf(attempt), attempt.actor)}`);
        checkStore(m, r, 'write while reading');
        tally(m, 'rule:read-beside-write');
        return;
      } catch (error) {
        failures.push(error instanceof Error ? error.message : String(error));
      }
    }
    fail(`the read beside a write shows neither state:\n${failures.join('\n--- or ---\n')}`);
  }
  toString = (): string => `writeWhileReading(${JSON.stringify(this.write)}, ${this.reader})`;
}

/**
 * An administrator revokes Ada's second client (README: its live leases are released, and each a
 * change of the task; the credential fails on its next request, replays included).
 */
class RevokeTwin implements Cmd {
  check = (m: Readonly<Model>): boolean => !m.revoked.includes('twin');
  async run(m: Model, r: Real): Promise<void> {
    const result = adminClients(r.db, { clock: { now: () => m.now } }).revoke(ACTORS.twin.clientId);
    const live = m.leases.filter((l) => l.clientId === ACTORS.twin.clientId && !l.released && l.expires > m.now);
    if (result.releasedLeases !== live.length) fail(`revoke released ${result.releasedLeases} leases, model ${live.length}`);
    for (const lease of live) lease.released = true;
    if (live.length > 0) m.version += 1;
    m.revoked.push('twin');
    tally(m, 'revoke');
    checkStore(m, r, 'revoke ada-twin');
  }
  toString = (): string => 'revokeTwin()';
}

/**
 * The README's write flow: claim offered work, write under the lease (X-Task-Claim), let time
 * pass (sometimes past the 15 minutes), renew, and release. Every step is checked as any write.
 */
class WriteFlow implements Cmd {
  constructor(readonly actor: 'ada' | 'twin' | 'bob', readonly pick: number, readonly minutes: number, readonly release: boolean) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    const actor = ACTORS[this.actor];
    if (m.revoked.includes(this.actor)) return;
    const offered = expectedAvailable(m, actor).filter((id) => itemsOfTask(m, id).length === 0);
    const taskId = offered.length === 0 ? resolveTask(m, -100 - this.pick, actor) : offered[this.pick % offered.length] as number;
    const write = (op: Op, body: unknown): Attempt => ({
      op, actor: this.actor, target: taskId, body, noBody: op === 'claim', key: `u${(freshKeys += 1)}`, ifMatch: etagOf(m, taskId),
      claimHeader: OPS[op].claimHeader ? tokenFor(m, actor, taskId, 'auto') : undefined, reorder: false,
    });
    await performWrite(m, r, write('claim', {}));
    const lease = liveLease(m, taskId);
    if (lease === undefined || lease.clientId !== actor.clientId) return;
    await performWrite(m, r, write('patch', { status: 'InProgress' }));
    await performWrite(m, r, write('note', { text: 'Under the lease' }));
    await new AdvanceClock(this.minutes * MINUTE).run(m, r);
    await performWrite(m, r, write('renew', { token: lease.token }));
    if (this.release) await performWrite(m, r, write('release', { token: lease.token }));
  }
  toString = (): string => `writeFlow(${this.actor}, ${this.pick}, ${this.minutes} min, ${this.release ? 'release' : 'keep'})`;
}

class AdvanceClock implements Cmd {
  constructor(readonly ms: number) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    m.now += this.ms;
    r.clock.set(m.now);
    tally(m, this.ms >= DAY ? 'clock:day' : 'clock');
    checkStore(m, r, `advance ${this.ms} ms`);
  }
  toString = (): string => `advance(${this.ms / MINUTE} min)`;
}

/** The first instant at which `from` has `minutes` whole working minutes behind it. */
function whenWorked(kind: CalendarKind, from: number, minutes: number): number {
  let low = from;
  let high = from + 30 * DAY;
  while (high - low > 1) {
    const mid = Math.floor((low + high) / 2);
    if (Math.floor(workingMinutes(kind, from, mid)) >= minutes) high = mid;
    else low = mid;
  }
  return high;
}

/** Instants after now at which time alone changes what the service must answer. */
function boundaries(m: Model): number[] {
  const found: number[] = [];
  for (const lease of m.leases) if (!lease.released && lease.expires > m.now) found.push(lease.expires);
  for (const task of m.tasks.values()) {
    for (const wall of [task.earliestStart, task.releaseDate]) if (wall !== null && at(wall) > m.now) found.push(at(wall));
    if (task.status !== 'Done' && task.startedAt !== null && remainingMinutes(m, task) > 0) found.push(whenWorked(m.calendar, at(task.startedAt), task.estimate));
  }
  for (const item of m.assists) if (item.lifecycle === 'inprogress' && item.actualStart !== null) found.push(whenWorked(m.calendar, item.actualStart, item.estimate));
  // The end of a refresh's freshness window (exactly sourceMaxAgeMs old still counts).
  for (const item of m.items) if (item.lastAttempt !== null) found.push(item.lastAttempt + m.sourceMaxAgeMs, item.lastAttempt + m.sourceMaxAgeMs + 1);
  // The clock changes (01:00 UTC on the last Sundays of March and October).
  const year = new Date(m.now).getUTCFullYear();
  found.push(lastSunday(year, 2) + 3_600_000, lastSunday(year, 9) + 3_600_000, lastSunday(year, 9) + 2 * 3_600_000);
  const day = Math.floor(m.now / DAY) * DAY;
  found.push(day + 17 * 3_600_000, day + DAY + 9 * 3_600_000);
  return found.filter((instant) => instant > m.now && instant < m.now + 2 * DAY).sort((a, b) => a - b);
}

/** Moves the clock to just before, at or just after such an instant (a lease expiry, say). */
class JumpToBoundary implements Cmd {
  constructor(readonly index: number, readonly offset: number) {}
  check = (): boolean => true;
  async run(m: Model, r: Real): Promise<void> {
    const all = boundaries(m);
    const target = all.length === 0 ? m.now : (all[this.index % all.length] as number) + this.offset;
    if (target <= m.now) return;
    m.now = target;
    r.clock.set(m.now);
    tally(m, 'clock:boundary');
    checkStore(m, r, `jump to ${new Date(m.now).toISOString()}`);
  }
  toString = (): string => `jump(${this.index}, ${this.offset} ms)`;
}

class GetTaskCommand implements Cmd {
  constructor(readonly actor: ActorName, readonly task: number, readonly conditional: 'none' | 'current' | 'stale') {}
  check = (): boolean => true;
  run = (m: Model, r: Real): Promise<void> => getTask(m, r, this.actor, this.task, this.conditional);
  toString = (): string => `get(${this.actor}, ${this.task}, ${this.conditional})`;
}

class ListCommand implements Cmd {
  constructor(readonly actor: ActorName, readonly which: 'available' | 'waiting') {}
  check = (): boolean => true;
  run = (m: Model, r: Real): Promise<void> => getList(m, r, this.actor, this.which);
  toString = (): string => `list(${this.actor}, ${this.which})`;
}

class IncomingListCommand implements Cmd {
  constructor(readonly actor: ActorName, readonly includeAccepted: boolean) {}
  check = (): boolean => true;
  run = (m: Model, r: Real): Promise<void> => getIncoming(m, r, this.actor, this.includeAccepted);
  toString = (): string => `incoming(${this.actor}, ${String(this.includeAccepted)})`;
}

class HumanRequestCommand implements Cmd {
  constructor(readonly actor: ActorName, readonly which: number) {}
  check = (): boolean => true;
  run = (m: Model, r: Real): Promise<void> => getHumanRequest(m, r, this.actor, this.which);
  toString = (): string => `humanRequest(${this.actor}, ${this.which})`;
}

// ------------------------------------------------------------------------------------------
// Arbitraries

const writerArb: fc.Arbitrary<ActorName> = fc.oneof(
  { weight: 18, arbitrary: fc.constantFrom<ActorName>('ada', 'ada', 'ada', 'ada', 'twin', 'bob', 'bob') },
  { weight: 2, arbitrary: fc.constantFrom<ActorName>('reader', 'gus', 'reader', 'gus', 'directory', 'orphan') },
);
/** Mostly a task of the actor's own (-100 - i), else any id, a stage id (-1) or another organisation's (90). */
const taskArb: fc.Arbitrary<number> = fc.oneof(
  { weight: 8, arbitrary: fc.nat(11).map((i) => -100 - i) },
  { weight: 2, arbitrary: fc.constant(-2) },
  // The two tasks with linked items.
  { weight: 2, arbitrary: fc.constantFrom(1, 3) },
  { weight: 2, arbitrary: fc.constantFrom(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, -1, 90) },
);
const leasedTaskArb: fc.Arbitrary<number> = fc.oneof({ weight: 3, arbitrary: fc.constant(-2) }, { weight: 1, arbitrary: taskArb });
const commonArb = (actor: fc.Arbitrary<ActorName> = writerArb): fc.Arbitrary<Common> => fc.record({
  actor,
  key: fc.oneof(
    { weight: 12, arbitrary: fc.constantFrom<KeyChoice>('fresh', 'fresh', 'fresh', 'k1', 'k1', 'K1', 'k2', 'k2', 'k3', 'k4') },
    { weight: 2, arbitrary: fc.constant<KeyChoice>('none') },
    { weight: 1, arbitrary: fc.constant<KeyChoice>('bad') },
  ),
  ifMatch: fc.oneof(
    { weight: 16, arbitrary: fc.constant<IfMatchChoice>('current') },
    { weight: 4, arbitrary: fc.constantFrom<IfMatchChoice>('stale', 'stale', 'missing', 'malformed', 'otherTask') },
  ),
  claim: fc.oneof(
    { weight: 16, arbitrary: fc.constant<ClaimChoice>('auto') },
    { weight: 4, arbitrary: fc.constantFrom<ClaimChoice>('none', 'holder', 'holder', 'ended', 'zero', 'upper') },
  ),
  reorder: fc.boolean(),
  timeForm: fc.constantFrom<TimeSpec['form']>('wall', 'wall', 'z', 'arith'),
});
const timeSpecArb = (minutes: readonly number[]): fc.Arbitrary<TimeSpec> =>
  fc.record({ minutes: fc.constantFrom(...minutes), form: fc.constantFrom<TimeSpec['form']>('wall', 'wall', 'z', 'arith') });
const intervalsArb = fc.constantFrom<IntervalsChoice>('one', 'one', 'two', 'empty', 'overlap', 'future', 'reversed', 'foreign', 'zeroStaff');

/** PATCH members: mostly valid, some near-valid (400 or 422 or a conflict). */
const memberArb: fc.Arbitrary<PatchMember> = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom<PatchMember>(['title', 'New title'], ['description', 'Changed'], ['description', null]) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 100 }).map((n): PatchMember => ['sequence', n]) },
  { weight: 6, arbitrary: fc.constantFrom<PatchMember>(['status', 'InProgress'], ['status', 'InProgress'], ['status', 'Done'], ['status', 'Done'], ['status', 'Ready']) },
  { weight: 3, arbitrary: fc.boolean().map((b): PatchMember => ['isWaiting', b]) },
  { weight: 2, arbitrary: fc.constantFrom(0, 1, 15, 30, 60, 240).map((n): PatchMember => ['estimatedMinutes', n]) },
  { weight: 1, arbitrary: fc.constantFrom(0, 10, 45).map((n): PatchMember => ['remainingMinutes', n]) },
  // 0 stands for the task itself, -1 for the newest assistance stage.
  { weight: 3, arbitrary: fc.constantFrom<number[]>([], [1], [3], [7], [8], [1, 3], [2], [13], [4]).map((ids): PatchMember => ['dependencyIds', ids]) },
  { weight: 1, arbitrary: fc.constantFrom<number[]>([0], [1, 1], [90], [999], [-1]).map((ids): PatchMember => ['dependencyIds', ids]) },
  { weight: 2, arbitrary: fc.oneof(fc.constant<PatchMember>(['startedAt', 'null']), timeSpecArb([-90, -30, -30, -1, 30]).map((t): PatchMember => ['startedAt', t])) },
  { weight: 1, arbitrary: fc.oneof(fc.constant<PatchMember>(['earliestStart', 'null']), timeSpecArb([-5, 12, 45]).map((t): PatchMember => ['earliestStart', t])) },
  { weight: 1, arbitrary: fc.oneof(fc.constant<PatchMember>(['releaseDate', 'null']), timeSpecArb([-5, 12, 45]).map((t): PatchMember => ['releaseDate', t])) },
  { weight: 1, arbitrary: fc.constantFrom<PatchMember>(['resourceMode', 'Independent'], ['resourceMode', 'Collaboration']) },
  { weight: 1, arbitrary: intervalsArb.map((choice): PatchMember => ['actualIntervals', choice]) },
  { weight: 1, arbitrary: fc.constantFrom<PatchMember>(['title', '   '], ['title', ''], ['sequence', 100_001], ['project', 5], ['status', 'Paused']) },
);

const writeArb: fc.Arbitrary<WriteParams> = fc.oneof(
  // Writes by a client that does not hold the live lease: with the holder's token, or none.
  { weight: 4, arbitrary: fc.record({
    common: commonArb(fc.constantFrom<ActorName>('ada', 'twin', 'twin', 'bob')), claim: fc.constantFrom<ClaimChoice>('holder', 'holder', 'none', 'ended', 'upper'),
    op: fc.constantFrom<'patch' | 'note' | 'assist' | 'renew' | 'release' | 'claim'>('patch', 'patch', 'note', 'assist', 'renew', 'release', 'claim'),
  }).map(({ common, claim, op }): WriteParams => {
    const base = { ...common, claim, task: -3 };
    if (op === 'patch') return { ...base, op, members: [['sequence', 9]] };
    if (op === 'note') return { ...base, op, text: 'Not mine' };
    if (op === 'assist') return { ...base, op, human: 11, title: 'Whose lease?', estimate: 15, blocking: false, priority: null, publish: false, details: undefined, kind: undefined };
    if (op === 'claim') return { ...base, op, body: 'none' };
    return { ...base, op, token: 'holder' };
  }) },
  { weight: 8, arbitrary: fc.record({ common: commonArb(), task: taskArb, members: fc.array(memberArb, { maxLength: 3 }) })
    .map(({ common, task, members }): WriteParams => ({ ...common, op: 'patch', task, members })) },
  { weight: 2, arbitrary: fc.record({ common: commonArb(), task: taskArb, intervals: intervalsArb })
    .map(({ common, task, intervals }): WriteParams => ({ ...common, op: 'effort', task, intervals })) },
  { weight: 3, arbitrary: fc.record({ common: commonArb(), task: taskArb, text: fc.constantFrom('Draft written', 'Review next', '   ', '') })
    .map(({ common, task, text }): WriteParams => ({ ...common, op: 'note', task, text })) },
  { weight: 7, arbitrary: fc.record({ common: commonArb(), task: taskArb, body: fc.constantFrom<'none' | 'empty' | 'member'>('none', 'none', 'none', 'empty', 'empty', 'member') })
    .map(({ common, task, body }): WriteParams => ({ ...common, op: 'claim', task, body })) },
  { weight: 6, arbitrary: fc.record({
    common: commonArb(), task: leasedTaskArb, op: fc.constantFrom<'renew' | 'release'>('renew', 'release'),
    token: fc.constantFrom<TokenChoice>('own', 'own', 'own', 'own', 'holder', 'ended', 'otherTask', 'random', 'zero', 'missing', 'malformed', 'upper'),
  }).map(({ common, task, op, token }): WriteParams => ({ ...common, op, task, token })) },
  { weight: 5, arbitrary: fc.record({
    common: commonArb(), task: taskArb, human: fc.constantFrom(11, 11, 11, 11, 11, 11, 11, 11, 13, 10, 21),
    title: fc.constantFrom('Which headline?', 'Which headline?', 'Which headline?', 'Which headline?', 'Which headline?', '  ', ''), estimate: fc.constantFrom(15, 15, 15, 15, 15, 0),
    blocking: fc.constantFrom<boolean | null>(null, true, false, false), priority: fc.constantFrom<string | null>(null, null, 'critical', 'low'),
    publish: fc.constantFrom(false, false, false, false, true, true),
    details: fc.constantFrom<string | null | undefined>(undefined, undefined, null, '', ' \u3000', 'Context for the question'),
    kind: fc.constantFrom<string | undefined>(undefined, undefined, 'Review', 'Approval', 'Action'),
  }).map((a): WriteParams => ({
    ...a.common, op: 'assist', task: a.task, human: a.human, title: a.title, estimate: a.estimate, blocking: a.blocking, priority: a.priority,
    publish: a.publish, details: a.details, kind: a.kind,
  })) },
  { weight: 4, arbitrary: fc.record({
    common: commonArb(fc.constantFrom<ActorName>('ada', 'ada', 'ada', 'twin', 'bob', 'reader')), which: fc.oneof({ weight: 3, arbitrary: fc.constant(-1) }, { weight: 2, arbitrary: fc.nat(8) }), onOtherTask: fc.constantFrom(false, false, false, false, false, true),
    decision: fc.constantFrom<'resolve' | 'keepwaiting' | 'followup' | 'acknowledge'>('resolve', 'resolve', 'keepwaiting', 'followup', 'acknowledge'),
    staleRevision: fc.constantFrom(false, false, false, true), message: fc.constantFrom('And the subhead?', '  '),
  }).map(({ common, which, onOtherTask, decision, staleRevision, message }): WriteParams => ({ ...common, op: 'evaluate', which, onOtherTask, decision, staleRevision, message })) },
  { weight: 5, arbitrary: fc.record({
    common: commonArb(fc.constantFrom<ActorName>('grace', 'grace', 'grace', 'grace', 'ada')),
    op: fc.constantFrom<'incStart' | 'incPlan' | 'incComplete' | 'incReassign'>('incStart', 'incPlan', 'incComplete', 'incComplete', 'incReassign'),
    which: fc.oneof({ weight: 9, arbitrary: fc.nat(8) }, { weight: 1, arbitrary: fc.constant(99) }), variant: fc.nat(5),
  }).map(({ common, op, which, variant }): WriteParams => ({ ...common, op, which, variant })) },
);

const raceArb: fc.Arbitrary<WriteParams> = writeArb;

const readerArb = fc.constantFrom<ActorName>('ada', 'ada', 'twin', 'bob', 'reader', 'gus', 'grace', 'directory', 'orphan');

function commandsArb(maxCommands: number): fc.Arbitrary<Iterable<Cmd>> {
  const arbitraries: fc.Arbitrary<Cmd>[] = [
    writeArb.map((p) => new WriteCommand(p)),
    writeArb.map((p) => new WriteCommand(p)),
    writeArb.map((p) => new WriteCommand(p)),
    writeArb.map((p) => new WriteCommand(p)),
    fc.tuple(raceArb, raceArb, fc.constantFrom(false, false, true)).map(([x, y, duplicate]) => new RaceCommand(x, y, duplicate)),
    fc.tuple(writeArb, fc.constantFrom<ActorName>('ada', 'ada', 'twin', 'bob')).map(([write, reader]) => new WriteWhileReading(write, reader)),
    fc.tuple(fc.nat(200), fc.constantFrom('same', 'same', 'reordered', 'changed', 'originalIfMatch', 'noIfMatch', 'malformedIfMatch', 'otherClient', 'decimals', 'escapes', 'arraysReversed') as fc.Arbitrary<ResendCommand['variant']>)
      .map(([index, variant]) => new ResendCommand(index, variant)),
    fc.oneof(
      { weight: 6, arbitrary: fc.integer({ min: 0, max: 20 * MINUTE }) },
      { weight: 3, arbitrary: fc.constantFrom(1, 5, 14, 15, 16).map((minutes) => minutes * MINUTE) },
      { weight: 1, arbitrary: fc.constant(DAY + MINUTE) },
    ).map((ms) => new AdvanceClock(ms)),
    fc.tuple(fc.nat(3), fc.constantFrom(-1000, -1, 0, 0, 1, 999, 30_000)).map(([index, offset]) => new JumpToBoundary(index, offset)),
    fc.tuple(readerArb, taskArb, fc.constantFrom<'none' | 'current' | 'stale'>('none', 'none', 'current', 'stale')).map(([a, task, c]) => new GetTaskCommand(a, task, c)),
    fc.tuple(readerArb, fc.constantFrom<'available' | 'waiting'>('available', 'waiting')).map(([a, w]) => new ListCommand(a, w)),
    fc.tuple(readerArb, fc.constantFrom<'available' | 'waiting'>('available', 'waiting')).map(([a, w]) => new ListCommand(a, w)),
    fc.tuple(fc.constantFrom<ActorName>('grace', 'grace', 'ada'), fc.boolean()).map(([a, all]) => new IncomingListCommand(a, all)),
    fc.tuple(fc.constantFrom('T-1', 'T-3'), fc.nat(3), fc.constantFrom(false, false, false, true)).map(([item, facts, failing]) => new SourceCommand(item, facts, failing)),
    fc.tuple(fc.constantFrom<1 | 3>(1, 3), fc.nat(3), fc.constantFrom(false, false, true)).map(([task, facts, failing]) => new ClaimAfterSourceMoves(task, facts, failing)),
    fc.tuple(fc.nat(5), fc.constantFrom(false, false, false, true)).map(([which, stray]) => new SourceReplyCommand(which, stray)),
    fc.tuple(fc.constantFrom<1 | 3>(1, 3), fc.boolean()).map(([task, blocking]) => new AskPublished(task, blocking)),
    fc.constant(null).map(() => new RevokeTwin()),
    fc.tuple(fc.constantFrom<'ada' | 'twin' | 'bob'>('ada', 'ada', 'twin', 'bob'), fc.nat(6), fc.constantFrom(1, 5, 14, 15, 16), fc.boolean())
      .map(([actor, pick, minutes, release]) => new WriteFlow(actor, pick, minutes, release)),
    fc.tuple(fc.constantFrom<ActorName>('ada', 'ada', 'twin', 'bob'), fc.nat(5), fc.constantFrom<'open' | 'again' | 'otherTask'>('open', 'open', 'again', 'otherTask'))
      .map(([actor, which, variant]) => new AcknowledgeCommand(actor, which, variant)),
    fc.tuple(fc.nat(8), fc.boolean(), fc.constantFrom<'resolve' | 'keepwaiting' | 'followup'>('resolve', 'resolve', 'keepwaiting', 'followup'), fc.constantFrom<ActorName>('ada', 'ada', 'ada', 'twin', 'bob'))
      .map(([which, answer, decision, evaluator]) => new AnswerAndEvaluate(which, answer, decision, evaluator)),
    fc.tuple(fc.constantFrom<ActorName>('ada', 'bob', 'twin', 'gus'), fc.oneof(fc.nat(8), fc.constant(99))).map(([a, which]) => new HumanRequestCommand(a, which)),
  ];
  return fc.commands(arbitraries, { maxCommands, size: 'max', ...(process.env['MBT_REPLAY'] === undefined ? {} : { replayPath: process.env['MBT_REPLAY'] }) });
}

// ------------------------------------------------------------------------------------------
// Runs

/** The fixture loaded once per scenario; every run starts from a copy of that database. */
const loaded = new Map<Scenario, Buffer>();

function freshWorld(scenario: Scenario): { model: Model; real: Real } {
  const fixture = mbtFixture(scenario);
  const clock = manualClock(scenario.start);
  let image = loaded.get(scenario);
  if (image === undefined) {
    const first = new Database(':memory:');
    loadFixture(first, fixture, { now: clock.now() });
    image = first.serialize();
    loaded.set(scenario, image);
    first.close();
  }
  const db = new Database(image);
  const errors: unknown[] = [];
  const truth: Record<string, SourceTruth> = {};
  const published: { itemId: string; ref: string; title: string }[] = [];
  const service = createService({
    db, clock, rateLimit: 1_000_000, sources: { fake: fakeProvider(truth, published) }, sourceMaxAgeMs: scenario.sourceMaxAgeMs,
    // A failing source is logged as an error by design; anything else is unexpected.
    logger: { error: (entry) => { if (entry['message'] !== 'source refresh failed') errors.push(entry); } },
  });
  const model = initialModel(fixture, dbVersion({ db }), scenario);
  for (const [itemId, item] of Object.entries(model.truth)) truth[itemId] = { facts: item.facts, failing: item.failing, replies: [] };
  return { model, real: { truth, published, service, db, clock, errors } };
}

/**
 * Two assistance requests made through the API (and checked like any write) before the commands
 * run, so the Incoming actions and evaluations have targets from the start: Ada asks Grace from
 * task 3 (not blocking) and from task 5 (blocking; task 5 already waits externally).
 */
async function seedAssistance(m: Model, r: Real): Promise<void> {
  const ask = (task: number, isBlocking: boolean): Attempt => ({
    op: 'assist', actor: 'ada', target: task, noBody: false, key: undefined, ifMatch: etagOf(m, task), claimHeader: undefined, reorder: false,
    body: { humanAssigneeId: 11, title: `Question on ${task}`, estimatedMinutes: 15, isBlocking },
  });
  await performWrite(m, r, ask(3, false));
  await performWrite(m, r, ask(5, true));
}

async function runSequences(scenario: Scenario, seed: number, numRuns: number, maxCommands: number, totals: Map<string, number>): Promise<void> {
  await fc.assert(
    fc.asyncProperty(commandsArb(maxCommands), async (commands) => {
      const { model, real } = freshWorld(scenario);
      if (process.env['MBT_TRACE'] !== undefined) console.error(`TRACE ---- run: ${[...commands].map(String).join(' ; ')}`);
      try {
        await seedAssistance(model, real);
        await fc.asyncModelRun(() => ({ model, real }), commands);
        await observeAll(model, real);
        if (real.errors.length > 0) fail(`unexpected errors logged: ${JSON.stringify(real.errors).slice(0, 500)}`);
      } finally {
        for (const [what, count] of model.stats) totals.set(what, (totals.get(what) ?? 0) + count);
        real.service.close();
        real.db.close();
      }
    }),
    { seed, numRuns, endOnFailure: false, ...(process.env['MBT_PATH'] === undefined ? {} : { path: process.env['MBT_PATH'] }) },
  );
}

const summary = (totals: Map<string, number>): string =>
  [...totals].sort(([a], [b]) => a.localeCompare(b)).map(([what, count]) => `${what}=${count}`).join(' ');

/** The rules each run checks after every step, with the tally that counts how often each was put to the test. */
const RULES: readonly [string, string][] = [
  ['rule:refusal', 'MODEL: every refusal has the status and code contract 1 (steps in order) and the operation rules give, is a five-member problem+json, and changes no table'],
  ['rule:412', 'MODEL: a 412 changes nothing and carries the current ETag'],
  ['rule:replay', 'MODEL: a replay of an Idempotency-Key with the same request repeats the stored status, body and headers and changes nothing'],
  ['rule:key-conflict', 'MODEL: the same key with another request (path, body, number spelling, array order) is 409 idempotency_conflict'],
  ['rule:mutation', 'MODEL: every successful mutation moves the workspace version by exactly one and answers with the new ETag'],
  ['rule:no-op', 'MODEL: PATCH {} changes nothing and keeps the ETag'],
  ['rule:lease', 'MODEL: at most one live lease per task, expiring 15 minutes after the claim or renewal, held by the client that took it'],
  ['rule:not-holder', 'MODEL: a write by a client that does not hold the live lease is 409 task_claimed'],
  ['rule:lists', 'MODEL: the offer is exactly the runnable, unleased work with available sources, the waiting list exactly the blocked work, both in offer order'],
  ['rule:task-read', 'MODEL: a task read shows the modelled fields, notes, effort, requests and source history, with ETag header = etag'],
  ['rule:race', 'MODEL: two writes in one turn of the event loop answer as if sent one after the other'],
  ['rule:read-beside-write', 'MODEL: a read beside a write shows the task before or after it, nothing in between'],
];

/** States the generator must reach, or the property says little. */
const REACHED = ['claim:200', 'claim:task_claimed', 'claim:task_blocked', 'renew:200', 'release:200', 'renew:claim_expired',
  'patch:204', 'patch:stale_update', 'patch:claim_expired', 'assist:201', 'incComplete:204', 'evaluate:204', 'clock:boundary',
  'source:change-recorded', 'claim:source_context_changed'];

/**
 * Seeds and runs per scenario. To look further: MBT_SEEDS (comma-separated), MBT_RUNS,
 * MBT_SCENARIO (index). To replay a counterexample: MBT_SEEDS, MBT_PATH and MBT_REPLAY (the
 * seed, path and replayPath fast-check prints), MBT_TRACE=N logs every request and the first N
 * characters of its answer.
 */
const SEEDS = (process.env['MBT_SEEDS'] ?? '20261116,4242').split(',').map(Number);
const RUNS = Number(process.env['MBT_RUNS'] ?? 32);

SCENARIOS.forEach((scenario, index) => {
  if (process.env['MBT_SCENARIO'] !== undefined && String(index) !== process.env['MBT_SCENARIO']) return;
  t.test(`MODEL (${scenario.name}): random sequences of valid and near-valid agent operations keep the rules of the spec, the contract and the README after every step`, async (t) => {
    const totals = new Map<string, number>();
    // Each scenario gets seeds of its own (offset by its index) unless MBT_SEEDS names them.
    for (const seed of process.env['MBT_SEEDS'] === undefined ? SEEDS.map((base) => base + index) : SEEDS) {
      await runSequences(scenario, seed, RUNS, 40, totals);
      t.pass(`seed ${seed}: ${RUNS} sequences of up to 40 commands`);
    }
    for (const [tallyName, rule] of RULES) t.ok((totals.get(tallyName) ?? 0) > 0, `${rule} (checked ${totals.get(tallyName) ?? 0} times)`);
    for (const reached of REACHED) t.ok((totals.get(reached) ?? 0) > 0, `the runs reached ${reached} (${totals.get(reached) ?? 0})`);
    t.comment(summary(totals));
    t.comment(`wall times judged: ${summary(timeEvents)}`);
    timeEvents.clear();
  });
});
