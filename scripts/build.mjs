// `npm run build`: dist/ afresh, so no output of a deleted source lingers, then the package's
// commands made executable. tsc writes files without the execute bit, and `npx worker-task-api`
// inside this project runs the built file itself: npm sets the bit only when it first links the
// command, so every later build would leave it unrunnable.
//
// `--if-stale` (prepare, and the tests' before program) builds only when the last build is not
// known good for the sources now: the first `npx worker-task-api` in this project installs it
// into npx's cache and runs prepare, and a full build there would hold up the command for seconds.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const dist = join(root, 'dist');
/** Written only once tsc has succeeded: a failed or interrupted build leaves none. */
const stamp = join(dist, '.build-stamp');
const SOURCE_DIRS = ['lib', 'adapters', 'bin'];
const BUILD_INPUTS = ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build.mjs'];

function filesUnder(dir, suffix) {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(suffix))
    .map((entry) => join(entry.parentPath ?? entry.path, entry.name));
}

/** Why dist/ needs building, or null when the last successful build is newer than every input. */
function staleness() {
  if (!existsSync(stamp)) return 'no successful build';
  const builtAt = statSync(stamp).mtimeMs;
  const sources = SOURCE_DIRS.flatMap((dir) => filesUnder(join(root, dir), '.ts')).filter((file) => !file.endsWith('.d.ts'));
  const newer = [...sources, ...BUILD_INPUTS.map((file) => join(root, file))].find((file) => statSync(file).mtimeMs > builtAt);
  if (newer !== undefined) return `${relative(root, newer)} changed`;
  // A source dated before the build (copied with its times, unpacked) may never have been built.
  const unbuilt = sources.find((source) => !existsSync(join(dist, relative(root, source)).replace(/\.ts$/, '.js')));
  if (unbuilt !== undefined) return `${relative(root, unbuilt)} not built`;
  const orphan = SOURCE_DIRS.flatMap((dir) => filesUnder(join(dist, dir), '.js')).find(
    (output) => !existsSync(join(root, relative(dist, output)).replace(/\.js$/, '.ts')),
  );
  return orphan === undefined ? null : `${relative(root, orphan)} has no source`;
}

if (!process.argv.includes('--if-stale') || staleness() !== null) {
  // Dated when the build starts: a source saved while tsc runs is newer, so not taken as built.
  const startedAt = new Date();
  rmSync(dist, { recursive: true, force: true });
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  const build = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
  writeFileSync(stamp, '');
  utimesSync(stamp, startedAt, startedAt);
}
const { bin } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
for (const file of Object.values(bin)) chmodSync(join(root, file), 0o755);
