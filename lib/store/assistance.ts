import type { AssistanceKind, Lifecycle, PriorityName, ResponseState } from '../domain/enumerations.js';
import { HUMAN_REQUEST_COLUMNS, type HumanRequestRow } from './task-reads.js';
import { nextIdSql } from './ids.js';
import type { Db } from './open.js';
import { namedRows } from './rows.js';

export interface IncomingRow {
  id: number;
  organisationId: number;
  stageId: number | null;
  originTaskId: number | null;
  recipientId: number;
  title: string;
  details: string | null;
  estimatedMinutes: number;
  priorityName: PriorityName;
  requester: string;
  requestedAtUtc: number;
  lifecycle: Lifecycle;
  plannedStart: string | null;
  actualStartUtc: number | null;
  actualEffortMinutes: number | null;
  response: string | null;
  responseState: ResponseState;
  respondedAtUtc: number | null;
  completedUtc: number | null;
  revision: string;
}

const INCOMING_COLUMNS = `
  i.id, i.organisation_id AS organisationId, i.stage_id AS stageId, s.origin_task_id AS originTaskId,
  i.recipient_id AS recipientId, i.title, i.details, i.estimated_minutes AS estimatedMinutes,
  i.priority_name AS priorityName, i.requester, i.requested_at_utc AS requestedAtUtc, i.lifecycle,
  i.planned_start_local AS plannedStart, i.actual_start_utc AS actualStartUtc,
  i.actual_effort_minutes AS actualEffortMinutes, i.response, i.response_state AS responseState,
  i.responded_at_utc AS respondedAtUtc, i.completed_utc AS completedUtc, i.revision`;

export interface IncomingUpdate {
  id: number;
  recipientId: number;
  details: string | null;
  lifecycle: Lifecycle;
  plannedStart: string | null;
  actualStartUtc: number | null;
  response: string | null;
  responseState: ResponseState;
  respondedAtUtc: number | null;
  completedUtc: number | null;
  revision: string;
}

/** A new assistance stage and the content of its floating Incoming item. */
export interface NewAssistance
  extends Pick<IncomingRow, 'recipientId' | 'title' | 'details' | 'estimatedMinutes' | 'priorityName' | 'requester'> {
  organisationId: number;
  originTaskId: number;
  clientId: number;
  staffId: number;
  assistanceKind: AssistanceKind;
  isBlocking: number;
  publishExternally: number;
  now: number;
  revision: string;
}

/** Assistance stages and Incoming items. */
export function assistanceStatements(db: Db) {
  const staff = db.prepare<[number], { organisationId: number; kind: 'agent' | 'human'; isActive: number; name: string }>(
    'SELECT organisation_id AS organisationId, kind, is_active AS isActive, name FROM staff WHERE id = ?');
  const insertStage = db.prepare(`INSERT INTO stages (id, kind) VALUES (${nextIdSql('stages')}, 'assistance')`);
  const insertAssistance = db.prepare(`
    INSERT INTO assistance_stages (id, organisation_id, origin_task_id, requested_by_client_id, requested_by_staff_id,
      assistance_kind, is_blocking, publish_externally, created_utc)
    VALUES (@id, @organisationId, @originTaskId, @clientId, @staffId, @assistanceKind, @isBlocking, @publishExternally, @now)`);
  const insertIncoming = db.prepare(`
    INSERT INTO incoming_items (id, organisation_id, stage_id, recipient_id, title, details, estimated_minutes, priority_name,
      requester, requested_at_utc, lifecycle, revision)
    VALUES (${nextIdSql('incoming_items')}, @organisationId, @stageId, @recipientId, @title, @details, @estimatedMinutes, @priorityName,
      @requester, @now, 'floating', @revision)`);
  const stageAccess = db.prepare<[{ id: number; staffId: number }], { organisationId: number; assigned: number }>(`
    SELECT s.organisation_id AS organisationId,
           EXISTS (SELECT 1 FROM task_assignments a WHERE a.task_id = s.origin_task_id AND a.staff_id = @staffId) AS assigned
      FROM assistance_stages s WHERE s.id = @id`);
  const humanRequest = namedRows(db.prepare<[number], HumanRequestRow>(`SELECT ${HUMAN_REQUEST_COLUMNS} WHERE s.id = ?`));
  const incoming = namedRows(db.prepare<[number], IncomingRow>(`
    SELECT ${INCOMING_COLUMNS} FROM incoming_items i LEFT JOIN assistance_stages s ON s.id = i.stage_id WHERE i.id = ?`));
  // Two statements, not one with `(@all = 1 OR lifecycle = ...)`: that OR keeps SQLite from using
  // the lifecycle column of incoming_by_recipient, and the default list would walk every item the
  // recipient ever had (completed ones are kept for good).
  const incomingList = (lifecycle: string) => namedRows(db.prepare<[{ recipientId: number; organisationId: number }], IncomingRow>(`
    SELECT ${INCOMING_COLUMNS} FROM incoming_items i LEFT JOIN assistance_stages s ON s.id = i.stage_id
     WHERE i.recipient_id = @recipientId AND i.organisation_id = @organisationId ${lifecycle}
     ORDER BY i.priority_rank, i.requested_at_utc, i.id`));
  const floatingForRecipient = incomingList("AND i.lifecycle = 'floating'");
  const everyIncomingForRecipient = incomingList('');
  const updateIncoming = db.prepare<[IncomingUpdate]>(`
    UPDATE incoming_items SET recipient_id = @recipientId, details = @details, lifecycle = @lifecycle,
           planned_start_local = @plannedStart, actual_start_utc = @actualStartUtc, response = @response,
           response_state = @responseState, responded_at_utc = @respondedAtUtc, completed_utc = @completedUtc,
           revision = @revision
     WHERE id = @id`);
  const sourceCount = db.prepare<[number], { count: number }>('SELECT count(*) AS count FROM task_sources WHERE task_id = ?');

  return {
    staff: (id: number) => staff.get(id),
    /** Creates the stage (id from the shared task id space) and its floating Incoming item. */
    create(request: NewAssistance): { stageId: number; incomingId: number } {
      const stageId = Number(insertStage.run().lastInsertRowid);
      insertAssistance.run({ ...request, id: stageId });
      const incomingId = Number(insertIncoming.run({ ...request, stageId }).lastInsertRowid);
      return { stageId, incomingId };
    },
    stageAccess: (id: number, staffId: number) => stageAccess.get({ id, staffId }),
    humanRequest: (stageId: number) => humanRequest.get(stageId),
    incoming: (id: number) => incoming.get(id),
    incomingForRecipient: (recipientId: number, organisationId: number, includeAccepted: boolean) =>
      (includeAccepted ? everyIncomingForRecipient : floatingForRecipient).all({ recipientId, organisationId }),
    updateIncoming: (update: IncomingUpdate) => updateIncoming.run(update),
    linkedSourceCount: (taskId: number) => sourceCount.get(taskId)?.count ?? 0,
  };
}

export type AssistanceStatements = ReturnType<typeof assistanceStatements>;
