import { harness, type Harness } from './service.js';
import { baseFixture, TOKENS } from './fixture.js';
import { etagOf, type TapTest } from './api.js';
import type { SourceProvider } from '../../lib/sources/provider.js';

/**
 * The shared world acting as ada-bot, task 1 linked to tracker item T-1 served by `provider`,
 * after Ada asked Grace a question to be published there (the 201 is checked).
 */
export async function askedToPublish(t: TapTest, provider: SourceProvider): Promise<Harness> {
  const fixture = baseFixture();
  fixture.tasks[0]!['sources'] = [{ providerKey: 'tracker', itemId: 'T-1' }];
  const h = harness({ fixture, defaultToken: TOKENS.ada, serviceOptions: { sources: { tracker: provider } } });
  const created = await h.call('POST', '/api/v1/tasks/1/human-requests', {
    headers: { 'if-match': await etagOf(h, 1) },
    body: { humanAssigneeId: 11, title: 'Which tone?', estimatedMinutes: 15, publishExternally: true },
  });
  t.equal(created.status, 201);
  return h;
}
