import Database from 'better-sqlite3';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { loadFixture } from '../../lib/fixtures/load.js';
import { baseFixture, TEST_NOW, withTwin } from '../helpers/fixture.js';
import type { RacerData, RacerResult } from './claim-race-worker.js';

/**
 * Shared by the race tests (not a test file itself): separate services, one per worker thread and
 * each with its own connection, on one file database.
 */

const WORKER_URL = new URL('./claim-race-worker.ts', import.meta.url);
/**
 * Node 20 does not run a worker's TypeScript entry through the hooks of `execArgv: ['--import',
 * 'tsx']` (ERR_UNKNOWN_FILE_EXTENSION, even for a dynamic import), so a one-line bootstrap loads
 * the worker script with tsx's own `tsImport`.
 */
const BOOTSTRAP = `import('tsx/esm/api').then(({ tsImport }) => tsImport(${JSON.stringify(WORKER_URL.href)}, ${JSON.stringify(import.meta.url)}))`;

/** A file database in the test's own directory, loaded with the shared world plus a second client of Ada's resource. */
export function fileDatabase(dir: string): string {
  const path = join(dir, 'race.sqlite');
  const fixture = withTwin(baseFixture(), ['tasks:read', 'tasks:update', 'tasks:notes']);
  const db = new Database(path);
  loadFixture(db, fixture, { now: Date.parse(TEST_NOW) });
  db.close();
  return path;
}

export interface Race {
  etags: string[];
  results: RacerResult[];
  logged: unknown[];
  /** From the start signal to the last worker's exit. */
  racedMs: number;
}

/**
 * Starts the racers, waits until every one has read its ETag, releases them together and collects
 * their results. If any worker fails, all are terminated, so none is left waiting for the signal.
 */
export async function race(base: Omit<RacerData, 'index' | 'token' | 'signal'>, tokens: readonly string[]): Promise<Race> {
  const signal = new SharedArrayBuffer(4);
  const flag = new Int32Array(signal);
  const etags: string[] = [];
  const results: RacerResult[] = [];
  const logged: unknown[] = [];
  let startAll: () => void = () => undefined;
  const allReady = new Promise<void>((resolve) => {
    startAll = resolve;
  });
  const workers = tokens.map((token, index) => {
    const workerData: RacerData = { ...base, index, token, signal };
    return new Worker(BOOTSTRAP, { eval: true, execArgv: [], workerData });
  });
  const finished = workers.map((worker, index) => new Promise<void>((resolve, reject) => {
    worker.on('message', (message: { type: string; etag?: string; results?: RacerResult[]; entry?: unknown }) => {
      if (message.type === 'ready') {
        etags.push(message.etag as string);
        if (etags.length === workers.length) startAll();
      } else if (message.type === 'done') {
        results.push(...(message.results ?? []));
      } else if (message.type === 'log') {
        logged.push(message.entry);
      }
    });
    worker.on('error', reject);
    worker.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`worker ${index} exited with ${code}`))));
  }));
  try {
    // A worker that fails before it is ready rejects this race; one that ends early without failing cannot happen.
    await Promise.race([allReady, Promise.all(finished)]);
    const startedAt = Date.now();
    Atomics.store(flag, 0, 1);
    Atomics.notify(flag, 0);
    await Promise.all(finished);
    return { etags, results, logged, racedMs: Date.now() - startedAt };
  } catch (error) {
    await Promise.all(workers.map((worker) => worker.terminate()));
    throw error;
  }
}
