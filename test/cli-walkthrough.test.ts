import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, run, serve } from './helpers/cli.js';

/**
 * README's "Your own organisation", followed as written: the fixture, the commands and the
 * answers are read from the README text, so the walkthrough cannot drift from what works. Then
 * the "Administration" example, against the running server.
 */

const README = readFileSync(join(ROOT, 'README.md'), 'utf8');

function section(heading: string): string {
  const start = README.indexOf(`\n## ${heading}\n`);
  if (start === -1) throw new Error(`README has no section "${heading}"`);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end === -1 ? undefined : end);
}

function fenced(text: string, language: string): string[] {
  return [...text.matchAll(new RegExp('```' + language + '\\n([\\s\\S]*?)```', 'g'))].map((match) => match[1] ?? '');
}

/** The arguments of the first `npx worker-task-api <command> ...` line, and the `# ...` line after it. */
function command(text: string, name: string): { args: string[]; comment: string | undefined } {
  const lines = text.split('\n');
  const at = lines.findIndex((line) => line.startsWith(`npx worker-task-api ${name}`));
  if (at === -1) throw new Error(`no "npx worker-task-api ${name}" line`);
  const comment = lines[at + 1]?.startsWith('# ') === true ? lines[at + 1]?.slice(2) : undefined;
  return { args: (lines[at] ?? '').split(/\s+/).slice(2), comment };
}

t.test('README "Your own organisation": fixture, load, client create, serve, curl', async (tt) => {
  const walkthrough = section('Your own organisation');
  const dir = tt.testdir();
  const env = { WTA_DB: join(dir, 'northwind.sqlite') };
  tt.match(walkthrough, /^export WTA_DB=\.\/data\/northwind\.sqlite /m, 'the walkthrough sets WTA_DB for every command');

  const [fixture] = fenced(walkthrough, 'json');
  writeFileSync(join(dir, 'northwind.json'), fixture ?? '');
  const load = command(walkthrough, 'load');
  const loaded = await run(load.args.map((arg) => (arg === 'northwind.json' ? join(dir, arg) : arg)), env);
  tt.equal(loaded.code, 0, loaded.stderr);
  tt.equal(loaded.stdout.trim(), load.comment, 'load prints what the README shows');

  const create = command(walkthrough, 'client create');
  const created = await run(create.args, env);
  tt.equal(created.code, 0, created.stderr);
  tt.match(created.stdout.split('\n')[0], (create.comment ?? '').replace(/\.\.\.$/, ''), 'client create prints what the README shows');
  const token = /^token: (wta_\S+)$/m.exec(created.stdout)?.[1] ?? '';
  tt.match(token, /^wta_[A-Za-z0-9_-]{40,}$/);

  tt.match(walkthrough, /^npx worker-task-api serve$/m);
  const { base } = await serve(tt, [], env);
  const calls = [...walkthrough.matchAll(/^curl -s -H "Authorization: Bearer \$TOKEN" http:\/\/127\.0\.0\.1:8080(\S+)\n# (.*)$/gm)];
  tt.equal(calls.length, 2, 'identity and tasks/available');
  for (const [, path, shown] of calls) {
    const response = await fetch(`${base}${path ?? ''}`, { headers: { authorization: `Bearer ${token}` } });
    tt.equal(response.status, 200, `${path ?? ''}`);
    const prefix = (shown ?? '').replace(/\.\.\.[\]}]*$/, '');
    tt.ok((await response.text()).startsWith(prefix), `${path ?? ''} answers as the README shows: ${prefix}`);
  }

  // "Administration": a small change file and a new client, while the server runs.
  const administration = section('Administration');
  const hire = /cat > hire-lee\.json <<'JSON'\n([\s\S]*?)\nJSON\n/.exec(administration)?.[1] ?? '';
  writeFileSync(join(dir, 'hire-lee.json'), hire);
  const loadHire = command(administration, 'load');
  const hired = await run(loadHire.args.map((arg) => (arg === 'hire-lee.json' ? join(dir, arg) : arg)), env);
  tt.equal(hired.code, 0, hired.stderr);
  tt.equal(hired.stdout.trim(), 'loaded 0 organisations, 1 staff, 0 clients, 0 projects, 0 tasks, 0 claims');
  const leeClient = await run(command(administration, 'client create').args, env);
  tt.equal(leeClient.code, 0, leeClient.stderr);
  const leeToken = /^token: (wta_\S+)$/m.exec(leeClient.stdout)?.[1] ?? '';
  const lee = await fetch(`${base}/api/v1/identity`, { headers: { authorization: `Bearer ${leeToken}` } });
  tt.equal(lee.status, 200, 'the running server accepts the new client at once');
  tt.match(await lee.json(), { clientName: 'lee-bot', resource: { id: 3, name: 'Lee' } });
  const scout = await fetch(`${base}/api/v1/tasks/available`, { headers: { authorization: `Bearer ${token}` } });
  tt.same(((await scout.json()) as { id: number }[]).map((task) => task.id), [1], "the change file left Scout's work alone");
});
