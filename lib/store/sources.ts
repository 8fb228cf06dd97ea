import type { AssistanceKind, PriorityName } from '../domain/enumerations.js';
import type { Db } from './open.js';
import { namedRows } from './rows.js';

export interface SourceItemRow {
  id: number;
  organisationId: number;
  providerKey: string;
  itemId: string;
  title: string;
  description: string | null;
  businessStatus: string | null;
  hasBaseline: number;
  isAvailable: number;
  lastAttemptUtc: number | null;
}

export interface TaskSourceRow extends SourceItemRow {
  taskId: number;
}

export interface PublicationRow {
  stageId: number;
  sourceItemId: number;
  providerKey: string;
  itemId: string;
  attempts: number;
  title: string;
  details: string | null;
  assistanceKind: AssistanceKind;
  priorityName: PriorityName;
  pendingMessage: string | null;
  generation: number;
}

export interface ReplyTarget {
  stageId: number;
  originTaskId: number;
  incomingId: number;
}

const ITEM_COLUMNS = `si.id, si.organisation_id AS organisationId, si.provider_key AS providerKey, si.item_id AS itemId,
  si.title, si.description, si.business_status AS businessStatus, si.has_baseline AS hasBaseline,
  si.is_available AS isAvailable, si.last_attempt_utc AS lastAttemptUtc`;

/** Acknowledged source changes and activations kept per task (see `trimHistory`). */
export const HISTORY_KEPT = 100;

/** Linked source items, the changes and activations refreshes record, and publications. */
export function sourceStatements(db: Db) {
  const ofTasks = namedRows(db.prepare<[string], TaskSourceRow>(`
    SELECT ts.task_id AS taskId, ${ITEM_COLUMNS}
      FROM task_sources ts JOIN source_items si ON si.id = ts.source_item_id
     WHERE ts.task_id IN (SELECT value FROM json_each(?)) ORDER BY ts.task_id, ts.position`));
  // Items a reply is still expected from: published requests, still open, raised from tasks of
  // this resource, Done ones too (a reply to a question asked before finishing must still come
  // in, and nothing else refreshes a Done task's items). external_ref is kept when a follow-up
  // re-queues the request, so it marks "sent once". It starts from the organisation's open
  // requests (a partial index: what humans have left unanswered), not from the resource's
  // assignments, which grow with every task it ever finished; CROSS JOIN keeps SQLite to that order.
  const expectingReplies = namedRows(db.prepare<[{ staffId: number }], TaskSourceRow>(`
    SELECT DISTINCT s.origin_task_id AS taskId, ${ITEM_COLUMNS}
      FROM incoming_items i
      CROSS JOIN assistance_stages s ON s.id = i.stage_id
      CROSS JOIN task_assignments a ON a.task_id = s.origin_task_id AND a.staff_id = @staffId
      CROSS JOIN source_publications p ON p.stage_id = s.id AND p.external_ref IS NOT NULL
      CROSS JOIN source_items si ON si.id = p.source_item_id
     WHERE i.organisation_id = (SELECT organisation_id FROM staff WHERE id = @staffId) AND i.response_state = 'open'`));
  const item = db.prepare<[number], SourceItemRow>(`SELECT ${ITEM_COLUMNS} FROM source_items si WHERE si.id = ?`);
  // Done tasks are left out: they are in no list, so nothing would ever prompt an acknowledgement,
  // and an item shared with open tasks would grow their history with every change for ever.
  const openTasksOfItem = db.prepare<[number], { taskId: number }>(`
    SELECT ts.task_id AS taskId FROM task_sources ts JOIN tasks t ON t.id = ts.task_id
     WHERE ts.source_item_id = ? AND t.status <> 'Done'`);
  const success = db.prepare<[{ id: number; title: string; description: string | null; businessStatus: string | null; now: number }]>(`
    UPDATE source_items SET title = @title, description = @description, business_status = @businessStatus,
           has_baseline = 1, is_available = 1, last_success_utc = @now, last_attempt_utc = @now WHERE id = @id`);
  const failure = db.prepare<[{ id: number; now: number }]>(
    'UPDATE source_items SET is_available = 0, last_attempt_utc = @now WHERE id = @id');
  const insertChange = db.prepare(`
    INSERT INTO source_changes (task_id, source_item_id, incoming_id, kind, before_facts, after_facts, response, author,
      occurred_utc, received_utc)
    VALUES (@taskId, @sourceItemId, @incomingId, @kind, @before, @after, @response, @author, @occurred, @now)`);
  const availableFacts = db.prepare<[number], { title: string; description: string | null; businessStatus: string | null }>(`
    SELECT si.title, si.description, si.business_status AS businessStatus
      FROM task_sources ts JOIN source_items si ON si.id = ts.source_item_id
     WHERE ts.task_id = ? AND si.is_available = 1 ORDER BY ts.position`);
  const insertActivation = db.prepare('INSERT INTO source_activations (task_id, activated_utc, sources) VALUES (?, ?, ?)');
  const trimAcknowledged = db.prepare<[{ taskId: number; keep: number }]>(`
    DELETE FROM source_changes WHERE task_id = @taskId AND acknowledged_utc IS NOT NULL AND id < (
      SELECT min(id) FROM (SELECT id FROM source_changes WHERE task_id = @taskId AND acknowledged_utc IS NOT NULL
                            ORDER BY id DESC LIMIT @keep))`);
  const trimActivations = db.prepare<[{ taskId: number; keep: number }]>(`
    DELETE FROM source_activations WHERE task_id = @taskId AND id < (
      SELECT min(id) FROM (SELECT id FROM source_activations WHERE task_id = @taskId ORDER BY id DESC LIMIT @keep))`);
  const markSeen = db.prepare('INSERT OR IGNORE INTO source_replies_seen (source_item_id, reply_id) VALUES (?, ?)');
  const replyTarget = db.prepare<[{ sourceItemId: number; ref: string }], ReplyTarget>(`
    SELECT r.stage_id AS stageId, s.origin_task_id AS originTaskId, i.id AS incomingId
      FROM source_publication_refs r JOIN assistance_stages s ON s.id = r.stage_id JOIN incoming_items i ON i.stage_id = s.id
     WHERE r.source_item_id = @sourceItemId AND r.external_ref = @ref`);
  // A reply that arrives after the agent resolved the request is still recorded as a change, but
  // does not reopen it: resolved is final (contract 8: evaluating it again is 409
  // request_completed), and responded again it would block its task on a reply alone, refusing
  // the claim that found it (contract 9: a reply alone does not) or blocking a Done task.
  const respond = db.prepare<[{ id: number; response: string; now: number; revision: string }]>(`
    UPDATE incoming_items SET response = @response, response_state = 'responded', responded_at_utc = @now, revision = @revision
     WHERE id = @id AND response_state <> 'resolved'`);
  const enqueue = db.prepare<[{ stageId: number; sourceItemId: number; now: number; message: string | null }]>(`
    INSERT INTO source_publications (stage_id, source_item_id, state, attempts, next_attempt_utc, pending_message)
    VALUES (@stageId, @sourceItemId, 'pending', 0, @now, @message)
    ON CONFLICT (stage_id) DO UPDATE SET state = 'pending', attempts = 0, next_attempt_utc = @now, pending_message = @message,
      generation = generation + 1`);
  const due = db.prepare<[number], PublicationRow>(`
    SELECT p.stage_id AS stageId, p.source_item_id AS sourceItemId, si.provider_key AS providerKey, si.item_id AS itemId,
           p.attempts, i.title, i.details, s.assistance_kind AS assistanceKind, i.priority_name AS priorityName,
           p.pending_message AS pendingMessage, p.generation
      FROM source_publications p
      JOIN source_items si ON si.id = p.source_item_id
      JOIN assistance_stages s ON s.id = p.stage_id
      JOIN incoming_items i ON i.stage_id = s.id
     WHERE p.state IN ('pending', 'failed') AND p.next_attempt_utc <= ?
     ORDER BY p.next_attempt_utc, p.stage_id LIMIT 50`);
  // Both outcomes apply only to the generation that was sent: content queued meanwhile stays pending.
  const published = db.prepare<[{ stageId: number; ref: string; generation: number }]>(
    "UPDATE source_publications SET state = 'published', external_ref = @ref, attempts = attempts + 1, pending_message = NULL WHERE stage_id = @stageId AND generation = @generation");
  const recordRef = db.prepare<[{ sourceItemId: number; ref: string; stageId: number }]>(
    'INSERT OR IGNORE INTO source_publication_refs (source_item_id, external_ref, stage_id) VALUES (@sourceItemId, @ref, @stageId)');
  // One transaction: a ref recorded without its publication (or the reverse) would lose replies.
  // A null ref (one no reply could name) still marks the request as sent, by an empty external_ref.
  const markPublished = db.transaction((stageId: number, sourceItemId: number, ref: string | null, generation: number): void => {
    published.run({ stageId, ref: ref ?? '', generation });
    if (ref !== null) recordRef.run({ sourceItemId, ref, stageId });
  });
  // Never over a success: another process may have published this generation meanwhile.
  const failed = db.prepare<[{ stageId: number; next: number; generation: number }]>(
    "UPDATE source_publications SET state = 'failed', attempts = attempts + 1, next_attempt_utc = @next WHERE stage_id = @stageId AND generation = @generation AND state <> 'published'");
  // Taking a due publication moves its next attempt past the send: another process (or a later
  // run) finds it not due, and it is due again only if no outcome is ever recorded for it.
  const take = db.prepare<[{ stageId: number; generation: number; now: number; until: number }]>(`
    UPDATE source_publications SET next_attempt_utc = @until
     WHERE stage_id = @stageId AND generation = @generation AND state IN ('pending', 'failed') AND next_attempt_utc <= @now`);
  const publication = db.prepare<[number], { stageId: number; sourceItemId: number; externalRef: string | null; pendingMessage: string | null }>(
    `SELECT stage_id AS stageId, source_item_id AS sourceItemId, external_ref AS externalRef, pending_message AS pendingMessage
       FROM source_publications WHERE stage_id = ?`);
  const firstSource = db.prepare<[number], { id: number }>(
    'SELECT source_item_id AS id FROM task_sources WHERE task_id = ? ORDER BY position LIMIT 1');
  const giveBack = db.prepare<[{ stageId: number; generation: number; until: number; now: number }]>(`
    UPDATE source_publications SET next_attempt_utc = @now
     WHERE stage_id = @stageId AND generation = @generation AND state IN ('pending', 'failed') AND next_attempt_utc = @until`);
  const nextDue = db.prepare<[], { next: number | null }>(
    "SELECT min(next_attempt_utc) AS next FROM source_publications WHERE state IN ('pending', 'failed')");

  return {
    ofTasks: (taskIds: readonly number[]) => ofTasks.all(JSON.stringify(taskIds)),
    /** Items of published, still open requests from the resource's tasks (whatever their state). */
    expectingReplies: (staffId: number) => expectingReplies.all({ staffId }),
    item: (id: number) => item.get(id),
    /** The unfinished tasks linked to an item: those its changes are recorded on. */
    openTasksOfItem: (id: number) => openTasksOfItem.all(id).map((row) => row.taskId),
    recordSuccess: (id: number, facts: { title: string; description: string | null; businessStatus: string | null }, now: number) =>
      success.run({ id, ...facts, now }),
    recordFailure: (id: number, now: number) => failure.run({ id, now }),
    insertChange: (change: {
      taskId: number; sourceItemId: number; incomingId: number | null; kind: 'source' | 'reply'; before: string | null;
      after: string | null; response: string | null; author: string | null; occurred: number; now: number;
    }) => insertChange.run(change),
    availableFacts: (taskId: number) => availableFacts.all(taskId),
    insertActivation: (taskId: number, now: number, sources: string) => insertActivation.run(taskId, now, sources),
    /**
     * Keeps a task's history to what an agent can still act on: every unacknowledged change, and
     * the newest HISTORY_KEPT acknowledged changes and activations. Every Task view carries the
     * history, so a source that keeps changing would otherwise grow it without end.
     */
    trimHistory(taskId: number): void {
      trimAcknowledged.run({ taskId, keep: HISTORY_KEPT });
      trimActivations.run({ taskId, keep: HISTORY_KEPT });
    },
    /** True the first time a reply is seen. */
    markReplySeen: (sourceItemId: number, replyId: string) => markSeen.run(sourceItemId, replyId).changes === 1,
    replyTarget: (sourceItemId: number, ref: string) => replyTarget.get({ sourceItemId, ref }),
    respond: (id: number, response: string, now: number, revision: string) => respond.run({ id, response, now, revision }),
    enqueuePublication: (stageId: number, sourceItemId: number, now: number, message: string | null) =>
      enqueue.run({ stageId, sourceItemId, now, message }),
    /** The publication of an assistance request, if it was to be published (`externalRef` null: not yet taken). */
    publicationOf: (stageId: number) => publication.get(stageId),
    duePublications: (now: number) => due.all(now),
    /** Records the reference (replies to it count) and, unless re-queued meanwhile, the success. */
    markPublished: (stageId: number, sourceItemId: number, ref: string | null, generation: number): void =>
      markPublished.immediate(stageId, sourceItemId, ref, generation),
    markPublishFailed: (stageId: number, next: number, generation: number) => failed.run({ stageId, next, generation }),
    /** Whether this caller took the due publication (until `until`); false when another did, or it changed. */
    takePublication: (stageId: number, generation: number, now: number, until: number): boolean =>
      take.run({ stageId, generation, now, until }).changes === 1,
    /** Hands a taken publication back, due at `now`, unless something was recorded for it since. */
    returnPublication: (stageId: number, generation: number, until: number, now: number): void => {
      giveBack.run({ stageId, generation, until, now });
    },
    nextPublicationDue: () => nextDue.get()?.next ?? null,
    /** The task's first linked source item: where its assistance requests are published. */
    firstSourceOf: (taskId: number) => firstSource.get(taskId)?.id,
  };
}

export type SourceStatements = ReturnType<typeof sourceStatements>;
