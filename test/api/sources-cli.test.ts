import t from 'tap';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI, ROOT, cleanEnv } from '../helpers/cli.js';
import { TOKENS, baseFixture } from '../helpers/fixture.js';
import { stubTracker } from '../helpers/stub-tracker.js';

/** `serve --source KEY=BASEURL` (contract 11): the built-in http provider, through real HTTP. */

const LISTENING = /^listening on http:\/\/127\.0\.0\.1:(\d+)$/m;

t.test('SOURCES: serve --source tracker=BASEURL offers a linked task with the tracker\'s facts', async (t) => {
  const stub = await stubTracker(t);
  stub.setItem('T-1', { title: 'From the stub', description: 'Served over HTTP', businessStatus: 'open', raw: 'raw-cli-member' });
  // Zero-estimate work is offered whatever the real clock says (contract 5), so the test does not
  // depend on today's working hours.
  const fixture = baseFixture();
  fixture.tasks = [{ id: 1, projectId: 1, title: 'Linked', estimatedMinutes: 0, assignees: [{ staffMemberId: 10 }],
    sources: [{ providerKey: 'tracker', itemId: 'T-1' }] }];
  fixture.claims = [];
  const dir = t.testdir();
  const fixturePath = join(dir, 'fixture.json');
  writeFileSync(fixturePath, JSON.stringify(fixture));

  const child = spawn(process.execPath, [
    CLI, 'serve', '--port', '0', '--db', join(dir, 'cli.sqlite'),
    '--fixture', fixturePath, '--source', `tracker=${stub.base}`,
  ], { cwd: ROOT, env: cleanEnv(), stdio: ['ignore', 'pipe', 'pipe'] });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  let stdout = '';
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      stdout += chunk;
      const match = LISTENING.exec(stdout);
      if (match !== null) resolve(match[1] ?? '');
    });
    child.on('close', () => reject(new Error(`serve exited:\n${stdout}\n${stderr}`)));
  });

  const response = await fetch(`http://127.0.0.1:${port}/api/v1/tasks/available`, { headers: { authorization: `Bearer ${TOKENS.ada}` } });
  t.equal(response.status, 200);
  const text = await response.text();
  const tasks = JSON.parse(text) as { id: number; externalContext: unknown[] }[];
  t.equal(tasks.length, 1);
  t.match(tasks[0], {
    id: 1,
    externalContext: [{ providerKey: 'tracker', itemId: 'T-1', facts: { title: 'From the stub', description: 'Served over HTTP', businessStatus: 'open' }, isAvailable: true }],
  });
  t.equal(stub.gets('T-1').length, 1, 'the served process called the stub');
  t.notOk(text.includes('raw-cli-member') || text.includes(stub.base), 'no raw member or base URL in the answer');

  child.kill('SIGTERM');
  await new Promise((resolve) => (child.exitCode === null ? child.once('close', resolve) : resolve(undefined)));
});
