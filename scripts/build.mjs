// `npm run build`: dist/ afresh, so no output of a deleted source lingers, then the package's
// commands made executable. tsc writes files without the execute bit, and `npx worker-task-api`
// inside this project runs the built file itself: npm sets the bit only when it first links the
// command, so every later build would leave it unrunnable.
//
// `--if-stale` (prepare, and the tests' before program) builds only when an output is missing or
// older than its source. The first `npx worker-task-api` in this project installs it into npx's
// cache and runs prepare: a full build there would hold up the command for seconds.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Every .ts under lib, adapters and bin whose built .js is missing or older than it. */
function staleOutputs() {
  const stale = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) {
        const built = join(root, 'dist', relative(root, path).replace(/\.ts$/, '.js'));
        if (!existsSync(built) || statSync(built).mtimeMs < statSync(path).mtimeMs) stale.push(relative(root, path));
      }
    }
  };
  for (const dir of ['lib', 'adapters', 'bin']) walk(join(root, dir));
  return stale;
}

const { bin } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const commands = Object.values(bin).map((file) => join(root, file));

if (!process.argv.includes('--if-stale') || staleOutputs().length > 0) {
  rmSync(join(root, 'dist'), { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const build = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
}
for (const command of commands) chmodSync(command, 0o755);
