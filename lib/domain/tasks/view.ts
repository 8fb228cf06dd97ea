import type { RemainingMinutes } from '../planning/remaining-minutes.js';
import type { Principal } from '../../auth/authenticate.js';
import type {
  AssignmentView, AwaitingEvaluationView, HumanRequestView, NoteView, SourceActivationView, SourceChangeView,
  SourceContextView, SourceFactsView, TaskView,
} from '../../schemas/resources.js';
import { taskIdList, type HumanRequestRow, type TaskReadStatements, type TaskRow } from '../../store/task-reads.js';
import { formatUtc, formatUtcOrNull } from '../../time/london.js';
import { blockingReasons } from './state.js';

/** Quoted task ETag of contract 4. */
export function taskEtag(taskId: number, workspaceVersion: number): string {
  return `"task-${taskId}-plan-${workspaceVersion}"`;
}


const STATUS_OF_LIFECYCLE = {
  floating: 'Ready',
  planned: 'Ready',
  inprogress: 'InProgress',
  completed: 'Done',
} as const;

/** The HumanRequest shape of one assistance stage, with its remaining minutes at the time of reading. */
export function humanRequestView(row: HumanRequestRow, remainingMinutes: number): HumanRequestView {
  return {
    stageId: row.stageId,
    requestedForStageId: row.originTaskId,
    incomingId: row.incomingId,
    requestedByApiClientId: row.requestedByClientId,
    requestedByStaffMemberId: row.requestedByStaffId,
    assignedHumanId: row.assignedHumanId,
    assignedHumanName: row.assignedHumanName,
    requestedByName: row.requestedByName,
    originTitle: row.originTitle,
    title: row.title,
    details: row.details,
    estimatedMinutes: row.estimatedMinutes,
    remainingMinutes,
    status: STATUS_OF_LIFECYCLE[row.lifecycle],
    isBlocking: row.isBlocking === 1,
    isOutstandingBlocker: row.isBlocking === 1 && row.responseState !== 'resolved',
    response: row.response,
    createdUtc: formatUtc(row.createdUtc),
    completedUtc: formatUtcOrNull(row.completedUtc),
    lifecycle: row.lifecycle,
    priorityName: row.priorityName,
    responseState: row.responseState,
    actualStartUtc: formatUtcOrNull(row.actualStartUtc),
    actualEffortMinutes: row.actualEffortMinutes,
    incomingRevision: row.revision,
    respondedAtUtc: formatUtcOrNull(row.respondedAtUtc),
    assistanceKind: row.assistanceKind,
  };
}

function awaitingEvaluation(row: HumanRequestRow): AwaitingEvaluationView {
  return {
    id: row.incomingId,
    assistanceStageId: row.stageId,
    assistanceKind: row.assistanceKind,
    response: row.response,
    respondedAtUtc: formatUtcOrNull(row.respondedAtUtc),
    revision: row.revision,
  };
}

function groupByTask<R extends { taskId: number }>(rows: readonly R[]): Map<number, R[]> {
  const groups = new Map<number, R[]>();
  for (const row of rows) {
    const group = groups.get(row.taskId);
    if (group === undefined) groups.set(row.taskId, [row]);
    else group.push(row);
  }
  return groups;
}

/** A change's facts as the refresher stored them (SourceFacts, contract 9). */
function parseFacts(text: string | null): SourceFactsView | null {
  return text === null ? null : (JSON.parse(text) as SourceFactsView);
}

export interface ViewOptions {
  readonly principal: Principal;
  readonly includeNotes: boolean;
  readonly remaining: RemainingMinutes;
}

const EMPTY: readonly never[] = [];

/**
 * Assembles complete Task views for a set of rows with one query per child collection. Assistance
 * and reply content is hidden without `human-requests:read`; the derived flags are not.
 */
export function buildTaskViews(rows: readonly TaskRow[], reads: TaskReadStatements, options: ViewOptions): TaskView[] {
  if (rows.length === 0) return [];
  const ids = taskIdList(rows.map((row) => row.id));
  // One query per child collection for the whole set, and none for a collection no task has.
  const someRowHas = (flag: (row: TaskRow) => number) => rows.some((row) => flag(row) === 1);
  const none = new Map<number, never[]>();
  const assignees = groupByTask(reads.assignees(ids));
  const dependencies = someRowHas((row) => row.hasDependencies) ? groupByTask(reads.dependencies(ids)) : none;
  const intervals = someRowHas((row) => row.hasIntervals) ? groupByTask(reads.intervals(ids)) : none;
  const humanRequests = someRowHas((row) => row.hasAssistance)
    ? groupByTask(reads.humanRequests(ids).map((row) => ({ ...row, taskId: row.originTaskId })))
    : none;
  const contexts = someRowHas((row) => row.hasSources) ? groupByTask(reads.sourceContexts(ids)) : none;
  const changes = someRowHas((row) => row.hasChanges) ? groupByTask(reads.sourceChanges(ids)) : none;
  const activations = someRowHas((row) => row.hasActivations) ? groupByTask(reads.sourceActivations(ids)) : none;
  const canReadAssistance = options.principal.has('human-requests:read');
  // Whose calendars elapsed time may need: every assignee, and every human request's recipient.
  const staffIds = new Set<number>();
  for (const group of assignees.values()) for (const assignee of group) staffIds.add(assignee.staffMemberId);
  for (const group of humanRequests.values()) for (const request of group) staffIds.add(request.assignedHumanId);
  options.remaining.prepare([...staffIds]);

  return rows.map((row): TaskView => {
    const taskIntervals = intervals.get(row.id) ?? EMPTY;
    const taskAssignees = assignees.get(row.id) ?? EMPTY;
    const requests = humanRequests.get(row.id) ?? EMPTY;
    const awaiting = requests.filter((request) => request.responseState === 'responded').map(awaitingEvaluation);
    const taskChanges = changes.get(row.id) ?? EMPTY;
    const reasons = blockingReasons(row);
    let actualMs = 0;
    for (const interval of taskIntervals) actualMs += interval.endUtc - interval.startUtc;

    const externalChanges = taskChanges.map((change): SourceChangeView => {
      const hideReply = change.kind === 'reply' && !canReadAssistance;
      return {
        id: change.id,
        incomingId: change.incomingId,
        kind: change.kind,
        before: parseFacts(change.beforeFacts),
        after: parseFacts(change.afterFacts),
        response: hideReply ? null : change.response,
        author: hideReply ? null : change.author,
        occurredUtc: formatUtc(change.occurredUtc),
        receivedUtc: formatUtc(change.receivedUtc),
        acknowledgedUtc: formatUtcOrNull(change.acknowledgedUtc),
      };
    });
    const assigneeViews = taskAssignees.map((assignee): AssignmentView => ({
      staffMemberId: assignee.staffMemberId,
      name: assignee.name,
      remainingMinutes: options.remaining.assignee(row, assignee.staffMemberId, assignee.estimatedMinutes, taskAssignees.length),
      estimatedMinutes: assignee.estimatedMinutes,
    }));
    const externalContext = (contexts.get(row.id) ?? EMPTY).map((context): SourceContextView => ({
      providerKey: context.providerKey,
      itemId: context.itemId,
      facts: { title: context.title, description: context.description, businessStatus: context.businessStatus },
      lastSuccessUtc: formatUtcOrNull(context.lastSuccessUtc),
      isAvailable: context.isAvailable === 1,
    }));
    const sourceActivations = (activations.get(row.id) ?? EMPTY).map((activation): SourceActivationView => ({
      activatedUtc: formatUtc(activation.activatedUtc),
      sources: JSON.parse(activation.sources) as SourceActivationView['sources'],
    }));
    // Only the single-task read includes notes (lists show none), so this is one query, not one per row.
    const notes: NoteView[] = options.includeNotes && row.hasNotes === 1
      ? reads.notes(row.id).map((note) => ({
          id: note.id,
          text: note.text,
          createdUtc: formatUtc(note.createdUtc),
          clientName: note.clientName,
          staffName: note.staffName,
        }))
      : [];

    return {
      id: row.id,
      title: row.title,
      description: row.description,
      status: row.status,
      sequence: row.sequence,
      estimatedMinutes: row.estimatedMinutes,
      remainingMinutes: options.remaining.task(row),
      actualMinutes: actualMs / 60000,
      actualIntervals: taskIntervals.map((interval) => ({
        staffMemberId: interval.staffMemberId,
        start: interval.start,
        end: interval.end,
      })),
      startedAt: row.startedAt,
      completedAt: row.completedAt,
      earliestStart: row.earliestStart,
      isWaiting: row.isWaiting === 1,
      releaseDate: row.releaseDate,
      resourceMode: row.resourceMode,
      project: {
        id: row.projectId,
        name: row.projectName,
        priority: row.projectPriority,
        priorityName: row.projectPriorityName,
        targetDate: row.projectTargetDate,
        hardDeadline: row.projectHardDeadline,
        deadlineReason: row.projectDeadlineReason,
        isActive: row.projectActive === 1,
      },
      assignees: assigneeViews,
      dependencies: (dependencies.get(row.id) ?? EMPTY).map((dependency) => ({
        taskId: dependency.prerequisiteId,
        status: dependency.status,
      })),
      requiresAttention: awaiting.length > 0 || taskChanges.some((change) => change.acknowledgedUtc === null),
      externalContext,
      externalChanges,
      sourceActivations,
      responsesAwaitingEvaluation: canReadAssistance ? awaiting : [],
      blocked: reasons.length > 0,
      blockingReasons: reasons,
      humanRequests: canReadAssistance
        ? requests.map((request) => humanRequestView(request, options.remaining.humanRequest(request)))
        : [],
      notes,
      etag: taskEtag(row.id, row.workspaceVersion),
    };
  });
}
