import t from 'tap';
import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildEnv, ROOT } from '../helpers/build.js';
import type { TapTest } from '../helpers/api.js';

/**
 * scripts/build.mjs in a project of its own (three sources, the real script and compiler), so each
 * build takes a moment: what `npm run build` and `--if-stale` (prepare, the tests) leave in dist/.
 */

interface Project {
  readonly dir: string;
  /** Runs the build script with `args`; its exit status. */
  build(...args: string[]): number;
  /** Dates `file` a minute ahead (changed since any build), or back an hour. */
  touch(file: string): void;
  untouch(file: string): void;
}

function project(tt: TapTest): Project {
  const dir = tt.testdir({
    // Two commands, so the bundle has a chunk of what they share, as the real one has.
    'package.json': JSON.stringify({ name: 'p', type: 'module', bin: { p: 'dist/bin/p.js', q: 'dist/bin/q.js' } }),
    // The smallest library: each of a test's builds then takes the compiler a fifth of the time.
    'tsconfig.json': JSON.stringify({
      compilerOptions: { target: 'ES2022', lib: ['ES5'], module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, outDir: 'dist', rootDir: '.', types: [] },
    }),
    'tsconfig.build.json': JSON.stringify({ extends: './tsconfig.json', include: ['lib', 'adapters', 'bin'] }),
    lib: { 'a.ts': 'export const a: number = 1;\n' },
    adapters: { 'b.ts': 'export const b = 1;\n' },
    // No DOM or node types in so small a library: the one global the command uses is declared.
    bin: {
      'p.ts': "#!/usr/bin/env node\nimport { a } from '../lib/a.js';\ndeclare const console: { log(value: unknown): void };\nconsole.log(a);\n",
      'q.ts': "#!/usr/bin/env node\nimport { a } from '../lib/a.js';\ndeclare const console: { log(value: unknown): void };\nconsole.log(a + 1);\n",
    },
  });
  mkdirSync(join(dir, 'scripts'));
  cpSync(join(ROOT, 'scripts', 'build.mjs'), join(dir, 'scripts', 'build.mjs'));
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const dated = (file: string, offset: number): void => {
    const at = new Date(Date.now() + offset);
    utimesSync(join(dir, file), at, at);
  };
  // Inputs are dated in the past, so a build's outputs are always newer than them unless touched.
  for (const file of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'lib/a.ts', 'adapters/b.ts', 'bin/p.ts', 'bin/q.ts', 'scripts/build.mjs']) dated(file, -3_600_000);
  return {
    dir,
    build: (...args) => spawnSync(process.execPath, [join(dir, 'scripts', 'build.mjs'), ...args], { cwd: dir, env: { ...buildEnv(), WORKER_TASK_API_UNBUNDLED_BUILD: '' }, stdio: 'ignore' }).status ?? -1,
    touch: (file) => dated(file, 60_000),
    untouch: (file) => dated(file, -3_600_000),
  };
}

/** Changes what the stamp of the build in `dir` records, keeping its date (no source is newer). */
function restamp(dir: string, change: (record: Record<string, unknown>) => void): void {
  const file = join(dir, 'dist', '.build-stamp');
  const stampAt = statSync(file).mtime;
  const record = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  change(record);
  writeFileSync(file, JSON.stringify(record));
  utimesSync(file, stampAt, stampAt);
}

const built = (dir: string, file: string): number | null => (existsSync(join(dir, 'dist', file)) ? statSync(join(dir, 'dist', file)).mtimeMs : null);

t.test('BUILD: a build leaves dist/ with the package commands executable; --if-stale then skips the compiler but still sets the mode', async (tt) => {
  const { dir, build } = project(tt);
  tt.equal(build(), 0);
  tt.equal(statSync(join(dir, 'dist/bin/p.js')).mode & 0o777, 0o755, 'the bin is 0755');
  const first = built(dir, 'lib/a.js');
  chmodSync(join(dir, 'dist/bin/p.js'), 0o644);
  tt.equal(build('--if-stale'), 0);
  tt.equal(built(dir, 'lib/a.js'), first, 'nothing rebuilt');
  tt.equal(statSync(join(dir, 'dist/bin/p.js')).mode & 0o777, 0o755, 'the mode is set again');
  const run = spawnSync(join(dir, 'dist/bin/p.js'), { encoding: 'utf8' });
  tt.equal(run.stdout, '1\n', 'the command runs on its own');
  // A bundle: what it imports from the library is inside it.
  rmSync(join(dir, 'dist', 'lib'), { recursive: true });
  tt.equal(spawnSync(join(dir, 'dist/bin/p.js'), { encoding: 'utf8' }).stdout, '1\n', 'the command needs no dist/lib');
});

t.test('BUILD: installed without TypeScript (a deploy pruned of devDependencies), a stale build is kept, not removed', async (tt) => {
  const { dir, build } = project(tt);
  tt.equal(build(), 0);
  // Outside the repository, whose node_modules node would otherwise find the compiler in.
  const pruned = mkdtempSync(join(tmpdir(), 'wta-pruned-'));
  tt.teardown(() => rmSync(pruned, { recursive: true, force: true }));
  cpSync(dir, pruned, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
  rmSync(join(pruned, 'node_modules'));
  mkdirSync(join(pruned, 'node_modules'));
  const ifStale = () => spawnSync(process.execPath, [join(pruned, 'scripts', 'build.mjs'), '--if-stale'], { cwd: pruned, env: buildEnv(), encoding: 'utf8' });
  // Without esbuild the commands cannot be bundled again, and the version it had is no reason to.
  restamp(pruned, (record) => {
    record.esbuild = '0.0.1';
  });
  const current = ifStale();
  tt.strictSame([current.status, current.stderr], [0, ''], 'an esbuild no longer installed makes no build stale');
  restamp(pruned, (record) => {
    record.bundled = { typebox: '0.0.1' };
  });
  const run = ifStale();
  tt.equal(run.status, 0, 'not a failure: the package is built');
  tt.match(run.stderr, /TypeScript is not installed; the existing build is kept/);
  tt.equal(spawnSync(join(pruned, 'dist/bin/p.js'), { encoding: 'utf8' }).stdout, '1\n', 'the existing build still runs');
});

t.test('BUILD: --if-stale rebuilds after a changed source or build setting, a deleted source, or a failed build', async (tt) => {
  const { dir, build, touch, untouch } = project(tt);
  tt.equal(build('--if-stale'), 0, 'no dist/ yet: built');
  tt.ok(built(dir, 'lib/a.js') !== null);
  for (const input of ['lib/a.ts', 'tsconfig.build.json', 'package.json']) {
    const before = built(dir, 'lib/a.js');
    touch(input);
    tt.equal(build('--if-stale'), 0);
    tt.not(built(dir, 'lib/a.js'), before, `${input} changed: rebuilt`);
    untouch(input);
  }

  // The stamp records the versions of the packages bundled into the commands (none here) and of
  // esbuild, which npm's dates would not show updated.
  const changes: [string, (record: Record<string, unknown>) => void][] = [
    ['a bundled package of another version', (record) => {
      record.bundled = { typebox: '0.0.1' };
    }],
    ['another esbuild', (record) => {
      record.esbuild = '0.0.1';
    }],
    ['a stamp of an earlier build script', (record) => {
      delete record.outputs;
    }],
  ];
  for (const [change, make] of changes) {
    const before = built(dir, 'lib/a.js');
    restamp(dir, make);
    tt.equal(build('--if-stale'), 0);
    tt.not(built(dir, 'lib/a.js'), before, `${change}: rebuilt`);
  }
  tt.equal(build('--if-stale'), 0);

  // A chunk gone (deleted by hand, say) would leave the commands unable to load it.
  const chunks = readdirSync(join(dir, 'dist', 'bin', 'chunks')).filter((name) => name.endsWith('.js'));
  tt.ok(chunks.length > 0, `the commands share a chunk (${chunks.join(', ')})`);
  const [chunk] = chunks;
  rmSync(join(dir, 'dist', 'bin', 'chunks', chunk ?? ''));
  tt.equal(build('--if-stale'), 0);
  tt.equal(spawnSync(join(dir, 'dist/bin/q.js'), { encoding: 'utf8' }).stdout, '2\n', 'a chunk gone is built again');

  rmSync(join(dir, 'dist', 'lib', 'a.js'));
  tt.equal(build('--if-stale'), 0);
  tt.ok(built(dir, 'lib/a.js') !== null, 'an output gone missing is built again');

  writeFileSync(join(dir, 'lib', 'gone.ts'), 'export const gone = 1;\n');
  tt.equal(build(), 0);
  rmSync(join(dir, 'lib', 'gone.ts'));
  tt.equal(build('--if-stale'), 0);
  tt.equal(built(dir, 'lib/gone.js'), null, "a deleted source's output does not linger");

  writeFileSync(join(dir, 'lib', 'a.ts'), "export const a: number = 'not a number';\n");
  tt.not(build(), 0, 'a type error fails the build');
  // tsc still writes its output, but the build is not known good: the next --if-stale tries again.
  writeFileSync(join(dir, 'lib', 'a.ts'), 'export const a: number = 2;\n');
  untouch('lib/a.ts');
  tt.equal(build('--if-stale'), 0);
  tt.equal(spawnSync(join(dir, 'dist/bin/p.js'), { encoding: 'utf8' }).stdout, '2\n', 'rebuilt after the failed build, though no source is newer');
});
