import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const UNIT = join(ROOT, 'deploy', 'worker-task-api.service');

/** Active `Key=value` lines of the unit by section (comments and blank lines dropped). */
function unitSettings(text: string): Map<string, Map<string, string[]>> {
  const sections = new Map<string, Map<string, string[]>>();
  let current: Map<string, string[]> | undefined;
  for (const line of text.split('\n').map((raw) => raw.trim())) {
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const header = /^\[(.+)\]$/.exec(line);
    if (header !== null) {
      current = new Map();
      sections.set(header[1] ?? '', current);
      continue;
    }
    const at = line.indexOf('=');
    if (current === undefined || at === -1) throw new Error(`not a unit line: ${line}`);
    const key = line.slice(0, at);
    current.set(key, [...(current.get(key) ?? []), line.slice(at + 1)]);
  }
  return sections;
}

t.test('the systemd unit runs the built server as its own user with a writable data directory only', async (tt) => {
  const service = unitSettings(readFileSync(UNIT, 'utf8')).get('Service') ?? new Map<string, string[]>();
  const one = (key: string): string | undefined => service.get(key)?.at(-1);
  tt.equal(one('User'), 'wta');
  tt.equal(one('WorkingDirectory'), '/opt/worker-task-api');
  tt.match(one('ExecStart') ?? '', /^\/\S*node \/opt\/worker-task-api\/dist\/bin\/worker-task-api\.js serve$/, 'the package bin, built');
  const bin = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin['worker-task-api'];
  tt.equal(bin, 'dist/bin/worker-task-api.js', 'ExecStart names the same file as package.json bin');
  tt.equal(one('Restart'), 'on-failure', 'which a SIGHUP stop (exit 129) counts as');
  tt.equal(one('RestartPreventExitStatus'), '2', 'a usage error is not retried for ever');
  tt.equal(one('StateDirectoryMode'), '0700', 'readable by the service user only, as the files the service makes');
  tt.equal(one('NoNewPrivileges'), 'yes');
  tt.equal(one('ProtectSystem'), 'strict');
  const environment = new Map((service.get('Environment') ?? []).map((entry) => entry.split('=', 2) as [string, string]));
  tt.equal(environment.get('WTA_DB'), '/var/lib/worker-task-api/worker-task-api.sqlite');
  tt.equal(one('ReadWritePaths'), '/var/lib/worker-task-api', 'the database directory is the one writable path');
  tt.equal(one('StateDirectory'), 'worker-task-api', 'systemd creates it for the service user');
  tt.equal(one('KillSignal'), 'SIGTERM', 'the signal serve shuts down cleanly on');
  tt.equal(one('EnvironmentFile'), '-/etc/worker-task-api/env', 'secrets go in an optional environment file, not the world-readable unit');
});

t.test('the backup unit runs the built backup command daily, as the service user, on the same file', async (tt) => {
  const units = join(ROOT, 'deploy');
  const service = unitSettings(readFileSync(join(units, 'worker-task-api-backup.service'), 'utf8')).get('Service') ?? new Map<string, string[]>();
  const one = (key: string): string | undefined => service.get(key)?.at(-1);
  tt.equal(one('User'), 'wta');
  tt.equal(one('Type'), 'oneshot');
  tt.equal(one('Environment'), 'WTA_DB=/var/lib/worker-task-api/worker-task-api.sqlite', 'the main unit\'s file');
  tt.match(one('ExecStart') ?? '', /node \/opt\/worker-task-api\/dist\/bin\/worker-task-api\.js backup "\/var\/backups\/worker-task-api\/tasks-\$\$\(date \+%%F-%%H%%M%%S\)\.sqlite"/, 'a copy named to the second, systemd escapes included');
  tt.equal(one('ReadWritePaths'), '/var/lib/worker-task-api /var/backups/worker-task-api', 'a WAL reader writes the -shm file; the copy goes to the backup directory');
  const timer = unitSettings(readFileSync(join(units, 'worker-task-api-backup.timer'), 'utf8')).get('Timer') ?? new Map<string, string[]>();
  tt.strictSame(timer.get('OnCalendar'), ['daily']);
  tt.strictSame(timer.get('Persistent'), ['true'], 'a day the VM was off is caught up at boot');
});

const analyze = spawnSync('systemd-analyze', ['--version'], { encoding: 'utf8' });
t.test('systemd-analyze verify accepts the units', { skip: analyze.status === 0 ? false : 'systemd-analyze is not installed' }, async (tt) => {
  // Verified from a copy so the unit's own directory is not scanned for other units.
  // The backup unit is verified with its optional pruning line switched on: that line must be valid too.
  const copies = ['worker-task-api.service', 'worker-task-api-backup.service', 'worker-task-api-backup.timer'].map((name) => {
    const copy = join(tt.testdir(), name);
    writeFileSync(copy, readFileSync(join(ROOT, 'deploy', name), 'utf8').replace(/^#ExecStartPost=/m, 'ExecStartPost='));
    return copy;
  });
  const verify = spawnSync('systemd-analyze', ['verify', ...copies], { encoding: 'utf8' });
  // Only the unit's own settings count: a host without the wta user or with node elsewhere is not an error.
  const complaints = `${verify.stdout}${verify.stderr}`
    .split('\n')
    .filter((line) => /worker-task-api(-backup)?\.(service|timer):/.test(line) && !/is not executable/.test(line));
  tt.same(complaints, [], 'no unknown or malformed settings');
});

t.test('the backup unit\'s optional pruning line, once uncommented, deletes only dated copies more than 30 whole days old in the backup directory', async (tt) => {
  const text = readFileSync(join(ROOT, 'deploy', 'worker-task-api-backup.service'), 'utf8');
  const commented = text.split('\n').find((line) => line.startsWith('#ExecStartPost='));
  if (commented === undefined) {
    tt.fail('no commented ExecStartPost line');
    return;
  }
  const unit = unitSettings(text.replace(commented, commented.slice(1))).get('Service') ?? new Map<string, string[]>();
  const command = unit.get('ExecStartPost')?.at(-1) ?? '';
  tt.match(command, /^\/usr\/bin\/find \/var\/backups\/worker-task-api /, 'it works in the backup directory');
  tt.notMatch(command, /[%$"'\\]/, 'nothing systemd would expand or unquote: find gets the words as written');

  // Run the same words against a scratch directory, as systemd would (no shell, so find sees the glob).
  // find's -mtime +30 counts whole days and wants more than 30: 31 days old goes, 30.9 stays.
  const ages: Record<string, number> = { 'tasks-31-days.sqlite': 31.1, 'tasks-30-days.sqlite': 30.9, 'tasks-new.sqlite': 1, 'notes-old.txt': 40 };
  const directory = tt.testdir({ ...Object.fromEntries(Object.keys(ages).map((name) => [name, ''])), nested: { 'tasks-old.sqlite': '' } });
  const daysAgo = (days: number): Date => new Date(Date.now() - days * 86_400_000);
  for (const [name, days] of Object.entries(ages)) utimesSync(join(directory, name), daysAgo(days), daysAgo(days));
  utimesSync(join(directory, 'nested', 'tasks-old.sqlite'), daysAgo(40), daysAgo(40));
  const [program, , ...rest] = command.split(/\s+/);
  const run = spawnSync(existsSync(program ?? '') ? program ?? '' : 'find', [directory, ...rest], { encoding: 'utf8' });
  tt.equal(run.status, 0, run.stderr);
  tt.strictSame(readdirSync(directory).sort(), ['nested', 'notes-old.txt', 'tasks-30-days.sqlite', 'tasks-new.sqlite'], 'the copy of 31 days is gone; newer copies and other files stay');
  tt.strictSame(readdirSync(join(directory, 'nested')), ['tasks-old.sqlite'], 'nothing below the directory itself');
});
