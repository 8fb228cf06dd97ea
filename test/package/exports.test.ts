import t from 'tap';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { buildEnv, buildIfStale, ROOT, TSC } from '../helpers/build.js';

/** Set by `npm run coverage`, which builds the commands a module per source (scripts/build.mjs). */
const UNBUNDLED = process.env.WORKER_TASK_API_UNBUNDLED_BUILD === '1' ? 'npm run coverage builds the commands unbundled' : false;

/**
 * The package as a user gets it: the three entry points of `exports`, imported by package name
 * from a project outside this repository (the repository symlinked into its node_modules, as
 * `npm link` would), their generated types checked by the compiler, nothing else importable,
 * and what `npm pack` would publish.
 */

/** Like a user's project: its own directory outside the repository, the package in node_modules. */
function userProject(): string {
  const dir = mkdtempSync(join(tmpdir(), 'wta-package-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(ROOT, join(dir, 'node_modules', 'worker-task-api'), 'dir');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'my-app', private: true, type: 'module' }));
  return dir;
}

// The suite's `before` program built dist/; this also covers running the file on its own.
t.before(buildIfStale);

t.test('a user imports the three entry points by package name, and nothing else', async (tt) => {
  const dir = userProject();
  writeFileSync(join(dir, 'check.mjs'), `
const report = {};
for (const name of ['worker-task-api', 'worker-task-api/node', 'worker-task-api/fetch']) {
  report[name] = Object.keys(await import(name)).sort();
}
for (const name of [
  'worker-task-api/lib/service.js', 'worker-task-api/dist/lib/service.js', 'worker-task-api/dist/lib/index.js',
  'worker-task-api/adapters/shared.js', 'worker-task-api/dist/adapters/shared.js', 'worker-task-api/bin/health.js',
]) {
  try {
    await import(name);
    report[name] = 'imported';
  } catch (error) {
    report[name] = error.code;
  }
}
const { createService } = await import('worker-task-api');
const { toFetchHandler } = await import('worker-task-api/fetch');
const { createNodeServer } = await import('worker-task-api/node');
const service = createService({ db: ':memory:' });
const response = await toFetchHandler(service, { prefix: '/app' })(new Request('http://localhost/app/api/v1/openapi.json'));
report.fetchOpenApi = [response.status, (await response.json()).openapi];
const server = createNodeServer(service);
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
const viaNode = await fetch('http://127.0.0.1:' + server.address().port + '/api/v1/identity');
report.nodeIdentity = viaNode.status;
server.close();
server.closeAllConnections();
service.close();
console.log(JSON.stringify(report));
`);
  const run = spawnSync(process.execPath, ['check.mjs'], { cwd: dir, encoding: 'utf8', env: buildEnv() });
  tt.equal(run.status, 0, run.stderr);
  const report = JSON.parse(run.stdout) as Record<string, unknown>;
  tt.same(report['worker-task-api'], [
    'AdminError', 'FixtureError', 'adminClients', 'createService', 'httpSourceProvider', 'loadFixture', 'loadFixtureFile', 'manualClock', 'openApiDocument',
    'systemClock',
  ], 'worker-task-api: the documented functions');
  tt.same(report['worker-task-api/node'], ['createNodeServer', 'toNodeHandler'], 'worker-task-api/node');
  tt.same(report['worker-task-api/fetch'], ['toFetchHandler'], 'worker-task-api/fetch');
  for (const internal of [
    'worker-task-api/lib/service.js', 'worker-task-api/dist/lib/service.js', 'worker-task-api/dist/lib/index.js',
    'worker-task-api/adapters/shared.js', 'worker-task-api/dist/adapters/shared.js', 'worker-task-api/bin/health.js',
  ]) {
    tt.equal(report[internal], 'ERR_PACKAGE_PATH_NOT_EXPORTED', `${internal} is not importable`);
  }
  tt.same(report['fetchOpenApi'], [200, '3.0.3'], 'the fetch entry point works');
  tt.equal(report['nodeIdentity'], 401, 'the node entry point works');
});

t.test('the generated .d.ts type a user program under NodeNext and strict, and internals have no types', async (tt) => {
  const dir = userProject();
  writeFileSync(join(dir, 'consumer.ts'), `
import type { IncomingMessage, Server as HttpServer, ServerResponse as NodeResponse } from 'node:http';
import type { Server as HttpsServer } from 'node:https';
import { adminClients, createService, type ClientSummary, type NewClient, type ResponseMeta, type Scope, type Service, type ServiceOptions, type ServiceResponse } from 'worker-task-api';
import { createNodeServer, toNodeHandler, type NodeHandlerOptions } from 'worker-task-api/node';
import { toFetchHandler, type FetchHandlerOptions } from 'worker-task-api/fetch';

const options: ServiceOptions = { db: ':memory:', rateLimit: 10 };
const service: Service = createService(options);
// What a request log keeps of an answer, named by its own type.
const logged = (meta: ResponseMeta | undefined): string | undefined => meta?.route;
const nodeOptions: NodeHandlerOptions = { prefix: '/x', onResponse: (response) => logged(response.meta) };
const listener: (req: IncomingMessage, res: NodeResponse) => void = toNodeHandler(service, nodeOptions);
const fetchOptions: FetchHandlerOptions = { prefix: '/x', onResponse: (response, request) => [response.meta?.clientId, request.url] };
const handler: (request: Request) => Promise<Response> = toFetchHandler(service, fetchOptions);
const answer: ServiceResponse | Promise<ServiceResponse> = service.handle({ method: 'GET', url: '/api/v1/identity', headers: {} });
// With tls the server is typed as what it is, an https.Server (setSecureContext for certificate renewal).
const secure: HttpsServer = createNodeServer(service, { tls: { cert: '', key: '' } });
const plain: HttpServer = createNodeServer(service, { prefix: '/x' });
// A body that may be missing, under exactOptionalPropertyTypes.
const upload = undefined as Buffer | undefined;
void service.handle({ method: 'POST', url: '/api/v1/tasks/1/notes', headers: {}, body: upload });
// Credentials issued in code, on the database the service uses.
declare const db: Parameters<typeof adminClients>[0];
const newClient: NewClient = { organisationId: 1, name: 'bot', sponsorId: 11, resourceId: null, scopes: [] };
const issued: string = adminClients(db, { clock: { now: () => 0 } }).create(newClient).token;
const granted: readonly Scope[] = adminClients(db).list().flatMap((client: ClientSummary) => client.scopes);
// @ts-expect-error the prefix is a string
toFetchHandler(service, { prefix: 1 });
// @ts-expect-error internals are not exported, so they have no types either
await import('worker-task-api/lib/service.js');
export { listener, handler, answer, secure, plain, issued, granted };
`);
  const check = spawnSync(process.execPath, [
    TSC, '--noEmit', '--strict', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', '--lib', 'es2023',
    '--types', 'node', '--typeRoots', join(ROOT, 'node_modules', '@types'), '--verbatimModuleSyntax', '--exactOptionalPropertyTypes', '--listFiles', 'consumer.ts',
  ], { cwd: dir, encoding: 'utf8', env: buildEnv() });
  tt.equal(check.status, 0, `tsc: ${check.stdout}${check.stderr}`);
  // TypeBox's declarations alone take a user's compiler some ten seconds to check; the public
  // types name the enumerations' plain lists, so a user who does not use TypeBox never loads them.
  const compiled = check.stdout.split('\n');
  tt.ok(compiled.some((file) => file.endsWith('/dist/lib/sources/provider.d.ts')), 'the compile reached the provider types');
  tt.same(compiled.filter((file) => file.includes('/node_modules/typebox/')), [], "the published types load none of TypeBox's");
  for (const entry of ['dist/lib/index.d.ts', 'dist/adapters/node-http.d.ts', 'dist/adapters/fetch.d.ts']) {
    tt.ok(existsSync(join(ROOT, entry)), `${entry} is generated`);
  }
});

t.test('every package the published .d.ts import has its types among the dependencies, not only the devDependencies', async (tt) => {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  const imported = new Set<string>();
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.d.ts')) {
        for (const match of readFileSync(path, 'utf8').matchAll(/(?:from |import\()['"]([^'"]+)['"]/g)) {
          const specifier = match[1] as string;
          if (!specifier.startsWith('.') && !specifier.startsWith('node:')) imported.add(specifier.split('/')[0] as string);
        }
      }
    }
  };
  for (const dir of ['lib', 'adapters', 'bin']) walk(join(ROOT, 'dist', dir));
  tt.ok(imported.has('better-sqlite3'), 'the scan sees the Database type');
  for (const name of imported) {
    const own = JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { types?: string; typings?: string };
    const typesPackage = own.types === undefined && own.typings === undefined ? `@types/${name}` : name;
    tt.ok(manifest.dependencies[typesPackage] !== undefined, `${name}: ${typesPackage} is a dependency`);
  }
});

t.test('npm pack would publish the built package, the schema, the fixtures, the unit file and the documents, and no sources', async (tt) => {
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const pack = spawnSync(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', env: buildEnv() });
  tt.equal(pack.status, 0, pack.stderr);
  const [manifest] = JSON.parse(pack.stdout) as { files: { path: string }[] }[];
  const files = (manifest?.files ?? []).map((file) => file.path);
  for (const expected of [
    'package.json', 'README.md', 'LICENSE', 'schema.sql', 'fixtures/demo.json', 'deploy/worker-task-api.service',
    'docs/spec/assigned-worker-task-api-v1.md', 'docs/design/contract.md',
    'dist/lib/index.js', 'dist/lib/index.d.ts', 'dist/adapters/node-http.js', 'dist/adapters/node-http.d.ts',
    'dist/adapters/fetch.js', 'dist/adapters/fetch.d.ts', 'dist/bin/worker-task-api.js',
  ]) {
    tt.ok(files.includes(expected), `${expected} is published`);
  }
  tt.same(files.filter((file) => /^(lib|adapters|bin|test|bench|dist\/test|dist\/bench)\//.test(file) || /(?<!\.d)\.ts$/.test(file)), [], 'no sources or tests');
  // The build starts from an empty dist/, so a module whose source was deleted is not shipped.
  // The command line is a bundle (scripts/build.mjs): its entry has its source, its chunks none.
  tt.same(files.filter((file) => file.startsWith('dist/') && !file.startsWith('dist/bin/chunks/') && file.endsWith('.js') && !existsSync(join(ROOT, file.slice('dist/'.length).replace(/\.js$/, '.ts')))), [],
    'every published module has its source');
  if (UNBUNDLED === false) tt.ok(files.some((file) => file.startsWith('dist/bin/chunks/')), 'the chunks of the command bundle are published');
  // The sources are not published, so a source map is of use only with the source inside it.
  const maps = files.filter((file) => file.endsWith('.js.map'));
  tt.ok(maps.length > 0, 'source maps are published');
  tt.same(maps.filter((file) => {
    const map = JSON.parse(readFileSync(join(ROOT, file), 'utf8')) as { sources: string[]; sourcesContent?: (string | null)[] };
    return map.sourcesContent?.length !== map.sources.length || map.sourcesContent.some((content) => typeof content !== 'string');
  }), [], 'every source map carries its source');
});

t.test('the command line is bundled: it imports no library module and no TypeBox file of its own, so it starts without reading hundreds of modules', { skip: UNBUNDLED }, async (tt) => {
  const bundle = readdirSync(join(ROOT, 'dist', 'bin'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.js'))
    .map((entry) => join(entry.parentPath, entry.name));
  tt.ok(bundle.length > 1, 'an entry and its chunks');
  const imported = new Set(bundle.flatMap((file) => [...readFileSync(file, 'utf8').matchAll(/(?:from |import\()\s*"([^"]+)"/g)].map((match) => match[1] as string)));
  tt.same([...imported].filter((specifier) => !specifier.startsWith('./') && !specifier.startsWith('../') && !specifier.startsWith('node:')).sort(), ['better-sqlite3', 'find-my-way', 'luxon'],
    'installed packages: the native addon and the small ones an npm update should reach');
  tt.same([...imported].filter((specifier) => specifier.startsWith('../') && !specifier.startsWith('../chunks/')), [], 'nothing outside the bundle');
  const stamp = JSON.parse(readFileSync(join(ROOT, 'dist', '.build-stamp'), 'utf8')) as { bundled?: Record<string, string>; outputs?: string[] };
  tt.ok(stamp.bundled?.typebox, "the stamp records the bundled TypeBox's version, so an update rebuilds");
  tt.same(stamp.outputs?.filter((file) => file.endsWith('.js')).sort(), bundle.map((file) => relative(join(ROOT, 'dist'), file)).sort(),
    'and every file of the bundle, so one gone missing rebuilds');
});

t.test('every command in package.json bin is executable after a build and runs on its own, as npx runs it', async (tt) => {
  const { bin } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };
  tt.same(Object.keys(bin), ['worker-task-api']);
  for (const [name, file] of Object.entries(bin)) {
    const path = join(ROOT, file);
    // npm sets the bit only when it first links a command; a rebuild that drops it breaks npx.
    tt.equal(statSync(path).mode & 0o111, 0o111, `${name}: ${file} is executable by all`);
    const run = spawnSync(path, ['--help'], { encoding: 'utf8', env: buildEnv() });
    tt.equal(run.status, 0, `${name} --help exits 0 when run directly (its #! line and mode)`);
    tt.match(run.stdout, /^Usage: worker-task-api /);
  }
});

t.test('the adapters load without the store: importing worker-task-api/fetch or /node loads no better-sqlite3', async (tt) => {
  const script = `
import { createRequire } from 'node:module';
await import(${JSON.stringify(join(ROOT, 'dist', 'adapters', 'fetch.js'))});
await import(${JSON.stringify(join(ROOT, 'dist', 'adapters', 'node-http.js'))});
const loaded = Object.keys(createRequire(import.meta.url).cache).filter((path) => path.includes('better-sqlite3'));
process.stdout.write(String(loaded.length));
`;
  const run = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', env: buildEnv() });
  tt.equal(run.status, 0, run.stderr);
  tt.equal(run.stdout, '0', 'a fetch host (or an edge runtime) pays for no native addon it does not use');
});
