import t from 'tap';
import { harness, type Harness } from '../helpers/service.js';
import { TOKENS } from '../helpers/fixture.js';
import { addAssistance } from '../helpers/api.js';

/**
 * Assistance and reply content inside tasks (contract 8, last bullet): shown with
 * `human-requests:read`, hidden without it (ada-reader has only tasks:read), while `blocked`,
 * `blockingReasons` and `requiresAttention` stay the same. The rows are built directly in SQL,
 * as the write endpoints do not exist yet.
 */

const CREATED = '2026-11-16T08:30:00.000Z';
const RESPONDED = '2026-11-16T09:40:00.000Z';
const REVISION_OPEN = '3f0c1a2b-4d5e-4f60-8a7b-9c0d1e2f3a4b';
const REVISION_RESPONDED = '7e6d5c4b-3a29-4180-9f7e-6d5c4b3a2918';

function addSourceItem(h: Harness, itemId: string): number {
  const row = h.db.prepare(`INSERT INTO source_items (organisation_id, provider_key, item_id, title)
    VALUES (1, 'http', ?, ?) RETURNING id`).get(itemId, itemId) as { id: number };
  return row.id;
}

function addChange(h: Harness, c: {
  taskId: number; sourceItemId: number; incomingId: number | null; kind: 'source' | 'reply';
  before?: object | null; after?: object | null; response?: string | null; author?: string | null; acknowledgedUtc?: string | null;
}): number {
  const result = h.db.prepare(`INSERT INTO source_changes (task_id, source_item_id, incoming_id, kind, before_facts,
      after_facts, response, author, occurred_utc, received_utc, acknowledged_utc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
    .run(c.taskId, c.sourceItemId, c.incomingId, c.kind,
      c.before == null ? null : JSON.stringify(c.before), c.after == null ? null : JSON.stringify(c.after),
      c.response ?? null, c.author ?? null, Date.parse('2026-11-16T09:35:00Z'), Date.parse('2026-11-16T09:36:00Z'),
      c.acknowledgedUtc == null ? null : Date.parse(c.acknowledgedUtc));
  return Number(result.lastInsertRowid);
}

/** Task 1 gets an open blocking Review and a responded non-blocking Question with a reply. */
function world() {
  const h = harness({ defaultToken: TOKENS.ada });
  addAssistance(h, {
    createdUtc: CREATED, stageId: 500, taskId: 1, incomingId: 7, isBlocking: true, kind: 'Review', title: 'Review the headline',
    details: 'Is the tone right?', estimatedMinutes: 20, priority: 'high', lifecycle: 'floating',
    responseState: 'open', response: null, respondedUtc: null, completedUtc: null, revision: REVISION_OPEN,
  });
  addAssistance(h, {
    createdUtc: CREATED, stageId: 501, taskId: 1, incomingId: 8, isBlocking: false, kind: 'Question', title: 'Which logo?',
    details: null, estimatedMinutes: 5, priority: 'normal', lifecycle: 'completed',
    responseState: 'responded', response: 'The blue one', respondedUtc: RESPONDED, completedUtc: RESPONDED, revision: REVISION_RESPONDED,
  });
  const item = addSourceItem(h, 'T-1');
  const sourceChange = addChange(h, {
    taskId: 1, sourceItemId: item, incomingId: null, kind: 'source',
    before: { title: 'T-1', description: null, businessStatus: 'open' },
    after: { title: 'T-1', description: null, businessStatus: 'in review' },
  });
  const replyChange = addChange(h, { taskId: 1, sourceItemId: item, incomingId: 8, kind: 'reply', response: 'The blue one', author: 'Grace' });
  return { h, sourceChange, replyChange };
}

t.test('GET /tasks/{id}: with human-requests:read, humanRequests shows the assistance content', async (t) => {
  const { h } = world();
  const response = await h.call('GET', '/api/v1/tasks/1');
  t.equal(response.status, 200);
  const requests = response.json.humanRequests;
  t.equal(requests.length, 2);
  t.match(requests[0], {
    stageId: 500, requestedForStageId: 1, incomingId: 7, requestedByApiClientId: 100, requestedByStaffMemberId: 10,
    assignedHumanId: 11, assignedHumanName: 'Grace', requestedByName: 'Ada', originTitle: 'Write copy',
    title: 'Review the headline', details: 'Is the tone right?', estimatedMinutes: 20, status: 'Ready',
    isBlocking: true, isOutstandingBlocker: true, response: null, createdUtc: CREATED, completedUtc: null,
    lifecycle: 'floating', priorityName: 'high', responseState: 'open', actualStartUtc: null, actualEffortMinutes: null,
    incomingRevision: REVISION_OPEN, respondedAtUtc: null, assistanceKind: 'Review',
  });
  t.match(requests[1], {
    stageId: 501, incomingId: 8, title: 'Which logo?', details: null, status: 'Done', isBlocking: false,
    isOutstandingBlocker: false, response: 'The blue one', completedUtc: RESPONDED, lifecycle: 'completed',
    priorityName: 'normal', responseState: 'responded', respondedAtUtc: RESPONDED, assistanceKind: 'Question',
    incomingRevision: REVISION_RESPONDED,
  });
  t.equal(Object.keys(requests[0]).length, 27, 'all 27 HumanRequest fields');
  for (const request of requests) t.ok(Number.isInteger(request.remainingMinutes));
  t.equal(response.json.blocked, true);
  t.strictSame(response.json.blockingReasons, ['human assistance']);
});

t.test('GET /tasks/{id}: responsesAwaitingEvaluation lists responded assistance by Incoming id with the bare revision', async (t) => {
  const { h } = world();
  const response = await h.call('GET', '/api/v1/tasks/1');
  t.strictSame(response.json.responsesAwaitingEvaluation, [
    { id: 8, assistanceStageId: 501, assistanceKind: 'Question', response: 'The blue one', respondedAtUtc: RESPONDED, revision: REVISION_RESPONDED },
  ]);
  t.equal(response.json.requiresAttention, true);
  h.db.prepare("UPDATE incoming_items SET response_state = 'resolved' WHERE id = 8").run();
  h.db.prepare('UPDATE source_changes SET acknowledged_utc = ?').run(h.clock.now());
  const resolved = await h.call('GET', '/api/v1/tasks/1');
  t.strictSame(resolved.json.responsesAwaitingEvaluation, []);
  t.equal(resolved.json.requiresAttention, false, 'nothing left to evaluate or acknowledge');
});

t.test('GET /tasks/{id}: without human-requests:read, humanRequests and responsesAwaitingEvaluation are [] while blocked, blockingReasons and requiresAttention stay the same', async (t) => {
  const { h } = world();
  const full = await h.call('GET', '/api/v1/tasks/1');
  const limited = await h.call('GET', '/api/v1/tasks/1', { token: TOKENS.readOnly });
  t.equal(limited.status, 200);
  t.strictSame(limited.json.humanRequests, []);
  t.strictSame(limited.json.responsesAwaitingEvaluation, []);
  t.equal(limited.json.blocked, full.json.blocked);
  t.strictSame(limited.json.blockingReasons, full.json.blockingReasons);
  t.equal(limited.json.requiresAttention, full.json.requiresAttention);
  t.equal(limited.json.etag, full.json.etag);
  // requiresAttention from a response awaiting evaluation alone (no source change) is kept too.
  h.db.prepare('UPDATE source_changes SET acknowledged_utc = ?').run(h.clock.now());
  const onlyAwaiting = await h.call('GET', '/api/v1/tasks/1', { token: TOKENS.readOnly });
  t.equal(onlyAwaiting.json.requiresAttention, true);
  t.strictSame(onlyAwaiting.json.responsesAwaitingEvaluation, []);
});

t.test('GET /tasks/{id}: reply-kind externalChanges show response and author only with human-requests:read', async (t) => {
  const { h, sourceChange, replyChange } = world();
  const full = await h.call('GET', '/api/v1/tasks/1');
  const sourceView = {
    id: sourceChange, incomingId: null, kind: 'source',
    before: { title: 'T-1', description: null, businessStatus: 'open' },
    after: { title: 'T-1', description: null, businessStatus: 'in review' },
    response: null, author: null,
    occurredUtc: '2026-11-16T09:35:00.000Z', receivedUtc: '2026-11-16T09:36:00.000Z', acknowledgedUtc: null,
  };
  const replyView = {
    id: replyChange, incomingId: 8, kind: 'reply', before: null, after: null, response: 'The blue one', author: 'Grace',
    occurredUtc: '2026-11-16T09:35:00.000Z', receivedUtc: '2026-11-16T09:36:00.000Z', acknowledgedUtc: null,
  };
  t.strictSame(full.json.externalChanges, [sourceView, replyView]);
  const limited = await h.call('GET', '/api/v1/tasks/1', { token: TOKENS.readOnly });
  t.strictSame(limited.json.externalChanges, [sourceView, { ...replyView, response: null, author: null }]);
});

t.test('GET /tasks/waiting: assistance content is hidden in lists without human-requests:read as well', async (t) => {
  const { h } = world();
  const full = await h.call('GET', '/api/v1/tasks/waiting');
  const limited = await h.call('GET', '/api/v1/tasks/waiting', { token: TOKENS.readOnly });
  const fullTask = full.json.find((task: { id: number }) => task.id === 1);
  const limitedTask = limited.json.find((task: { id: number }) => task.id === 1);
  t.equal(fullTask.humanRequests.length, 2);
  t.equal(fullTask.responsesAwaitingEvaluation.length, 1);
  t.equal(fullTask.externalChanges[1].author, 'Grace');
  t.strictSame(limitedTask.humanRequests, []);
  t.strictSame(limitedTask.responsesAwaitingEvaluation, []);
  t.equal(limitedTask.externalChanges[1].response, null);
  t.equal(limitedTask.externalChanges[1].author, null);
  t.strictSame(
    limited.json.map((task: { id: number; blocked: boolean; blockingReasons: string[]; requiresAttention: boolean }) =>
      [task.id, task.blocked, task.blockingReasons, task.requiresAttention]),
    full.json.map((task: { id: number; blocked: boolean; blockingReasons: string[]; requiresAttention: boolean }) =>
      [task.id, task.blocked, task.blockingReasons, task.requiresAttention]),
  );
});

t.test('GET /tasks/{id}: requiresAttention is true with an unacknowledged external change', async (t) => {
  const h = harness({ defaultToken: TOKENS.ada });
  const item = addSourceItem(h, 'T-3');
  addChange(h, { taskId: 3, sourceItemId: item, incomingId: null, kind: 'source', before: { title: 'a', description: null, businessStatus: null }, after: { title: 'b', description: null, businessStatus: null } });
  t.equal((await h.call('GET', '/api/v1/tasks/3')).json.requiresAttention, true);
  t.equal((await h.call('GET', '/api/v1/tasks/3', { token: TOKENS.readOnly })).json.requiresAttention, true);
  h.db.prepare('UPDATE source_changes SET acknowledged_utc = ?').run(h.clock.now());
  const acknowledged = await h.call('GET', '/api/v1/tasks/3');
  t.equal(acknowledged.json.requiresAttention, false);
  t.equal(acknowledged.json.externalChanges[0].acknowledgedUtc, '2026-11-16T10:00:00.000Z');
});
