import t from 'tap';
import Database from 'better-sqlite3';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join } from 'node:path';
import type { TapTest } from '../helpers/api.js';
import { CLI, ROOT, cleanEnv } from '../helpers/cli.js';
import { generateOrganisation, type GeneratedOrganisation } from '../../bench/generate.js';

/**
 * Reliability: a 2xx means the write is on disk. The server is killed with SIGKILL in the middle
 * of a write load; on the same file afterwards every acknowledged write is there, and no write is
 * there in part (a note without its receipt or its version bump, or the other way round).
 */

const ORGANISATIONS = 8;

/** Starts `serve` on the file; a server still running when the test ends (a failure midway) is killed. */
function serve(t: TapTest, dbPath: string): Promise<{ child: ChildProcessWithoutNullStreams; base: string }> {
  const child = spawn(process.execPath, [CLI, 'serve', '--db', dbPath, '--port', '0', '--rate-limit', '1000000000'], {
    cwd: ROOT, env: cleanEnv(),
  });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match !== null) resolve({ child, base: match[1] as string });
    });
    child.once('exit', (code) => reject(new Error(`server exited early (${code}): ${output}`)));
    child.stderr.resume();
  });
}

interface Acknowledged {
  readonly organisationId: number;
  readonly key: string;
}

/** One writer per organisation: read the ETag, append a note under it, repeat until stopped. */
async function writer(base: string, organisation: GeneratedOrganisation, taskId: number, acked: Acknowledged[], stop: { now: boolean }) {
  const authorization = `Bearer ${organisation.tokens[0]}`;
  for (let round = 0; !stop.now; round += 1) {
    try {
      const read = await fetch(`${base}/api/v1/tasks/${taskId}`, { headers: { authorization } });
      const etag = read.headers.get('etag');
      await read.arrayBuffer();
      if (etag === null) continue;
      const key = `o${organisation.organisationId}-n${round}`;
      const written = await fetch(`${base}/api/v1/tasks/${taskId}/notes`, {
        method: 'POST',
        headers: { authorization, 'content-type': 'application/json', 'if-match': etag, 'idempotency-key': key },
        body: JSON.stringify({ text: key }),
      });
      await written.arrayBuffer();
      if (written.status === 204) acked.push({ organisationId: organisation.organisationId, key });
    } catch {
      return; // the server is gone
    }
  }
}

t.test('DURABILITY: after SIGKILL mid-load every acknowledged write is on disk and none is there in part', async (t) => {
  const dbPath = join(t.testdir(), 'durable.sqlite');
  const setup = new Database(dbPath);
  const organisations = Array.from({ length: ORGANISATIONS }, (_, index) =>
    generateOrganisation(setup, { organisationId: index + 1, agents: 1, tasksPerAgent: 5, idBase: (index + 1) * 1000 }));
  const initialVersion = new Map(
    (setup.prepare('SELECT id, workspace_version AS v FROM organisations').all() as { id: number; v: number }[]).map((row) => [row.id, row.v]));
  setup.close();

  const { child, base } = await serve(t, dbPath);
  const acked: Acknowledged[] = [];
  const stop = { now: false };
  let finished = 0;
  const writers = organisations.map((organisation) =>
    writer(base, organisation, organisation.taskIds[0]![0]!, acked, stop).finally(() => { finished += 1; }));
  // Kill once the load is well under way, without waiting for a quiet moment.
  const deadline = Date.now() + 30_000;
  while (acked.length < 150 && finished < writers.length && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.ok(acked.length >= 150 && finished === 0, `the load ran (${acked.length} acknowledged writes) until the kill`);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGKILL');
  stop.now = true;
  await Promise.all(writers);
  await exited;

  const db = new Database(dbPath);
  t.equal(db.pragma('integrity_check', { simple: true }), 'ok', 'the file is intact');
  const notes = new Set((db.prepare('SELECT text FROM notes').pluck().all() as string[]));
  const receipts = new Set((db.prepare('SELECT key FROM idempotency_receipts').pluck().all() as string[]));
  const missing = acked.filter((write) => !notes.has(write.key));
  t.strictSame(missing, [], `all ${acked.length} acknowledged notes survived`);
  t.strictSame([...notes].filter((text) => !receipts.has(text)), [], 'every note has its receipt');
  t.strictSame([...receipts].filter((key) => !notes.has(key)), [], 'every receipt has its note');
  for (const organisation of organisations) {
    const count = (db.prepare('SELECT count(*) FROM notes n JOIN tasks t ON t.id = n.task_id WHERE t.organisation_id = ?')
      .pluck().get(organisation.organisationId)) as number;
    const version = db.prepare('SELECT workspace_version FROM organisations WHERE id = ?').pluck().get(organisation.organisationId) as number;
    t.equal(version - (initialVersion.get(organisation.organisationId) ?? 0), count, `organisation ${organisation.organisationId}: one version bump per note`);
  }
  db.close();

  // The same file serves again.
  const again = await serve(t, dbPath);
  const response = await fetch(`${again.base}/api/v1/identity`, { headers: { authorization: `Bearer ${organisations[0]!.tokens[0]}` } });
  t.equal(response.status, 200, 'the restarted server answers');
  const stopped = new Promise((resolve) => again.child.once('exit', resolve));
  again.child.kill('SIGTERM');
  await stopped;
});
