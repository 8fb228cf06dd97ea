import t from 'tap';
import { harness, type Harness } from '../helpers/service.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';
import { bumpVersion, etagOf, readTask } from '../helpers/api.js';
import type { ProviderPublication, PublishRequest, SourceProvider } from '../../lib/sources/provider.js';
import type { TapTest } from '../helpers/api.js';
import { CHECK_INTERVAL_MS } from '../../lib/sources/publisher.js';
import { askedToPublish } from '../helpers/publishing.js';

/**
 * Publishing assistance requests to a linked source while other things happen: follow-ups,
 * write batches, close(). The provider answers each send as `answerFor` says; by default it holds
 * every send until the test calls `answer()` (the latest send).
 */
async function publishingWorld(t: TapTest, answerFor?: (request: PublishRequest, count: number) => Promise<ProviderPublication> | undefined) {
  const sent: PublishRequest[] = [];
  let answer: (() => void) | undefined;
  const provider: SourceProvider = {
    refresh: async () => ({ title: 'Ticket' }),
    publish: (_itemId, request) => {
      sent.push(request);
      const ref = `ref-${sent.length}`;
      return answerFor?.(request, sent.length) ?? new Promise((resolve) => { answer = () => resolve({ ref }); });
    },
  };
  const h = await askedToPublish(t, provider);
  while (sent.length === 0) await new Promise((resolve) => setImmediate(resolve));
  const state = () => h.db.prepare('SELECT state FROM source_publications').pluck().get();
  return { h, sent, state, answer: () => answer?.() };
}

/** The human answers (as the tracker or the Incoming action would), and the agent follows up. */
async function followUp(t: TapTest, h: Harness, key: string, message: string): Promise<void> {
  h.db.prepare("UPDATE incoming_items SET response = 'Warm', response_state = 'responded', responded_at_utc = ?").run(h.clock.now());
  bumpVersion(h);
  const task = await readTask(h, 1);
  const request = task.humanRequests[0];
  const answer = await h.call('POST', '/api/v1/tasks/1/external-evaluation', {
    headers: { 'if-match': task.etag, 'idempotency-key': key },
    body: { decision: 'followup', incomingId: request.incomingId, revision: request.incomingRevision, message },
  });
  t.equal(answer.status, 204, answer.text ?? '');
}

t.test('SOURCES: a follow-up queued while the request is still being published is sent after it, not lost', async (t) => {
  // The first send hangs until the test lets it finish, as a slow tracker would; later ones are answered at once.
  const { h, sent, answer } = await publishingWorld(t, (_request, count) => (count === 1 ? undefined : Promise.resolve({ ref: `ref-${count}` })));
  t.equal(sent.length, 1, 'the first send is in flight');
  await followUp(t, h, 'follow-1', 'And the headline?');
  answer();
  await h.service.idle();
  t.equal(sent.length, 2, 'the follow-up was sent too');
  t.match(sent[1]?.details ?? '', /And the headline\?/, 'with its message');
  t.strictSame(
    h.db.prepare('SELECT state, external_ref AS ref FROM source_publications').get(),
    { state: 'published', ref: 'ref-2' },
    'the publication ends published with the newest reference',
  );
  t.equal(h.db.prepare('SELECT count(*) FROM source_publication_refs').pluck().get(), 2, 'replies to either reference find the request');
});

t.test('SOURCES: a publication answered while a write batch is open is recorded after that batch, never inside it', async (t) => {
  const { h, answer, state } = await publishingWorld(t);
  // One turn: the PATCH opens a batch, then the provider answers while it is open.
  const patch = h.call('PATCH', '/api/v1/tasks/3', { headers: { 'if-match': await etagOf(h, 3) }, body: { sequence: 6 } });
  t.ok(h.db.inTransaction, 'a batch is open');
  answer();
  for (let turn = 0; turn < 50; turn += 1) await Promise.resolve();
  t.ok(h.db.inTransaction, 'the batch is still open');
  t.equal(state(), 'pending', 'the publication has not been recorded inside it');
  t.equal((await patch).status, 204);
  await h.service.idle();
  t.equal(state(), 'published', 'it is recorded once the batch has committed');
  t.strictSame(h.db.prepare('SELECT external_ref FROM source_publication_refs').pluck().all(), ['ref-1'], 'with its reference');
});

t.test('SOURCES: a publication answered after close() is not recorded: the connection is no longer the service\'s', async (t) => {
  const { h, answer, state } = await publishingWorld(t);
  h.service.close();
  answer();
  for (let turn = 0; turn < 5; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  t.equal(state(), 'pending', 'nothing is written');
  t.equal(h.db.prepare('SELECT count(*) FROM source_publication_refs').pluck().get(), 0);
});

t.test('SOURCES: a follow-up whose publication failed is sent with the next follow-up, not replaced by it', async (t) => {
  let failing = false;
  const { h, sent, state } = await publishingWorld(t, (_request, count) =>
    (failing ? Promise.reject(new Error('tracker down')) : Promise.resolve({ ref: `ref-${count}` })));
  await h.service.idle();
  failing = true;
  await followUp(t, h, 'f-1', 'And the headline?');
  await h.service.idle();
  t.equal(state(), 'failed', 'the first follow-up could not be sent');
  failing = false;
  await followUp(t, h, 'f-2', 'And the footer?');
  await h.service.idle();
  const last = sent.at(-1)?.details ?? '';
  t.match(last, /And the headline\?/, 'the failed follow-up goes with the next one');
  t.match(last, /And the footer\?/);
  t.equal(state(), 'published');
});

t.test('SOURCES: a closed service calls no provider any more, not even for a request queued while one was in flight', async (t) => {
  const { h, answer, sent } = await publishingWorld(t);
  const second = await h.call('POST', '/api/v1/tasks/1/human-requests', {
    headers: { 'if-match': await etagOf(h, 1) },
    body: { humanAssigneeId: 11, title: 'And the footer?', estimatedMinutes: 15, publishExternally: true },
  });
  t.equal(second.status, 201, 'a second request is queued while the first is being sent');
  h.service.close();
  answer();
  for (let turn = 0; turn < 10; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  t.strictSame(sent.map((request) => request.title), ['Which tone?'], 'nothing more was sent after close()');
  t.strictSame(h.errors, [], 'and nothing was logged');
  t.equal(h.db.prepare("SELECT count(*) FROM source_publications WHERE state = 'pending'").pluck().get(), 2, 'both stay due for the next service');
});

t.test('SOURCES: a request whose write batch is rolled back is never published', async (t) => {
  const sent: PublishRequest[] = [];
  const provider: SourceProvider = {
    refresh: async () => ({ title: 'Ticket' }),
    publish: async (_itemId, request) => {
      sent.push(request);
      return { ref: `ref-${sent.length}` };
    },
  };
  const fixture = baseFixture();
  fixture.tasks[0]!['sources'] = [{ providerKey: 'tracker', itemId: 'T-1' }];
  const h = harness({ fixture, defaultToken: TOKENS.ada, serviceOptions: { sources: { tracker: provider } } });
  const etag = await etagOf(h, 1);
  // Time for the check every request makes for publications due: it runs right after this
  // request's write, inside the batch, and must not publish what the batch holds.
  h.clock.advance(CHECK_INTERVAL_MS);
  const asked = h.call('POST', '/api/v1/tasks/1/human-requests', {
    headers: { 'if-match': etag },
    body: { humanAssigneeId: 11, title: 'Which tone?', estimatedMinutes: 15, publishExternally: true },
  });
  // Make the batch's COMMIT fail: a foreign key checked only at commit, broken inside the batch.
  h.db.pragma('defer_foreign_keys = ON');
  h.db.prepare('INSERT INTO notes (task_id, client_id, staff_id, text, created_utc) VALUES (999999, 1, 1, ?, 0)').run('orphan');
  const answer = await asked;
  t.equal(answer.status, 500, 'the request of the failed batch is not created');
  for (let turn = 0; turn < 20; turn += 1) await new Promise((resolve) => setImmediate(resolve));
  t.strictSame(sent, [], 'the source never saw it');
  t.equal(h.db.prepare('SELECT count(*) FROM source_publications').pluck().get(), 0, 'nothing left to publish');
});
