import { parentPort, workerData } from 'node:worker_threads';
import { createService } from '../../lib/service.js';
import { manualClock } from '../../lib/time/clock.js';

/**
 * One racer of the concurrency tests (not a test file itself): its own service over the shared
 * file database, reads the task's ETag, reports ready, waits for the shared start signal and then
 * sends its writes back to back.
 *
 * `mode`:
 * - `claim`: `count` claims of the task, each with its own Idempotency-Key.
 * - `same-key-note`: `count` identical notes on the task, all with the one key `sharedKey`.
 */
export interface RacerData {
  readonly path: string;
  readonly token: string;
  readonly index: number;
  readonly count: number;
  readonly taskId: number;
  readonly now: string;
  readonly mode: 'claim' | 'same-key-note';
  readonly sharedKey?: string;
  /** Int32 slot 0: 0 until the start signal, then 1. */
  readonly signal: SharedArrayBuffer;
}

export interface RacerResult {
  readonly status: number;
  readonly code: string | null;
  readonly replayed: boolean;
  readonly leaseToken: string | null;
}

const data = workerData as RacerData;
const port = parentPort;
if (port === null) throw new Error('claim-race-worker must run as a worker thread');

const service = createService({ db: data.path, clock: manualClock(data.now), rateLimit: 1_000_000, logger: { error: (entry) => port.postMessage({ type: 'log', entry }) } });
const authorization = `Bearer ${data.token}`;
const url = `/api/v1/tasks/${data.taskId}`;

const read = await service.handle({ method: 'GET', url, headers: { authorization } });
const etag = read.headers['etag'];
if (read.status !== 200 || etag === undefined) throw new Error(`GET ${url}: ${read.status}`);
port.postMessage({ type: 'ready', etag });

Atomics.wait(new Int32Array(data.signal), 0, 0);

const results: RacerResult[] = [];
for (let i = 0; i < data.count; i += 1) {
  const key = data.mode === 'claim' ? `race-${data.index}-${i}` : (data.sharedKey ?? 'shared');
  const response = data.mode === 'claim'
    ? await service.handle({ method: 'POST', url: `${url}/claim`, headers: { authorization, 'if-match': etag, 'idempotency-key': key } })
    : await service.handle({
      method: 'POST', url: `${url}/notes`,
      headers: { authorization, 'if-match': etag, 'idempotency-key': key, 'content-type': 'application/json' },
      body: JSON.stringify({ text: 'written once' }),
    });
  let code: string | null = null;
  let leaseToken: string | null = null;
  if (response.body !== undefined && response.body !== '') {
    const body = JSON.parse(response.body) as { code?: string; token?: string };
    code = body.code ?? null;
    leaseToken = body.token ?? null;
  }
  results.push({ status: response.status, code, replayed: response.headers['idempotent-replayed'] === 'true', leaseToken });
}

service.close();
port.postMessage({ type: 'done', results });
