// `npm run build` (and `prepare`, and the tests' rebuild): dist/ afresh, so no output of a deleted
// source lingers, then the package's commands made executable. tsc writes files without the
// execute bit, and `npx worker-task-api` inside this project runs the built file itself: npm sets
// the bit only when it first links the command, so every later build would leave it unrunnable.
import { spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const build = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
if (build.status !== 0) process.exit(build.status ?? 1);
const { bin } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
for (const command of Object.values(bin)) chmodSync(new URL(`../${command}`, import.meta.url), 0o755);
