/**
 * Where the durable PATCH row's slowest answers come from. Run: `npm run bench:write-tail`
 * (WRITE_TAIL_SECONDS, default 5 s per round). Figures go to stdout and to
 * bench/results/write-tail.json.
 *
 * Two measurements, both in one process on a file in the system's temporary folder:
 * - the disk: 2,000 fdatasync calls after an 8 KiB write that rewrites a file, and 2,000 after
 *   one that extends it (a commit's fsync of the WAL is one of these);
 * - the service without HTTP: 32 loops, each in an organisation of its own, alternating a GET for
 *   the ETag and a PATCH with If-Match and Idempotency-Key, as the HTTP bench's PATCH row does,
 *   with SQLite's automatic WAL checkpoint on (the default, 1,000 pages) and off, three rounds
 *   each, alternating. The event loop's delay shows the pauses every waiting request shares.
 *
 * Without HTTP, autocannon and the kernel's network path, what remains is the service's own work
 * and the disk, so the two settings can be told apart on a noisy VM.
 */
import Database from 'better-sqlite3';
import { closeSync, fdatasyncSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHistogram, monitorEventLoopDelay, performance, type RecordableHistogram } from 'node:perf_hooks';
import { createService } from '../lib/service.js';
import { generateOrganisation, type GeneratedOrganisation } from './generate.js';

const SECONDS = Number(process.env['WRITE_TAIL_SECONDS'] ?? 5);
const LOOPS = 32;
const ROUNDS = 3;
const FSYNCS = 2_000;

const ms = (nanoseconds: number): number => Math.round(nanoseconds / 1e4) / 100;
const percentiles = (histogram: RecordableHistogram | ReturnType<typeof monitorEventLoopDelay>) => ({
  p50Ms: ms(histogram.percentile(50)), p99Ms: ms(histogram.percentile(99)), maxMs: ms(histogram.max),
});

function fsyncTimes(dir: string, extend: boolean) {
  const path = join(dir, extend ? 'extend.bin' : 'rewrite.bin');
  const fd = openSync(path, 'w');
  const block = Buffer.alloc(8192, 1);
  const times = createHistogram();
  try {
    for (let index = 0; index < FSYNCS; index += 1) {
      // Rewriting cycles through 100 blocks (800 KiB), as a WAL that has started over does.
      writeSync(fd, block, 0, block.length, (extend ? index : index % 100) * block.length);
      const start = process.hrtime.bigint();
      fdatasyncSync(fd);
      times.record(Number(process.hrtime.bigint() - start) || 1);
    }
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
  return percentiles(times);
}

async function round(dir: string, index: number, autocheckpoint: boolean) {
  const path = join(dir, `round-${index}.sqlite`);
  const setup = new Database(path);
  setup.pragma('journal_mode = WAL');
  const organisations: GeneratedOrganisation[] = [];
  for (let loop = 0; loop < LOOPS; loop += 1) {
    organisations.push(generateOrganisation(setup, { organisationId: 10 + loop, agents: 1, tasksPerAgent: 20, idBase: (loop + 1) * 1_000 }));
  }
  setup.close();

  const db = new Database(path);
  const service = createService({ db, rateLimit: 1e9 });
  if (!autocheckpoint) db.pragma('wal_autocheckpoint = 0');
  const synchronous = db.pragma('synchronous', { simple: true }) as number;
  const patchTimes = createHistogram();
  const getTimes = createHistogram();
  const loopDelay = monitorEventLoopDelay({ resolution: 1 });
  let running = true;
  let patches = 0;
  const timed = async <T>(histogram: RecordableHistogram, action: () => Promise<T>): Promise<T> => {
    const start = process.hrtime.bigint();
    const result = await action();
    histogram.record(Number(process.hrtime.bigint() - start) || 1);
    return result;
  };
  const worker = async (organisation: GeneratedOrganisation): Promise<void> => {
    const authorization = `Bearer ${organisation.tokens[0] as string}`;
    const url = `/api/v1/tasks/${(organisation.taskIds[0] as number[])[0] as number}`;
    for (let sequence = 0; running; sequence += 1) {
      // Each request arrives in a task of its own, as one from the network would.
      await new Promise((resolve) => setImmediate(resolve));
      const read = await timed(getTimes, async () => service.handle({ method: 'GET', url, headers: { authorization } }));
      const written = await timed(patchTimes, async () => service.handle({
        method: 'PATCH', url, body: JSON.stringify({ sequence: sequence % 1000 }),
        headers: {
          authorization, 'content-type': 'application/json', 'if-match': String(read.headers['etag']),
          'idempotency-key': `tail-${index}-${organisation.tokens[0] as string}-${sequence}`.slice(-100),
        },
      }));
      if (written.status !== 204) throw new Error(`PATCH answered ${written.status}: ${String(written.body)}`);
      patches += 1;
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  loopDelay.enable();
  const started = performance.now();
  const stop = setTimeout(() => { running = false; }, SECONDS * 1000);
  await Promise.all(organisations.map(worker));
  clearTimeout(stop);
  const seconds = (performance.now() - started) / 1000;
  loopDelay.disable();
  const walPages = (db.pragma('wal_checkpoint(PASSIVE)') as { log: number }[])[0]?.log ?? 0;
  await service.idle();
  service.close();
  db.close();
  for (const suffix of ['', '-wal', '-shm']) rmSync(`${path}${suffix}`, { force: true });
  return {
    autocheckpoint: autocheckpoint ? 'on (1,000 pages)' : 'off',
    synchronous,
    patchesPerSecond: Math.round(patches / seconds),
    patch: percentiles(patchTimes),
    get: percentiles(getTimes),
    eventLoopDelay: percentiles(loopDelay),
    walPagesAtEnd: walPages,
  };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'wta-write-tail-'));
  try {
    const fsync = { rewrite: fsyncTimes(dir, false), extend: fsyncTimes(dir, true) };
    console.log(`fdatasync of 8 KiB, ${FSYNCS} each: rewriting ${JSON.stringify(fsync.rewrite)}, extending ${JSON.stringify(fsync.extend)}`);
    const rounds = [];
    for (let index = 0; index < ROUNDS * 2; index += 1) {
      const result = await round(dir, index, index % 2 === 0);
      console.log(`automatic checkpoint ${result.autocheckpoint}: ${result.patchesPerSecond} PATCH/s, PATCH ${JSON.stringify(result.patch)}, `
        + `GET ${JSON.stringify(result.get)}, event-loop delay ${JSON.stringify(result.eventLoopDelay)}, WAL pages at the end ${result.walPagesAtEnd}`);
      rounds.push(result);
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
