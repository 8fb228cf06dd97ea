import t from 'tap';
import { FixedWindowRateLimiter } from '../../lib/auth/rate-limit.js';

// Unit tests of the limiter behind contract 10 (the HTTP side is test/api/pipeline-rate-limit.test.ts).

const WINDOW = 60_000;

t.test('RATE-LIMITER: a fixed window allows `limit` requests, then refuses until the window ends', async (t) => {
  const limiter = new FixedWindowRateLimiter(2);
  t.equal(limiter.limit, 2);
  t.equal(limiter.windowMs, WINDOW);
  t.same(limiter.take(1, 1_000), { allowed: true, remaining: 1, resetSeconds: 60 });
  t.same(limiter.take(1, 1_500), { allowed: true, remaining: 0, resetSeconds: 60 }, '59.5 s left rounds up');
  t.same(limiter.take(1, 2_000), { allowed: false, remaining: 0, resetSeconds: 59 });
  t.same(limiter.take(1, 2_800), { allowed: false, remaining: 0, resetSeconds: 59 }, '58.2 s left rounds up, not to the nearest');
  t.same(limiter.take(1, 1_000 + WINDOW - 1), { allowed: false, remaining: 0, resetSeconds: 1 }, 'at least 1 s');
  t.same(limiter.take(1, 1_000 + WINDOW), { allowed: true, remaining: 1, resetSeconds: 60 }, 'a new window at the end');
});

t.test('RATE-LIMITER: current() reads a client\'s quota without counting, and a full window when none is open', async (t) => {
  const limiter = new FixedWindowRateLimiter(2);
  t.same(limiter.current(1, 0), { remaining: 2, resetSeconds: 60 }, 'no window yet');
  limiter.take(1, 1_000);
  t.same(limiter.current(1, 31_000), { remaining: 1, resetSeconds: 30 });
  t.same(limiter.current(1, 31_000), { remaining: 1, resetSeconds: 30 }, 'reading twice counted nothing');
  t.same(limiter.take(1, 31_000), { allowed: true, remaining: 0, resetSeconds: 30 });
  t.same(limiter.current(1, 1_000 + WINDOW - 1), { remaining: 0, resetSeconds: 1 }, 'at least 1 s');
  t.same(limiter.current(1, 1_000 + WINDOW), { remaining: 2, resetSeconds: 60 }, 'the window is over');
});

t.test('RATE-LIMITER: refused requests do not count', async (t) => {
  const limiter = new FixedWindowRateLimiter(1);
  t.ok(limiter.take(7, 0).allowed);
  for (let i = 1; i <= 100; i++) t.equal(limiter.take(7, i).allowed, false);
  t.same(limiter.take(7, WINDOW), { allowed: true, remaining: 0, resetSeconds: 60 });
});

t.test('RATE-LIMITER: each client has its own window, started by its own first request', async (t) => {
  const limiter = new FixedWindowRateLimiter(1);
  t.ok(limiter.take(1, 0).allowed);
  t.notOk(limiter.take(1, 10_000).allowed);
  t.same(limiter.take(2, 10_000), { allowed: true, remaining: 0, resetSeconds: 60 });
  t.ok(limiter.take(1, WINDOW).allowed, 'client 1 renews at 60 s');
  t.notOk(limiter.take(2, WINDOW).allowed, 'client 2 is still in its window');
  t.ok(limiter.take(2, 10_000 + WINDOW).allowed);
});

t.test('RATE-LIMITER: 100,000 distinct clients over time keep size bounded', async (t) => {
  const limiter = new FixedWindowRateLimiter(120);
  // One new client every 10 ms: 6,000 clients start a window in any 60 s.
  const step = 10;
  const perWindow = WINDOW / step;
  let largest = 0;
  for (let client = 1; client <= 100_000; client++) {
    limiter.take(client, client * step);
    largest = Math.max(largest, limiter.size);
  }
  t.ok(largest <= 2 * perWindow + 1, `never more than twice the clients of a window (largest ${largest})`);
  t.ok(limiter.size <= 2 * perWindow + 1, `ends bounded (${limiter.size})`);
});

t.test('RATE-LIMITER: a burst of 100,000 clients is forgotten once its windows have passed', async (t) => {
  const limiter = new FixedWindowRateLimiter(120);
  for (let client = 1; client <= 100_000; client++) limiter.take(client, 0);
  t.equal(limiter.size, 100_000, 'all windows are live');
  // A few clients later, past the burst's windows: the expired windows are dropped.
  for (let client = 1; client <= 10; client++) limiter.take(1_000_000 + client, WINDOW + client);
  t.ok(limiter.size <= 10, `only the live windows remain (${limiter.size})`);
  // Returning clients of the burst get a fresh window.
  t.same(limiter.take(1, 2 * WINDOW), { allowed: true, remaining: 119, resetSeconds: 60 });
});

t.test('RATE-LIMITER: a clock set back keeps the window\'s count and moves its start back, never past the window\'s length', async (t) => {
  const limiter = new FixedWindowRateLimiter(2);
  t.ok(limiter.take(1, 10_000).allowed);
  t.ok(limiter.take(1, 10_000).allowed);
  t.same(limiter.take(1, 9_999), { allowed: false, remaining: 0, resetSeconds: 60 }, 'a step back of 1 ms hands out no fresh quota');
  t.same(limiter.take(1, 9_999 - 3_600_000), { allowed: false, remaining: 0, resetSeconds: 60 }, 'nor does one of an hour, and the wait stays 60 s');
  t.same(limiter.current(1, 9_999 - 3_600_000 + 30_000), { remaining: 0, resetSeconds: 30 });
  t.same(limiter.take(1, 9_999 - 3_600_000 + WINDOW), { allowed: true, remaining: 1, resetSeconds: 60 }, 'a new window a window after the step');
});

t.test('RATE-LIMITER: after a clock set back, windows of clients not seen since still go within a window length', async (t) => {
  const limiter = new FixedWindowRateLimiter(120);
  for (let client = 1; client <= 100; client++) limiter.take(client, 3_600_000);
  t.equal(limiter.size, 100);
  limiter.take(1_000, 0); // an hour back: a new client's first request sweeps
  limiter.take(1_001, WINDOW); // a window later, the next sweep
  t.equal(limiter.size, 1, 'only the client whose window is open now is held');
});
