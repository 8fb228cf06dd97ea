// `npm test`'s pretest: builds tap for this project's plugin set (package.json "tap": no
// @tapjs/typescript, tsx instead) when the installed build is another set.
//
// tap would rebuild by itself on its first run after an install, but that run still starts every
// test file with the loaders of the set it was installed with, ts-node as well as tsx: about two
// seconds more CPU per file, so a fresh clone's first `npm test` took 5 to 6 minutes here and the
// next under 4. Comparing the two lists costs under a second; a build takes a few seconds, once.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const manifest = createRequire(import.meta.url).resolve('tap/package.json');
const tapBin = join(dirname(manifest), JSON.parse(readFileSync(manifest, 'utf8')).bin.tap);

function tap(...args) {
  const run = spawnSync(process.execPath, [tapBin, ...args], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
  if (run.status !== 0) {
    process.stderr.write(run.stdout);
    process.exit(run.status ?? 1);
  }
  return run.stdout;
}

const pluginSet = (list) => list.split('\n').map((line) => line.trim()).filter(Boolean).sort().join('\n');

/** The set tap is built with, or null if this tap keeps it elsewhere (then build: always right). */
async function installedSet() {
  try {
    // @tapjs/test imports @tapjs/core in a cycle that only resolves from the core's side.
    await import('@tapjs/core');
    const { signature } = await import('@tapjs/test');
    return typeof signature === 'string' ? signature : null;
  } catch {
    return null;
  }
}

const installed = await installedSet();
if (installed === null || pluginSet(installed) !== pluginSet(tap('plugin', 'list'))) tap('build');
