/**
 * Where the durable PATCH row's slowest answers come from. Run: `npm run bench:write-tail`
 * (WRITE_TAIL_SECONDS, default 5 s per round). Figures go to stdout and to
 * bench/results/write-tail.json.
 *
 * Two measurements, both in one process on files in the system's temporary folder:
 * - the disk: 2,000 fdatasync calls after an 8 KiB write that rewrites a file already written
 *   (as a WAL that has started over is), and 2,000 after one that extends a file;
 * - the service without HTTP: 32 loops, each in an organisation of its own of the HTTP bench's
 *   shape (50 agents x 20 tasks), alternating a GET for the ETag and a PATCH with If-Match and
 *   Idempotency-Key, as the HTTP bench's PATCH row does, with SQLite's automatic WAL checkpoint on
 *   (the default, 1,000 pages) and off: three rounds each after a warm-up round, the setting that
 *   goes first changing from pair to pair, each round on a fresh copy of the same file.
 *
 * Without HTTP, autocannon and the kernel's network path, what remains is the service's own work
 * and the disk.
 */
import Database from 'better-sqlite3';
import { closeSync, copyFileSync, fdatasyncSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHistogram, performance, type RecordableHistogram } from 'node:perf_hooks';
import { createService } from '../lib/service.js';
import { generateOrganisation, type GeneratedOrganisation } from './generate.js';
import { positiveInteger } from './http.js';

const SECONDS = positiveInteger('WRITE_TAIL_SECONDS', 5);
const LOOPS = 32;
const ROUNDS = 3;
const FSYNCS = 2_000;
const BLOCK_BYTES = 8192;
const REWRITTEN_BLOCKS = 100;

const ms = (nanoseconds: number): number => Math.round(nanoseconds / 1e4) / 100;
const summary = (histogram: RecordableHistogram) => ({
  p50Ms: ms(histogram.percentile(50)), p99Ms: ms(histogram.percentile(99)), maxMs: ms(histogram.max),
});
/** Nanoseconds since `start`; at least 1, as a histogram records only positive values. */
const since = (start: bigint): number => Math.max(1, Number(process.hrtime.bigint() - start));

function fsyncTimes(dir: string, extend: boolean) {
  const path = join(dir, extend ? 'extend.bin' : 'rewrite.bin');
  const fd = openSync(path, 'w');
  const block = Buffer.alloc(BLOCK_BYTES, 1);
  const times = createHistogram();
  try {
    if (!extend) {
      // Written and synced before timing, so that every timed write rewrites.
      for (let index = 0; index < REWRITTEN_BLOCKS; index += 1) writeSync(fd, block, 0, BLOCK_BYTES, index * BLOCK_BYTES);
      fdatasyncSync(fd);
    }
    for (let index = 0; index < FSYNCS; index += 1) {
      writeSync(fd, block, 0, BLOCK_BYTES, (extend ? index : index % REWRITTEN_BLOCKS) * BLOCK_BYTES);
      const start = process.hrtime.bigint();
      fdatasyncSync(fd);
      times.record(since(start));
    }
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
  return summary(times);
}

/** One file for every round: generating 32,000 tasks takes longer than a round. */
function template(dir: string): { path: string; organisations: GeneratedOrganisation[] } {
  const path = join(dir, 'template.sqlite');
  const setup = new Database(path);
  setup.pragma('journal_mode = WAL');
  const organisations: GeneratedOrganisation[] = [];
  for (let loop = 0; loop < LOOPS; loop += 1) {
    organisations.push(generateOrganisation(setup, { organisationId: 10 + loop, agents: 50, tasksPerAgent: 20, idBase: (loop + 1) * 10_000 }));
  }
  // Closing the last connection folds the WAL into the file, so the file alone can be copied.
  setup.close();
  return { path, organisations };
}

async function round(dir: string, from: string, organisations: readonly GeneratedOrganisation[], autocheckpoint: boolean, seconds: number) {
  const path = join(dir, 'round.sqlite');
  copyFileSync(from, path);
  const db = new Database(path);
  const service = createService({ db, rateLimit: 1e9 });
  if (!autocheckpoint) db.pragma('wal_autocheckpoint = 0');
  const patchTimes = createHistogram();
  const getTimes = createHistogram();
  let running = true;
  let patches = 0;
  const timed = async <T>(histogram: RecordableHistogram, action: () => Promise<T>): Promise<T> => {
    const start = process.hrtime.bigint();
    const result = await action();
    histogram.record(since(start));
    return result;
  };
  const loop = async (organisation: GeneratedOrganisation, index: number): Promise<void> => {
    const authorization = `Bearer ${organisation.tokens[0] as string}`;
    const url = `/api/v1/tasks/${(organisation.taskIds[0] as number[])[0] as number}`;
    for (let sequence = 0; running; sequence += 1) {
      // Each request arrives in a task of its own, as one from the network would.
      await new Promise((resolve) => setImmediate(resolve));
      const read = await timed(getTimes, async () => service.handle({ method: 'GET', url, headers: { authorization } }));
      await new Promise((resolve) => setImmediate(resolve));
      const written = await timed(patchTimes, async () => service.handle({
        method: 'PATCH', url, body: JSON.stringify({ sequence: sequence % 1000 }),
        headers: { authorization, 'content-type': 'application/json', 'if-match': String(read.headers['etag']), 'idempotency-key': `tail-${index}-${sequence}` },
      }));
      if (written.status !== 204) throw new Error(`PATCH answered ${written.status}: ${String(written.body)}`);
      patches += 1;
    }
  };
  const started = performance.now();
  const stop = setTimeout(() => { running = false; }, seconds * 1000);
  try {
    await Promise.all(organisations.map(loop));
  } finally {
    running = false;
    clearTimeout(stop);
  }
  const elapsed = (performance.now() - started) / 1000;
  const walPages = (db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[])[0]?.log ?? 0;
  await service.idle();
  service.close();
  db.close();
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
  return {
    autocheckpoint: autocheckpoint ? 'on (1,000 pages)' : 'off',
    patchesPerSecond: Math.round(patches / elapsed),
    patch: summary(patchTimes),
    get: summary(getTimes),
    walPagesAtEnd: walPages,
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'wta-write-tail-'));
  try {
    const fsync = { rewrite: fsyncTimes(dir, false), extend: fsyncTimes(dir, true) };
    console.log(`fdatasync after an 8 KiB write, ${FSYNCS} each: rewriting ${JSON.stringify(fsync.rewrite)}, extending ${JSON.stringify(fsync.extend)}`);
    const { path, organisations } = template(dir);
    await round(dir, path, organisations, true, 1);
    const rounds = [];
    for (let pair = 0; pair < ROUNDS; pair += 1) {
      for (const autocheckpoint of pair % 2 === 0 ? [true, false] : [false, true]) {
        const result = await round(dir, path, organisations, autocheckpoint, SECONDS);
        console.log(`automatic checkpoint ${result.autocheckpoint}: ${result.patchesPerSecond} PATCH/s, PATCH ${JSON.stringify(result.patch)}, `
          + `GET ${JSON.stringify(result.get)}, WAL pages at the end ${result.walPagesAtEnd}`);
        rounds.push(result);
      }
    }
    mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
    writeFileSync(new URL('./results/write-tail.json', import.meta.url), `${JSON.stringify({
      generatedAt: new Date().toISOString(), settings: { secondsPerRound: SECONDS, loops: LOOPS, fsyncs: FSYNCS }, fsync, rounds,
    }, null, 2)}\n`);
    console.log('wrote bench/results/write-tail.json');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
