import t from 'tap';
import Database from 'better-sqlite3';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createService } from '../../lib/service.js';
import { resolveOptions } from '../../lib/options.js';
import { systemClock } from '../../lib/time/clock.js';
import { manualClock } from '../../lib/time/clock.js';
import type { TapTest } from '../helpers/api.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';
import { loadFixture } from '../../lib/fixtures/load.js';

// lib/options.ts: each invalid option is a TypeError with its exact message, thrown by createService.

const DB_MESSAGE = "createService: options.db must be a file path, ':memory:' or an open better-sqlite3 Database";
const CLOCK_MESSAGE = 'createService: options.clock must be an object with a now() method returning epoch milliseconds';
const RATE_MESSAGE = 'createService: options.rateLimit must be an integer from 1 to 1000000000';
const SOURCES_MESSAGE = 'createService: options.sources must be an object mapping provider keys to providers';
const LOGGER_MESSAGE = 'createService: options.logger must be an object with an error() method (info() and debug() optional)';

const provider = { refresh: async () => ({ title: 'x' }), publish: async () => ({ ref: 'r' }) };

function expectTypeError(tt: TapTest, options: unknown, message: string, what: string): void {
  let thrown: unknown;
  try {
    createService(options as Parameters<typeof createService>[0]).close();
  } catch (error) {
    thrown = error;
  }
  // Compared exactly: tap's throws() matches messages as substrings.
  tt.ok(thrown instanceof TypeError, `${what}: a TypeError`);
  tt.equal((thrown as Error | undefined)?.message, message, `${what}: the exact message`);
}

t.test('OPTIONS: options that are not an object throw TypeError', async (t) => {
  for (const [value, what] of [[undefined, 'undefined'], [null, 'null'], ['x.db', 'a string'], [[], 'an array'], [42, 'a number']] as const) {
    expectTypeError(t, value, 'createService: options must be an object', what);
  }
});

t.test('OPTIONS: an unknown option throws TypeError naming it', async (t) => {
  expectTypeError(t, { db: ':memory:', ratelimit: 5 }, 'createService: unknown option "ratelimit"', 'misspelt rateLimit');
  expectTypeError(t, { db: ':memory:', port: 8080 }, 'createService: unknown option "port"', 'port');
});

t.test('OPTIONS: a bad db throws TypeError', async (t) => {
  const closed = new Database(':memory:');
  closed.close();
  for (const [db, what] of [[undefined, 'missing'], ['', 'empty path'], ['/tmp/a\0b.sqlite', 'a path holding NUL'], [42, 'a number'], [{}, 'an object'], [closed, 'a closed Database']] as const) {
    expectTypeError(t, { db }, DB_MESSAGE, what);
  }
});

t.test('OPTIONS: a bad clock throws TypeError', async (t) => {
  for (const [clock, what] of [
    [null, 'null'], [() => 0, 'a function'], [{}, 'no now()'], [{ now: 5 }, 'now not a function'], [Date.now(), 'a number'],
    [{ now: () => 'x' }, 'now() answering a string'], [{ now: () => Number.NaN }, 'now() answering NaN'],
    [{ now: () => { throw new Error('no time'); } }, 'now() throwing'],
    [{ now: () => -1e20 }, 'now() before 1970'], [{ now: () => -1 }, 'now() a millisecond before 1970'],
    [{ now: () => Date.now() * 1000 }, 'now() in microseconds'], [{ now: () => 253_339_228_800_000 }, 'now() in the year 9998 (plans look a year ahead)'],
  ] as const) {
    expectTypeError(t, { db: ':memory:', clock }, CLOCK_MESSAGE, what);
  }
});

t.test('OPTIONS: a bad rateLimit throws TypeError', async (t) => {
  for (const [rateLimit, what] of [[0, '0'], [1.5, '1.5'], ['10', "'10'"], [-1, '-1'], [Number.NaN, 'NaN'], [Infinity, 'Infinity'], [1e9 + 1, '1e9 + 1'], [null, 'null']] as const) {
    expectTypeError(t, { db: ':memory:', rateLimit }, RATE_MESSAGE, what);
  }
});

t.test('OPTIONS: bad sources throw TypeError', async (t) => {
  for (const [sources, what] of [[null, 'null'], [[], 'an array'], ['http', 'a string'], [new Map([['http', provider]]), 'a Map (its entries are not own properties)']] as const) {
    expectTypeError(t, { db: ':memory:', sources }, SOURCES_MESSAGE, what);
  }
  expectTypeError(t, { db: ':memory:', sources: { http: {} } }, 'createService: options.sources.http must have refresh() and publish() methods', 'an empty provider');
  expectTypeError(t, { db: ':memory:', sources: { jira: { refresh: provider.refresh } } }, 'createService: options.sources.jira must have refresh() and publish() methods', 'no publish()');
  expectTypeError(t, { db: ':memory:', sources: { ok: provider, bad: null } }, 'createService: options.sources.bad must have refresh() and publish() methods', 'a null provider');
});

t.test('OPTIONS: a bad logger throws TypeError', async (t) => {
  for (const [logger, what] of [
    [null, 'null'], [console.error, 'a function'], [{}, 'no error()'], [{ error: 'x' }, 'error not a function'],
    [{ error: () => undefined, info: 5 }, 'info not a function'], [{ error: () => undefined, debug: 'x' }, 'debug not a function'],
  ] as const) {
    expectTypeError(t, { db: ':memory:', logger }, LOGGER_MESSAGE, what);
  }
});

t.test('OPTIONS: a bad sourceTimeoutMs or sourceMaxAgeMs throws TypeError naming its range; the bounds themselves are accepted', async (t) => {
  for (const [sourceTimeoutMs, what] of [[0, '0'], [1.5, '1.5'], [3_600_001, 'over an hour'], ['5000', "'5000'"], [Number.NaN, 'NaN'], [null, 'null']] as const) {
    expectTypeError(t, { db: ':memory:', sourceTimeoutMs }, 'createService: options.sourceTimeoutMs must be an integer number of milliseconds from 1 to 3600000', `sourceTimeoutMs ${what}`);
  }
  for (const [sourceMaxAgeMs, what] of [[-1, '-1'], [0.5, '0.5'], [3_600_001, 'over an hour'], [Infinity, 'Infinity']] as const) {
    expectTypeError(t, { db: ':memory:', sourceMaxAgeMs }, 'createService: options.sourceMaxAgeMs must be an integer number of milliseconds from 0 to 3600000', `sourceMaxAgeMs ${what}`);
  }
  for (const options of [{ sourceTimeoutMs: 1 }, { sourceTimeoutMs: 3_600_000 }, { sourceMaxAgeMs: 0 }, { sourceMaxAgeMs: 3_600_000 }]) {
    t.doesNotThrow(() => createService({ db: ':memory:', ...options }).close(), JSON.stringify(options));
  }
  const defaults = resolveOptions({ db: ':memory:' });
  t.equal(defaults.sourceTimeoutMs, 5000, 'the default timeout');
  t.equal(defaults.sourceMaxAgeMs, 15_000, 'the default age');
});

t.test('OPTIONS: valid options construct a service', async (t) => {
  const minimal = createService({ db: ':memory:' });
  t.type(minimal.handle, 'function');
  minimal.close();
  const db = new Database(':memory:');
  const full = createService({
    db,
    clock: manualClock('2026-11-16T10:00:00Z'),
    rateLimit: 1,
    sources: { http: provider },
    logger: { error: () => undefined, debug: () => undefined },
  });
  full.close();
  t.ok(db.open, 'a Database passed in stays open after close()');
  db.close();
  t.doesNotThrow(() => createService({ db: ':memory:', rateLimit: 1e9, clock: undefined, logger: undefined }).close(), 'undefined means the default');
});

t.test('OPTIONS: defaults are the system clock, 120 requests, no sources', async (t) => {
  const resolved = resolveOptions({ db: ':memory:' });
  t.equal(resolved.clock, systemClock);
  t.equal(resolved.rateLimit, 120);
  t.equal(resolved.sources.size, 0);
  t.type(resolved.logger.error, 'function');
  const withSources = resolveOptions({ db: ':memory:', sources: { http: provider } });
  t.equal(withSources.sources.get('http'), provider);
});

t.test('OPTIONS: a db path in directories that do not exist yet creates them, as the command line does', async (t) => {
  const dir = t.testdir();
  const path = join(dir, 'data', 'nested', 'tasks.sqlite');
  const service = createService({ db: path });
  service.close();
  t.ok(existsSync(path), 'the database file is there');
});

t.test('OPTIONS: a clock at the end of 9997, the latest it may be, serves the offer and claims (a year of plan still fits, round-the-clock calendars too)', async (t) => {
  const db = new Database(':memory:');
  const clock = manualClock('9997-12-31T23:59:59.999Z');
  const fixture = baseFixture();
  const ada = fixture.staff.find((row) => row['id'] === 10) as Record<string, unknown>;
  ada['calendar'] = Object.fromEntries(['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'].map((day) => [day, [['00:00', '24:00']]]));
  loadFixture(db, fixture, { now: clock.now() });
  const service = createService({ db, clock });
  t.teardown(() => { service.close(); db.close(); });
  const adaBot = { authorization: `Bearer ${TOKENS.ada}` };
  const offer = await service.handle({ method: 'GET', url: '/api/v1/tasks/available', headers: adaBot });
  t.equal(offer.status, 200, offer.body ?? '');
  const read = await service.handle({ method: 'GET', url: '/api/v1/tasks/3', headers: adaBot });
  const claim = await service.handle({ method: 'POST', url: '/api/v1/tasks/3/claim', headers: { ...adaBot, 'if-match': read.headers['etag'] as string, 'idempotency-key': 'late' } });
  t.equal(claim.status, 200, claim.body ?? '');
});
