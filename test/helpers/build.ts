import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The built package (`dist/`) that the command-line and package tests run, as users do: `npm ci`
 * builds it through `prepare`, and tap's `before` program (build-dist.ts) rebuilds it unless the
 * last successful build is current (scripts/build.mjs --if-stale), so no test ever runs
 * yesterday's build.
 */

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));
export const TSC = join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
/** The command line as `npx worker-task-api` runs it. */
export const CLI = join(ROOT, 'dist', 'bin', 'worker-task-api.js');

/**
 * The parent's environment without WTA_* settings (they would change what the CLI does) and
 * without tap's process tracking, which roughly doubles a child's start-up time. Where tap's
 * tracking still follows a child, coverage stays off: with the setting gone it would be on, and
 * tap would report the build script's coverage though the suite's coverage is off.
 */
export function buildEnv(): NodeJS.ProcessEnv {
  return {
    ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(WTA_|TAP|_TAPJS_|NODE_OPTIONS$)/.test(name))),
    _TAPJS_PROCESSINFO_COVERAGE_: '0',
  };
}

/**
 * Runs the build script of `npm run build` when dist/ is missing or out of date (its `--if-stale`);
 * throws with the compiler's output on failure.
 */
export function buildIfStale(): void {
  const build = spawnSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs'), '--if-stale'], { cwd: ROOT, encoding: 'utf8', env: buildEnv() });
  if (build.status !== 0) throw new Error(`the build failed:\n${build.stdout}${build.stderr}`);
}
