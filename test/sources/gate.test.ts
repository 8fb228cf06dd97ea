import t from 'tap';
import { API } from '../helpers/api.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';
import { harness } from '../helpers/service.js';
import { REFRESHES_AT_ONCE } from '../../lib/sources/refresher.js';
import type { SourceProvider } from '../../lib/sources/provider.js';
import { CallGate } from '../../lib/sources/gate.js';

/**
 * A provider is asked about at most REFRESHES_AT_ONCE items at a time, however many an offer list
 * finds stale; the others wait their turn within their deadline.
 */

const TIMEOUT_MS = 5_000;

/** Ada's task 1 linked to `count` items of one provider whose refreshes wait to be let go. */
function manyItemsWorld(count: number) {
  const pending: { itemId: string; answer: () => void }[] = [];
  let running = 0;
  let most = 0;
  const asked: string[] = [];
  const provider: SourceProvider = {
    refresh: (itemId) => {
      asked.push(itemId);
      running += 1;
      most = Math.max(most, running);
      return new Promise((resolve) => {
        pending.push({ itemId, answer: () => {
          running -= 1;
          resolve({ title: `Item ${itemId}` });
        } });
      });
    },
    publish: async () => ({ ref: 'r' }),
  };
  const fixture = baseFixture();
  fixture.tasks[0]!['sources'] = Array.from({ length: count }, (_, index) => ({ providerKey: 'tracker', itemId: `T-${index}` }));
  const h = harness({ fixture, defaultToken: TOKENS.ada, serviceOptions: { sources: { tracker: provider }, sourceTimeoutMs: TIMEOUT_MS } });
  return { h, pending, asked, most: () => most };
}

const turns = async (count: number) => {
  for (let turn = 0; turn < count; turn += 1) await new Promise((resolve) => setImmediate(resolve));
};

t.test('SOURCES: an offer list with 40 stale items asks the provider about 16 at a time, and about every one', async (t) => {
  const { h, pending, asked, most } = manyItemsWorld(40);
  const offer = h.call('GET', `${API}/tasks/available`);
  await turns(5);
  t.equal(asked.length, REFRESHES_AT_ONCE, 'the first 16 asked, the rest wait');
  while (pending.length > 0) {
    for (const call of pending.splice(0)) call.answer();
    await turns(5);
  }
  const answer = await offer;
  t.equal(answer.status, 200);
  t.equal(new Set(asked).size, 40, 'every item asked once');
  t.equal(most(), REFRESHES_AT_ONCE, 'never more than 16 at once');
  t.ok((answer.json as { id: number }[]).some((task) => task.id === 1), 'every item refreshed: the task is offered');
  t.strictSame(h.errors, []);
});

t.test('SOURCES: items still waiting for a slot at the deadline fail like items that did not answer, and are never asked', async (t) => {
  const { h, asked } = manyItemsWorld(20);
  const offer = h.call('GET', `${API}/tasks/available`);
  await turns(5);
  t.equal(asked.length, REFRESHES_AT_ONCE);
  h.clock.advance(TIMEOUT_MS);
  const answer = await offer;
  t.equal(answer.status, 200, 'answered at the deadline');
  t.notOk((answer.json as { id: number }[]).some((task) => task.id === 1), 'its items failed: the task is not offered');
  t.equal(asked.length, REFRESHES_AT_ONCE, 'the 4 that never got a slot were never asked');
  t.equal(h.errors.length, 20, 'each failure logged');

  // The slots of calls that never settle are free again: a later offer asks afresh.
  h.clock.advance(15_001);
  void h.call('GET', `${API}/tasks/available`);
  await turns(5);
  t.equal(asked.length, 2 * REFRESHES_AT_ONCE, 'another 16 asked at once');
});

t.test('SOURCES: the call gate serves first come first served: a call arriving while others wait for a freed slot goes after them', async (t) => {
  const gate = new CallGate(1);
  const signal = new AbortController().signal;
  const started: string[] = [];
  let finishA = (): void => undefined;
  const a = gate.run(signal, () => {
    started.push('A');
    return new Promise<void>((resolve) => {
      finishA = resolve;
    });
  });
  const b = gate.run(signal, () => {
    started.push('B');
  });
  finishA();
  await a;
  // A few microtasks: A's slot is free, and B not yet started in it (the gate starts waiting
  // calls in a later turn of the event loop).
  for (let turn = 0; turn < 5; turn += 1) await Promise.resolve();
  const c = gate.run(signal, () => {
    started.push('C');
  });
  await Promise.all([b, c]);
  t.strictSame(started, ['A', 'B', 'C'], 'C does not overtake B');
});
