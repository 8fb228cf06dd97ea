import type { AssistanceKind, Lifecycle, PriorityName, ResourceMode, ResponseState, TaskStatus } from '../domain/enumerations.js';
import { liveLeaseAt } from './claims.js';
import type { Db } from './open.js';
import { namedRows } from './rows.js';

/** One task with its project and the flags that decide blocking and leasing. */
export interface TaskRow {
  id: number;
  organisationId: number;
  title: string;
  description: string | null;
  status: TaskStatus;
  sequence: number;
  estimatedMinutes: number;
  startedAt: string | null;
  completedAt: string | null;
  earliestStart: string | null;
  releaseDate: string | null;
  isWaiting: number;
  resourceMode: ResourceMode;
  projectId: number;
  projectName: string;
  projectPriority: number;
  projectPriorityName: PriorityName;
  projectTargetDate: string | null;
  projectHardDeadline: string | null;
  projectDeadlineReason: string | null;
  projectActive: number;
  unmetPrerequisites: number;
  humanBlocker: number;
  /** When the task's live lease expires; null without one. */
  liveClaimExpiresUtc: number | null;
  /** The organisation's workspace version, read with the task so the ETag costs no query. */
  workspaceVersion: number;
  /** Which child collections the task has (each 0 or 1): empty ones are not queried. */
  hasDependencies: number;
  hasIntervals: number;
  hasAssistance: number;
  hasSources: number;
  hasChanges: number;
  hasActivations: number;
  hasNotes: number;
}

export interface AssigneeRow { taskId: number; staffMemberId: number; name: string; estimatedMinutes: number | null }
export interface DependencyRow { taskId: number; prerequisiteId: number; status: TaskStatus }
export interface IntervalRow { taskId: number; staffMemberId: number; start: string; end: string; startUtc: number; endUtc: number }
export interface NoteRow { id: number; text: string; createdUtc: number; clientName: string; staffName: string }

export interface HumanRequestRow {
  stageId: number;
  originTaskId: number;
  incomingId: number;
  requestedByClientId: number;
  requestedByStaffId: number;
  assignedHumanId: number;
  assignedHumanName: string;
  requestedByName: string;
  originTitle: string;
  title: string;
  details: string | null;
  estimatedMinutes: number;
  lifecycle: Lifecycle;
  isBlocking: number;
  response: string | null;
  createdUtc: number;
  completedUtc: number | null;
  priorityName: PriorityName;
  responseState: ResponseState;
  actualStartUtc: number | null;
  actualEffortMinutes: number | null;
  revision: string;
  respondedAtUtc: number | null;
  assistanceKind: AssistanceKind;
}

export interface SourceContextRow {
  taskId: number;
  providerKey: string;
  itemId: string;
  title: string;
  description: string | null;
  businessStatus: string | null;
  lastSuccessUtc: number | null;
  isAvailable: number;
}

export interface SourceChangeRow {
  id: number;
  taskId: number;
  incomingId: number | null;
  kind: 'source' | 'reply';
  beforeFacts: string | null;
  afterFacts: string | null;
  response: string | null;
  author: string | null;
  occurredUtc: number;
  receivedUtc: number;
  acknowledgedUtc: number | null;
}

export interface SourceActivationRow { taskId: number; activatedUtc: number; sources: string }

/** Blocking facts of a task `t` that need other tables (contract 5); the third is `t.is_waiting`. */
const UNMET_PREREQUISITES = `EXISTS (SELECT 1 FROM task_dependencies d JOIN tasks pre ON pre.id = d.prerequisite_id
           WHERE d.task_id = t.id AND pre.status <> 'Done')`;
const HUMAN_BLOCKER = `EXISTS (SELECT 1 FROM assistance_stages s JOIN incoming_items i ON i.stage_id = s.id
           WHERE s.origin_task_id = t.id AND s.is_blocking = 1 AND i.response_state <> 'resolved')`;

/** The blocking facts as columns, for the reasons a task view lists. */
export const BLOCKING_COLUMNS = `
  ${UNMET_PREREQUISITES} AS unmetPrerequisites,
  ${HUMAN_BLOCKER} AS humanBlocker`;

/** Whether a task `t` is blocked by any of the three facts, for plans, which need no reasons. */
export const BLOCKED_CONDITION = `(t.is_waiting = 1 OR ${UNMET_PREREQUISITES} OR ${HUMAN_BLOCKER})`;

const LIVE_CLAIM_EXPIRY = `(SELECT max(c.expires_utc) FROM claims c
    WHERE c.task_id = t.id AND ${liveLeaseAt('c.')}) AS liveClaimExpiresUtc`;

/**
 * What decides whether a task is offered (contract 5) or waiting, and until when that holds: a
 * list first reads only these for every unfinished task of the resource, then whole rows for the
 * few it lists (an agent may have tens of thousands of open tasks and be offered one).
 */
export type TaskCandidateRow = Pick<TaskRow,
  'id' | 'status' | 'estimatedMinutes' | 'earliestStart' | 'releaseDate' | 'isWaiting' | 'projectActive' |
  'unmetPrerequisites' | 'humanBlocker' | 'liveClaimExpiresUtc'>;

const CANDIDATE_COLUMNS = `
  t.id, t.status, t.estimated_minutes AS estimatedMinutes, t.earliest_start_local AS earliestStart,
  t.release_date_local AS releaseDate, t.is_waiting AS isWaiting, p.is_active AS projectActive,
  ${BLOCKING_COLUMNS},
  ${LIVE_CLAIM_EXPIRY}`;

const TASK_COLUMNS = `
  t.id, t.organisation_id AS organisationId, t.title, t.description, t.status, t.sequence,
  t.estimated_minutes AS estimatedMinutes, t.started_at_local AS startedAt, t.completed_at_local AS completedAt,
  t.earliest_start_local AS earliestStart, t.release_date_local AS releaseDate, t.is_waiting AS isWaiting,
  t.resource_mode AS resourceMode,
  p.id AS projectId, p.name AS projectName, p.priority AS projectPriority, p.priority_name AS projectPriorityName,
  p.target_date_local AS projectTargetDate, p.hard_deadline_local AS projectHardDeadline,
  p.deadline_reason AS projectDeadlineReason, p.is_active AS projectActive,
  ${BLOCKING_COLUMNS},
  ${LIVE_CLAIM_EXPIRY},
  (SELECT o.workspace_version FROM organisations o WHERE o.id = t.organisation_id) AS workspaceVersion,
  EXISTS (SELECT 1 FROM task_dependencies d WHERE d.task_id = t.id) AS hasDependencies,
  EXISTS (SELECT 1 FROM actual_intervals ai WHERE ai.task_id = t.id) AS hasIntervals,
  EXISTS (SELECT 1 FROM assistance_stages s WHERE s.origin_task_id = t.id) AS hasAssistance,
  EXISTS (SELECT 1 FROM task_sources ts WHERE ts.task_id = t.id) AS hasSources,
  EXISTS (SELECT 1 FROM source_changes sc WHERE sc.task_id = t.id) AS hasChanges,
  EXISTS (SELECT 1 FROM source_activations sa WHERE sa.task_id = t.id) AS hasActivations,
  EXISTS (SELECT 1 FROM notes n WHERE n.task_id = t.id) AS hasNotes`;

const IN_IDS = 'IN (SELECT value FROM json_each(@ids))';

/** The tasks a view is assembled for, encoded once for every child query that reads them. */
export type TaskIdList = string & { readonly __taskIdList: true };
export const taskIdList = (ids: readonly number[]): TaskIdList => JSON.stringify(ids) as TaskIdList;

/**
 * Reads for assembling Task views. Children are fetched for a whole set of tasks at once
 * (`json_each` over the id list), so a list costs the same fixed number of queries whatever its
 * length.
 */
export function taskReadStatements(db: Db) {
  const access = db.prepare<[{ id: number; staffId: number }], { organisationId: number; assigned: number }>(`
    SELECT t.organisation_id AS organisationId,
           EXISTS (SELECT 1 FROM task_assignments a WHERE a.task_id = t.id AND a.staff_id = @staffId) AS assigned
      FROM tasks t WHERE t.id = @id`);
  const one = namedRows(db.prepare<[{ id: number; now: number }], TaskRow>(`
    SELECT ${TASK_COLUMNS} FROM tasks t JOIN projects p ON p.id = t.project_id WHERE t.id = @id`));
  const unfinishedForResource = namedRows(db.prepare<[{ staffId: number; now: number }], TaskCandidateRow>(`
    SELECT ${CANDIDATE_COLUMNS}
      FROM open_assignments mine
      JOIN tasks t ON t.id = mine.task_id
      JOIN projects p ON p.id = t.project_id
     WHERE mine.staff_id = @staffId AND t.status <> 'Done'`));
  // Offer order (contract 5), sorting only the tasks listed.
  const inOfferOrder = namedRows(db.prepare<[{ ids: string; now: number }], TaskRow>(`
    SELECT ${TASK_COLUMNS} FROM tasks t JOIN projects p ON p.id = t.project_id WHERE t.id ${IN_IDS}
     ORDER BY p.priority, p.id, t.sequence, t.id`));
  const assignees = namedRows(db.prepare<[{ ids: string }], AssigneeRow>(`
    SELECT a.task_id AS taskId, a.staff_id AS staffMemberId, s.name, a.estimated_minutes AS estimatedMinutes
      FROM task_assignments a JOIN staff s ON s.id = a.staff_id
     WHERE a.task_id ${IN_IDS} ORDER BY a.task_id, a.staff_id`));
  const dependencies = namedRows(db.prepare<[{ ids: string }], DependencyRow>(`
    SELECT d.task_id AS taskId, d.prerequisite_id AS prerequisiteId, pre.status
      FROM task_dependencies d JOIN tasks pre ON pre.id = d.prerequisite_id
     WHERE d.task_id ${IN_IDS} ORDER BY d.task_id, d.prerequisite_id`));
  const intervals = namedRows(db.prepare<[{ ids: string }], IntervalRow>(`
    SELECT task_id AS taskId, staff_id AS staffMemberId, start_local AS start, end_local AS "end",
           start_utc AS startUtc, end_utc AS endUtc
      FROM actual_intervals WHERE task_id ${IN_IDS} ORDER BY task_id, start_utc, staff_id, id`));
  const humanRequests = namedRows(db.prepare<[{ ids: string }], HumanRequestRow>(`
    SELECT ${HUMAN_REQUEST_COLUMNS} WHERE s.origin_task_id ${IN_IDS} ORDER BY s.origin_task_id, s.id`));
  const sourceContexts = namedRows(db.prepare<[{ ids: string }], SourceContextRow>(`
    SELECT ts.task_id AS taskId, si.provider_key AS providerKey, si.item_id AS itemId, si.title, si.description,
           si.business_status AS businessStatus, si.last_success_utc AS lastSuccessUtc, si.is_available AS isAvailable
      FROM task_sources ts JOIN source_items si ON si.id = ts.source_item_id
     WHERE ts.task_id ${IN_IDS} ORDER BY ts.task_id, ts.position`));
  const sourceChanges = namedRows(db.prepare<[{ ids: string }], SourceChangeRow>(`
    SELECT id, task_id AS taskId, incoming_id AS incomingId, kind, before_facts AS beforeFacts,
           after_facts AS afterFacts, response, author, occurred_utc AS occurredUtc, received_utc AS receivedUtc,
           acknowledged_utc AS acknowledgedUtc
      FROM source_changes WHERE task_id ${IN_IDS} ORDER BY task_id, id`));
  const sourceActivations = namedRows(db.prepare<[{ ids: string }], SourceActivationRow>(`
    SELECT task_id AS taskId, activated_utc AS activatedUtc, sources
      FROM source_activations WHERE task_id ${IN_IDS} ORDER BY task_id, id`));
  const notes = namedRows(db.prepare<[number], NoteRow>(`
    SELECT n.id, n.text, n.created_utc AS createdUtc, c.name AS clientName, s.name AS staffName
      FROM notes n JOIN api_clients c ON c.id = n.client_id JOIN staff s ON s.id = n.staff_id
     WHERE n.task_id = ? ORDER BY n.id`));

  return {
    /** Organisation and assignment of a task, for the not-found and not-owned checks. */
    access: (id: number, staffId: number) => access.get({ id, staffId }),
    task: (id: number, now: number) => one.get({ id, now }),
    /** The resource's unfinished tasks, in no order, with only what decides their listing. */
    unfinishedForResource: (staffId: number, now: number) => unfinishedForResource.all({ staffId, now }),
    /** Whole rows of these tasks in offer order (project priority, project, sequence, id). */
    inOfferOrder: (ids: readonly number[], now: number): TaskRow[] => (ids.length === 0 ? [] : inOfferOrder.all({ ids: taskIdList(ids), now })),
    assignees: (ids: TaskIdList) => assignees.all({ ids }),
    dependencies: (ids: TaskIdList) => dependencies.all({ ids }),
    intervals: (ids: TaskIdList) => intervals.all({ ids }),
    humanRequests: (ids: TaskIdList) => humanRequests.all({ ids }),
    sourceContexts: (ids: TaskIdList) => sourceContexts.all({ ids }),
    sourceChanges: (ids: TaskIdList) => sourceChanges.all({ ids }),
    sourceActivations: (ids: TaskIdList) => sourceActivations.all({ ids }),
    notes: (taskId: number) => notes.all(taskId),
  };
}

export const HUMAN_REQUEST_COLUMNS = `
    s.id AS stageId, s.origin_task_id AS originTaskId, i.id AS incomingId,
    s.requested_by_client_id AS requestedByClientId, s.requested_by_staff_id AS requestedByStaffId,
    i.recipient_id AS assignedHumanId, recipient.name AS assignedHumanName, requester.name AS requestedByName,
    origin.title AS originTitle, i.title, i.details, i.estimated_minutes AS estimatedMinutes, i.lifecycle,
    s.is_blocking AS isBlocking, i.response, s.created_utc AS createdUtc, i.completed_utc AS completedUtc,
    i.priority_name AS priorityName, i.response_state AS responseState, i.actual_start_utc AS actualStartUtc,
    i.actual_effort_minutes AS actualEffortMinutes, i.revision, i.responded_at_utc AS respondedAtUtc,
    s.assistance_kind AS assistanceKind
  FROM assistance_stages s
  JOIN incoming_items i ON i.stage_id = s.id
  JOIN tasks origin ON origin.id = s.origin_task_id
  JOIN staff recipient ON recipient.id = i.recipient_id
  JOIN staff requester ON requester.id = s.requested_by_staff_id`;

export type TaskReadStatements = ReturnType<typeof taskReadStatements>;
