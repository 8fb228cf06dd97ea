import t from 'tap';
import { FixedWindowRateLimiter } from '../../lib/auth/rate-limit.js';
import { limiterBurst, limiterStream } from '../../bench/http.js';

/**
 * The limiter's memory with 100,000 distinct clients (the short version of the bench's limiter
 * scenario): the windows held stay bounded by the clients active in the last two windows, a burst
 * is forgotten once its windows have passed, and sweeping never forgets a window still in use.
 */

const WINDOW = 60_000;

t.test('LIMITER MEMORY: a stream of 100,000 distinct clients (6,000 per window, returning clients mixed in) stays bounded', async (t) => {
  const started = Date.now();
  const run = limiterStream(100_000, 10);
  t.comment(`largest ${run.largest}, final ${run.final}, bound ${run.bound}, ${Date.now() - started} ms`);
  t.ok(run.largest <= run.bound, `never more windows than two windows' worth of clients (largest ${run.largest} <= ${run.bound})`);
  t.ok(run.final <= run.bound, `ends bounded (${run.final})`);
  t.ok(run.largest < run.clients / 5, 'far below the number of clients ever seen');
});

t.test('LIMITER MEMORY: a burst of 100,000 clients at one instant is dropped once its windows have passed', async (t) => {
  const run = limiterBurst(100_000, 10);
  t.equal(run.duringBurst, 100_000, 'while the windows are live they are all held (each still limits its client)');
  t.ok(run.final <= run.bound, `one window later only the new clients' windows remain (${run.final} <= ${run.bound})`);
});

t.test('LIMITER MEMORY: ten waves of 10,000 new clients, one window apart, never hold more than two waves', async (t) => {
  const limiter = new FixedWindowRateLimiter(120);
  const WAVE = 10_000;
  let largest = 0;
  for (let wave = 0; wave < 10; wave += 1) {
    for (let index = 0; index < WAVE; index += 1) {
      const client = wave * WAVE + index + 1;
      const now = wave * WINDOW + index; // a wave arrives over 10 s
      limiter.take(client, now);
      limiter.take(client, now + 1);
      largest = Math.max(largest, limiter.size);
    }
  }
  t.ok(largest <= 2 * WAVE, `largest ${largest} <= ${2 * WAVE}`);
  // A quiet period: one client two windows after the last wave.
  limiter.take(1_000_000, 11 * WINDOW);
  t.equal(limiter.size, 1, 'after a quiet window only the newcomer is held');
});

t.test('LIMITER MEMORY: sweeping for 100,000 newcomers never forgets a window still in use', async (t) => {
  const limiter = new FixedWindowRateLimiter(120);
  const busy = 7;
  let allowed = 0;
  for (let i = 0; i < 120; i += 1) if (limiter.take(busy, i).allowed) allowed += 1;
  t.equal(allowed, 120, 'a busy client uses its whole quota at the start');
  // 100,000 distinct clients over the next 30 s: the map doubles many times, so sweeps run.
  for (let client = 1; client <= 100_000; client += 1) limiter.take(1_000 + client, 120 + Math.floor((client * 30_000) / 100_000));
  t.same(limiter.take(busy, 30_000), { allowed: false, remaining: 0, resetSeconds: 30 }, 'the busy client is still limited, to the same window end');
  t.same(limiter.take(busy, WINDOW), { allowed: true, remaining: 119, resetSeconds: 60 }, 'and gets a fresh window when it ends');
  // Past every newcomer's window, one more new client sweeps them all out.
  limiter.take(5, 30_120 + WINDOW);
  t.ok(limiter.size <= 2, `only the live windows remain (${limiter.size})`);
});
