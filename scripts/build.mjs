// `npm run build`: dist/ afresh, so no output of a deleted source lingers, then the package's
// commands made executable. tsc writes files without the execute bit, and `npx worker-task-api`
// inside this project runs the built file itself: npm sets the bit only when it first links the
// command, so every later build would leave it unrunnable.
//
// The commands (dist/bin) are bundled from tsc's output by esbuild: the command line loaded the
// library module by module, TypeBox's 709 files among them, and node's ESM loader took longer to
// find and read them than the command took to run (`serve` listened after 450 ms, a `load` of the
// demo took 1.1 s; bundled: 170 ms and 0.25 s). The library's own entry points stay one module
// per source, for embedders' bundlers and type declarations.
//
// `--if-stale` (prepare, and the tests' before program) builds only when the last build is not
// known good for the sources now: the first `npx worker-task-api` in this project installs it
// into npx's cache and runs prepare, and a full build there would hold up the command for seconds.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
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

const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const commandFiles = Object.values(manifest.bin ?? {});
/**
 * Dependencies copied into the command bundle: TypeBox alone, whose ESM build is 709 files. The
 * others are a file or two each and stay installed packages, so that an `npm update` (a fix to
 * find-my-way's URL parsing, say) reaches the command line without a rebuild.
 */
const BUNDLED = ['typebox'].filter((name) => manifest.dependencies?.[name] !== undefined);

/**
 * `npm run coverage` builds the commands a module per source (this variable set): c8 does not map
 * V8's coverage of a bundle back to its sources (the command's files counted whole, the
 * library's not at all), though the source maps lead there.
 */
const UNBUNDLED = process.env.WORKER_TASK_API_UNBUNDLED_BUILD === '1';

/**
 * How the commands were built, which the stamp records and a build is found stale unless it
 * matches: the versions of the packages bundled into them, and of esbuild, which an update may
 * make bundle otherwise; or that they were built a module per source.
 */
function buildRecord() {
  if (UNBUNDLED) return { unbundled: true };
  return { bundled: Object.fromEntries(BUNDLED.map((name) => [name, requiredVersion(name)])), esbuild: installedVersion('esbuild') };
}

/**
 * The installed version of a package, looked up as node resolves one (TypeBox's exports map does
 * not list its package.json): the stamp records versions because npm dates the files it unpacks
 * in 1985, so an update leaves nothing newer than the build. Undefined when it is not installed.
 */
function installedVersion(name) {
  for (let directory = root; ; directory = dirname(directory)) {
    const candidate = join(directory, 'node_modules', name, 'package.json');
    if (existsSync(candidate)) return JSON.parse(readFileSync(candidate, 'utf8')).version;
    if (dirname(directory) === directory) return undefined;
  }
}

function requiredVersion(name) {
  const version = installedVersion(name);
  if (version === undefined) throw new Error(`build: ${name} is not installed`);
  return version;
}

/** The stamp's record, or null when it is none (an older build's, or damaged). */
function readStamp() {
  try {
    const recorded = JSON.parse(readFileSync(stamp, 'utf8'));
    return Array.isArray(recorded?.outputs) ? recorded : null;
  } catch {
    return null;
  }
}

/** Why dist/ needs building, or null when the last successful build is newer than every input. */
function staleness() {
  if (!existsSync(stamp)) return 'no successful build';
  const builtAt = statSync(stamp).mtimeMs;
  const sources = SOURCE_DIRS.flatMap((dir) => filesUnder(join(root, dir), '.ts')).filter((file) => !file.endsWith('.d.ts'));
  const newer = [...sources, ...BUILD_INPUTS.map((file) => join(root, file))].find((file) => statSync(file).mtimeMs > builtAt);
  if (newer !== undefined) return `${relative(root, newer)} changed`;
  const recorded = readStamp();
  if (recorded === null) return 'the build stamp is of another version of this script';
  const { outputs, ...how } = recorded;
  const now = buildRecord();
  // No esbuild (a deploy pruned of devDependencies) cannot bundle again, and needs not.
  if (now.esbuild === undefined && how.esbuild !== undefined) now.esbuild = how.esbuild;
  if (JSON.stringify(how) !== JSON.stringify(now)) return 'a bundled package or esbuild was updated, or the commands were built otherwise';
  // A source dated before the build (copied with its times, unpacked) may never have been built.
  // The commands' files (a bundle and its chunks) are those the stamp lists, not an output per source.
  const modules = sources.filter((source) => !relative(root, source).startsWith('bin'));
  const outputFiles = [
    ...modules.map((source) => join(dist, relative(root, source)).replace(/\.ts$/, '.js')),
    ...commandFiles.map((file) => join(root, file)),
    ...outputs.map((file) => join(dist, file)),
  ];
  const unbuilt = outputFiles.find((output) => !existsSync(output));
  if (unbuilt !== undefined) return `${relative(root, unbuilt)} not built`;
  const orphan = SOURCE_DIRS.filter((dir) => dir !== 'bin').flatMap((dir) => filesUnder(join(dist, dir), '.js')).find(
    (output) => !existsSync(join(root, relative(dist, output)).replace(/\.js$/, '.ts')),
  );
  return orphan === undefined ? null : `${relative(root, orphan)} has no source`;
}

/**
 * Replaces dist/bin (tsc's output, a module per source) with a bundle of each command: its code,
 * the library's and TypeBox's in chunks (dist/bin/chunks), what only some commands import in
 * chunks of their own, so `--help` still answers without loading TypeBox or SQLite. The source maps lead through tsc's to the TypeScript sources (c8 does not follow
 * them: see UNBUNDLED).
 */
async function bundleCommands() {
  const binDir = join(dist, 'bin');
  const outside = commandFiles.find((file) => dirname(join(root, file)) !== binDir);
  if (outside !== undefined) throw new Error(`build: package.json bin ${outside} is not in dist/bin`);
  if (commandFiles.length === 0) return;
  const staging = join(dist, '.bin-bundle');
  const { build } = await import('esbuild');
  await build({
    entryPoints: commandFiles.map((file) => join(root, file)),
    outdir: staging,
    // Its comments name files relative to this: the same bundle wherever the build is started.
    absWorkingDir: root,
    bundle: true,
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    platform: 'node',
    format: 'esm',
    target: 'node20',
    sourcemap: true,
    external: Object.keys(manifest.dependencies ?? {}).filter((name) => !BUNDLED.includes(name)),
    logLevel: 'warning',
  });
  rmSync(binDir, { recursive: true, force: true });
  renameSync(staging, binDir);
}

if (!process.argv.includes('--if-stale') || staleness() !== null) {
  // Dated when the build starts: a source saved while tsc runs is newer, so not taken as built.
  const startedAt = new Date();
  let tsc;
  try {
    tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  } catch {
    // Installed without devDependencies (`npm prune --omit=dev` on a deploy): keep the build there
    // is rather than remove it and fail.
    if (existsSync(stamp)) {
      process.stderr.write(`build: ${staleness()}, but TypeScript is not installed; the existing build is kept\n`);
      process.exit(0);
    }
    throw new Error('build: TypeScript is not installed (npm install, with devDependencies)');
  }
  rmSync(dist, { recursive: true, force: true });
  const build = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) process.exit(build.status ?? 1);
  if (!UNBUNDLED) await bundleCommands();
  // Sorted: the same build, the same stamp.
  const outputs = filesUnder(join(dist, 'bin'), '').map((file) => relative(dist, file)).sort();
  writeFileSync(stamp, JSON.stringify({ ...buildRecord(), outputs }));
  utimesSync(stamp, startedAt, startedAt);
}
for (const file of commandFiles) chmodSync(join(root, file), 0o755);
