import t from 'tap';
import { manualClock, systemClock, type Clock } from '../../lib/time/clock.js';
import { createService } from '../../lib/service.js';

t.test('systemClock reports the real current instant', async (t) => {
  const before = Date.now();
  const now = systemClock.now();
  const after = Date.now();
  t.ok(now >= before && now <= after);
});

t.test('manualClock starts at a numeric epoch-ms instant and does not move by itself', async (t) => {
  const clock = manualClock(1_700_000_000_000);
  t.equal(clock.now(), 1_700_000_000_000);
  t.equal(clock.now(), 1_700_000_000_000);
});

t.test('manualClock accepts an ISO instant with Z, with or without a fraction', async (t) => {
  t.equal(manualClock('2026-03-29T00:30:00Z').now(), Date.UTC(2026, 2, 29, 0, 30));
  t.equal(manualClock('2026-03-29T00:30:00.250Z').now(), Date.UTC(2026, 2, 29, 0, 30, 0, 250));
  t.equal(manualClock('2026-03-29T00:30:00.123456789Z').now(), Date.UTC(2026, 2, 29, 0, 30, 0, 123));
});

t.test('manualClock accepts an ISO instant with a +HH:MM or -HH:MM offset', async (t) => {
  t.equal(manualClock('2026-10-25T01:30:00+01:00').now(), Date.UTC(2026, 9, 25, 0, 30));
  t.equal(manualClock('2026-01-15T07:00:00-05:00').now(), Date.UTC(2026, 0, 15, 12, 0));
  t.equal(manualClock('2026-01-01T00:30:00+05:30').now(), Date.UTC(2025, 11, 31, 19, 0));
});

t.test('manualClock accepts a Date, and refuses an invalid one', async (t) => {
  t.equal(manualClock(new Date(0)).now(), 0);
  const clock = manualClock(new Date('2026-03-29T00:30:00Z'));
  t.equal(clock.now(), Date.UTC(2026, 2, 29, 0, 30));
  clock.set(new Date(Date.UTC(2026, 9, 25)));
  t.equal(clock.now(), Date.UTC(2026, 9, 25));
  t.throws(() => manualClock(new Date('nonsense')), new TypeError('invalid instant: NaN'));
});

t.test('manualClock throws TypeError on an invalid start instant', async (t) => {
  for (const bad of [
    '2026-03-29T00:30:00',
    '2026-03-29',
    '2026-02-30T00:00:00Z',
    '2026-03-29T24:00:00Z',
    '2026-03-29T00:30:00+0100',
    '0000-01-01T00:30:00+01:00',
    '9999-12-31T23:30:00-01:00',
    '2026-03-29 00:30:00Z',
    'yesterday',
    '',
  ]) {
    t.throws(() => manualClock(bad), TypeError, JSON.stringify(bad));
  }
  t.throws(() => manualClock(Number.NaN), TypeError);
  t.throws(() => manualClock(Number.POSITIVE_INFINITY), TypeError);
});

t.test('manualClock.set jumps to a number or ISO instant and rejects invalid ones without moving', async (t) => {
  const clock = manualClock(0);
  clock.set('2027-10-31T01:00:00Z');
  t.equal(clock.now(), Date.UTC(2027, 9, 31, 1));
  clock.set(42);
  t.equal(clock.now(), 42);
  t.throws(() => clock.set('not a date'), TypeError);
  t.throws(() => clock.set(Number.NaN), TypeError);
  t.equal(clock.now(), 42);
});

t.test('manualClock.advance moves by the given milliseconds, backwards when negative', async (t) => {
  const clock = manualClock('2026-03-29T00:59:59Z');
  clock.advance(1000);
  t.equal(clock.now(), Date.UTC(2026, 2, 29, 1));
  clock.advance(90 * 60_000);
  t.equal(clock.now(), Date.UTC(2026, 2, 29, 2, 30));
  clock.advance(-30 * 60_000);
  t.equal(clock.now(), Date.UTC(2026, 2, 29, 2));
});

t.test('manualClock.advance rejects a non-finite step with TypeError', async (t) => {
  const clock = manualClock(0);
  t.throws(() => clock.advance(Number.NaN), TypeError);
  t.throws(() => clock.advance(Number.POSITIVE_INFINITY), TypeError);
  t.equal(clock.now(), 0);
});

t.test('independent manual clocks do not share state', async (t) => {
  const a = manualClock(0);
  const b = manualClock(0);
  a.advance(5);
  t.equal(a.now(), 5);
  t.equal(b.now(), 0);
});

t.test('manualClock.after fires when set or advance reach it, in order of due time, once, unless cancelled', async (t) => {
  const clock = manualClock(0);
  const fired: string[] = [];
  clock.after(30, () => fired.push(`b at ${clock.now()}`));
  clock.after(10, () => fired.push(`a at ${clock.now()}`));
  const cancel = clock.after(20, () => fired.push('cancelled'));
  cancel();
  clock.advance(9);
  t.strictSame(fired, [], 'nothing is due yet');
  clock.advance(100);
  t.strictSame(fired, ['a at 109', 'b at 109'], 'both, earliest first, with the clock already moved');
  clock.advance(100);
  t.equal(fired.length, 2, 'each fires once');
  clock.after(5, () => fired.push('set'));
  clock.set(209);
  t.strictSame(fired.slice(2), [], 'set short of it fires nothing');
  clock.set(1_000);
  t.strictSame(fired.slice(2), ['set'], 'set past it fires it');
  clock.after(-5, () => fired.push('negative'));
  clock.advance(0);
  t.strictSame(fired.slice(3), ['negative'], 'a negative delay is due at once');
});

t.test('createService takes a clock with or without after(); after must be a function when given', async (t) => {
  t.doesNotThrow(() => createService({ db: ':memory:', clock: { now: () => 0 } }).close());
  t.doesNotThrow(() => createService({ db: ':memory:', clock: manualClock(0) }).close());
  t.throws(() => createService({ db: ':memory:', clock: { now: () => 0, after: 5 } as unknown as Clock }), TypeError);
  t.throws(() => createService({ db: ':memory:', clock: { now: () => 0, after: 5 } as unknown as Clock }),
    new TypeError('createService: options.clock.after must be a function'), 'with a message that names after');
});

t.test('manualClock: a timer callback that throws stops none of the other due timers; the error still surfaces', async (t) => {
  const clock = manualClock(0);
  const fired: number[] = [];
  clock.after(10, () => { throw new Error('first'); });
  clock.after(20, () => fired.push(20));
  t.throws(() => clock.advance(30), /first/, 'advance reports the failure');
  t.strictSame(fired, [20], 'the timer due after it fired anyway');
  t.equal(clock.now(), 30, 'and the clock moved');
  clock.after(1, () => { throw new Error('a'); });
  clock.after(2, () => { throw new Error('b'); });
  t.throws(() => clock.advance(5), AggregateError, 'several failures come together');
});
