// `npm run coverage [-- test files]`: the tests under V8 coverage, reported by c8 for lib/,
// adapters/ and bin/ (a table, and coverage/index.html).
//
// tap's own coverage stays off (package.json): through tsx it counted one file's 81 lines for a
// test that runs most of lib/. c8 reads V8's data itself and follows the source maps, tsx's and
// dist/'s (their sources inline), so what the built command line runs in a child process counts
// for its source file too.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const reports = join(root, 'coverage');
const raw = join(reports, 'tmp');
rmSync(reports, { recursive: true, force: true });
mkdirSync(raw, { recursive: true });

const testFiles = process.argv.slice(2);
const tests = spawnSync('npm', ['test', ...(testFiles.length > 0 ? ['--', ...testFiles] : [])], {
  cwd: root,
  stdio: 'inherit',
  // The commands built a module per source (scripts/build.mjs): c8 cannot follow a bundle. The
  // next `npm test` or build bundles them again.
  env: { ...process.env, NODE_V8_COVERAGE: raw, WORKER_TASK_API_UNBUNDLED_BUILD: '1' },
});

// c8 12 stops with ERR_INVALID_URL_SCHEME at a module tap mocks: t.mockImport loads a copy under a
// tapmock: URL, and c8 takes every source map's key for a file URL. The copies are dropped, so
// what a test runs only through a mocked import is not counted.
for (const name of readdirSync(raw)) {
  const path = join(raw, name);
  const data = JSON.parse(readFileSync(path, 'utf8'));
  const maps = data['source-map-cache'] ?? {};
  const mocked = Object.keys(maps).filter((url) => !url.startsWith('file:'));
  if (mocked.length === 0) continue;
  for (const url of mocked) delete maps[url];
  data.result = data.result.filter((script) => !script.url.startsWith('tapmock:'));
  writeFileSync(path, JSON.stringify(data));
}

const c8 = createRequire(import.meta.url).resolve('c8/bin/c8.js');
const sources = ['lib', 'adapters', 'bin'];
// `--all` lists the files no test loads too, so that none goes unseen; but a module of types alone
// compiles to nothing (`export {};`) and would show as 0% of its lines, so those are left out.
const typesOnly = sources.flatMap((dir) =>
  readdirSync(join(root, 'dist', dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.js'))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((built) => readFileSync(built, 'utf8').replace(/\/\/# sourceMappingURL=.*$/m, '').trim() === 'export {};')
    .map((built) => relative(join(root, 'dist'), built).replace(/\.js$/, '.ts')),
);
const report = spawnSync(
  process.execPath,
  [
    c8,
    'report',
    `--temp-directory=${raw}`,
    `--reports-dir=${reports}`,
    '--reporter=text',
    '--reporter=html',
    '--all',
    ...sources.map((dir) => `--src=${dir}`),
    ...sources.map((dir) => `--include=${dir}/**`),
    ...typesOnly.map((file) => `--exclude=${file}`),
    // Applied to the source each built file maps back to, so dist/lib/x.js counts for lib/x.ts.
    '--exclude-after-remap',
  ],
  { cwd: root, stdio: 'inherit' },
);
// The raw data runs to hundreds of megabytes (every test process writes its own).
rmSync(raw, { recursive: true, force: true });
process.exit(tests.status !== 0 ? (tests.status ?? 1) : (report.status ?? 1));
