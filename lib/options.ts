import type { Logger } from './logger.js';
import { knownOptions } from './option-names.js';
import type { SourceProvider } from './sources/provider.js';
import { isDatabase, type Db } from './store/open.js';
import { callQuietly } from './quiet-call.js';
import { systemClock, type Clock } from './time/clock.js';

/** Options of `createService`. */
export interface ServiceOptions {
  /** A file path, `':memory:'`, or an open better-sqlite3 Database (which the caller keeps owning). */
  readonly db: string | Db;
  /** Source of the current time; defaults to the system clock. */
  readonly clock?: Clock;
  /** Requests per client per 60-second window; defaults to 120. */
  readonly rateLimit?: number;
  /** Linked-source providers keyed by providerKey. */
  readonly sources?: Readonly<Record<string, SourceProvider>>;
  /** Receives unexpected errors (with their traceId); defaults to JSON lines on stderr. */
  readonly logger?: Logger;
  /** How long a provider call may take before it counts as failed; default 5000 ms. */
  readonly sourceTimeoutMs?: number;
  /** How old a source refresh may be when work is offered; default 15000 ms. Claims always refresh. */
  readonly sourceMaxAgeMs?: number;
}

export interface ResolvedOptions {
  readonly db: string | Db;
  readonly clock: Clock;
  readonly rateLimit: number;
  readonly sources: ReadonlyMap<string, SourceProvider>;
  readonly logger: Logger;
  readonly sourceTimeoutMs: number;
  readonly sourceMaxAgeMs: number;
}

const KNOWN = ['db', 'clock', 'rateLimit', 'sources', 'logger', 'sourceTimeoutMs', 'sourceMaxAgeMs'] as const;

function milliseconds(value: unknown, name: string, fallback: number, minimum: number): number {
  if (value === undefined) return fallback;
  if (!(Number.isInteger(value) && (value as number) >= minimum && (value as number) <= 3_600_000)) {
    throw new TypeError(`createService: options.${name} must be an integer number of milliseconds from ${minimum} to 3600000`);
  }
  return value as number;
}

const write = (level: string, entry: Record<string, unknown>): void => {
  process.stderr.write(`${JSON.stringify({ level, time: new Date().toISOString(), ...entry })}\n`);
};

const stderrLogger: Logger = {
  error: (entry) => write('error', entry),
  info: (entry) => write('info', entry),
};

const hasMethod = (value: object, name: string): boolean =>
  typeof (value as Record<string, unknown>)[name] === 'function';

const optionalMethod = (value: object, name: string): boolean =>
  (value as Record<string, unknown>)[name] === undefined || hasMethod(value, name);

/**
 * The latest instant the clock may answer, 9997-12-31T23:59:59.999Z: London wall times end with
 * 9999, and plans look a year ahead of now (and a working day may end at the next midnight).
 */
const LAST_INSTANT_MS = 253_339_228_799_999;

/**
 * One call at construction: a clock answering anything but epoch milliseconds from 1970 to the
 * end of 9997 would fail every request (microseconds by mistake, say).
 */
export function answersEpochMs(clock: Clock): boolean {
  try {
    const sample: unknown = clock.now();
    return typeof sample === 'number' && sample >= 0 && sample <= LAST_INSTANT_MS;
  } catch {
    return false;
  }
}

/**
 * The embedder's clock read in whole milliseconds, as instants are stored and shown: a fraction
 * (a clock built on `performance.now()`, say) would let a lease outlive the `expiresUtc` it was
 * given by up to a millisecond.
 */
function wholeMilliseconds(clock: Clock): Clock {
  return {
    now: () => Math.floor(clock.now()),
    // Read at each use, as the embedder's own object would be: one may add or replace it later.
    get after() {
      const { after } = clock;
      return after === undefined ? undefined : (ms: number, callback: () => void) => after.call(clock, ms, callback);
    },
  };
}

/**
 * The embedder's logger, made safe to call anywhere: a throwing sink must neither change an
 * answer nor undo what was just recorded (a publication logged as done, then retried as failed).
 */
function guarded(logger: Logger): Logger {
  const call = (method: ((entry: Record<string, unknown>) => void) | undefined, entry: Record<string, unknown>): void => {
    // An async sink shipping entries elsewhere may reject: that must not end the process either.
    callQuietly(() => method?.call(logger, entry));
  };
  return {
    error: (entry) => call(logger.error, entry),
    info: (entry) => call(logger.info, entry),
    // Absent when the embedder has none: the service then skips work done only for debug entries.
    ...(typeof logger.debug === 'function' ? { debug: (entry: Record<string, unknown>) => call(logger.debug, entry) } : {}),
  };
}

/** Checks options once, at construction, with exact messages (documented in the README). */
export function resolveOptions(options: unknown): ResolvedOptions {
  const given = knownOptions(options, 'createService', KNOWN);
  const { db, clock, rateLimit, sources, logger, sourceTimeoutMs, sourceMaxAgeMs } = given;
  // A NUL cannot be in a file name: node would throw its own message for it, later.
  if (!((typeof db === 'string' && db.length > 0 && !db.includes('\0')) || isDatabase(db))) {
    throw new TypeError("createService: options.db must be a file path, ':memory:' or an open better-sqlite3 Database");
  }
  if (clock !== undefined && !(typeof clock === 'object' && clock !== null && hasMethod(clock, 'now') && answersEpochMs(clock as Clock))) {
    throw new TypeError('createService: options.clock must be an object with a now() method returning epoch milliseconds');
  }
  if (clock !== undefined && !optionalMethod(clock, 'after')) throw new TypeError('createService: options.clock.after must be a function');
  if (rateLimit !== undefined && !(Number.isInteger(rateLimit) && (rateLimit as number) >= 1 && (rateLimit as number) <= 1e9)) {
    throw new TypeError('createService: options.rateLimit must be an integer from 1 to 1000000000');
  }
  const providers = new Map<string, SourceProvider>();
  if (sources !== undefined) {
    // A Map has no own entries to read: its providers would be ignored without a word.
    if (typeof sources !== 'object' || sources === null || Array.isArray(sources) || sources instanceof Map) {
      throw new TypeError('createService: options.sources must be an object mapping provider keys to providers');
    }
    for (const [key, provider] of Object.entries(sources as Record<string, unknown>)) {
      if (typeof provider !== 'object' || provider === null || !hasMethod(provider, 'refresh') || !hasMethod(provider, 'publish')) {
        throw new TypeError(`createService: options.sources.${key} must have refresh() and publish() methods`);
      }
      providers.set(key, provider as SourceProvider);
    }
  }
  if (logger !== undefined && (typeof logger !== 'object' || logger === null || !hasMethod(logger, 'error') ||
      !optionalMethod(logger, 'info') || !optionalMethod(logger, 'debug'))) {
    throw new TypeError('createService: options.logger must be an object with an error() method (info() and debug() optional)');
  }
  return {
    db: db as string | Db,
    clock: clock === undefined ? systemClock : wholeMilliseconds(clock as Clock),
    rateLimit: (rateLimit as number | undefined) ?? 120,
    sources: providers,
    logger: logger === undefined ? stderrLogger : guarded(logger as Logger),
    sourceTimeoutMs: milliseconds(sourceTimeoutMs, 'sourceTimeoutMs', 5000, 1),
    sourceMaxAgeMs: milliseconds(sourceMaxAgeMs, 'sourceMaxAgeMs', 15_000, 0),
  };
}
