#!/usr/bin/env node
import { existsSync, readFileSync } from 'node:fs';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { isIP, type AddressInfo } from 'node:net';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import { dirname, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { ClientSummary } from '../lib/admin/clients.js';
import { makeParents, removeDatabaseFiles, removeEmptyDirectories } from '../lib/store/files.js';
import { isScope, SCOPES } from '../lib/auth/scopes.js';
import type { LoadSummary } from '../lib/fixtures/load.js';
import type { ResponseMeta, ServiceResponse } from '../lib/http/types.js';
import type { Service } from '../lib/service.js';
import type { Db } from '../lib/store/open.js';

// The library (schemas compiled at load, SQLite) is imported only once the command line has been
// parsed, so --help and usage errors answer at once.

const USAGE = `Usage: worker-task-api <command> [options]

Commands:
  serve [--db FILE] [--host H] [--port N] [--fixture FILE] [--source KEY=BASEURL]...
        [--rate-limit N] [--demo] [--tls-cert FILE --tls-key FILE]
      Serve the API; prints "listening on http://HOST:PORT" once it accepts connections,
      logs one JSON line per request to stderr, answers GET /healthz, stops cleanly on
      SIGTERM and SIGINT.
  load FIXTURE [--db FILE]
      Validate a fixture file and load it (a bad fixture changes nothing). Fixtures upsert
      by id: this is how organisations, staff, projects, tasks and assignments are managed.
  client create --org ID --name NAME --sponsor STAFF_ID [--resource STAFF_ID]
                --scope S [--scope S]... [--db FILE]
  client rotate ID [--db FILE]
  client revoke ID [--db FILE]
  client list [--db FILE]
      Manage API clients. A created or rotated token is printed once; only its hash is stored.
  backup FILE [--db FILE]
      Write a consistent copy of the database to a new FILE, also while a server is using it.

Options:
  --db FILE             SQLite database (default ./data/worker-task-api.sqlite)  [env WTA_DB]
  --host H              address to bind (default 127.0.0.1)                      [env WTA_HOST]
  --port N              port, 0 for any free one (default 8080)                  [env WTA_PORT]
  --fixture FILE        load this fixture before serving                         [env WTA_FIXTURE]
  --source KEY=BASEURL  the built-in http provider for linked items with this providerKey
                        (repeatable)                   [env WTA_SOURCES=KEY=BASEURL,KEY=BASEURL]
  --rate-limit N        requests per client per 60-second window (default 120)   [env WTA_RATE_LIMIT]
  --demo                load the bundled demo fixture into an empty database and print how to
                        call it                                                  [env WTA_DEMO=1]
  --tls-cert FILE       PEM certificate; with --tls-key, serve HTTPS             [env WTA_TLS_CERT]
  --tls-key FILE        PEM private key                                          [env WTA_TLS_KEY]
  -h, --help            show this help

Scopes: ${SCOPES.join(', ')}
`;

const DEFAULT_DB = './data/worker-task-api.sqlite';
// lib/schemas/common.ts has it too, but importing it loads TypeBox, which would triple the time
// every command (`--help` included) takes to start.
const INT32_MAX = 2147483647;

/** Bad command line: usage on stderr, exit 2. */
class UsageError extends Error {}

/** Expected operational failure: `error: ...` on stderr, exit 1. */
class CommandError extends Error {}

type FlagOptions = NonNullable<ParseArgsConfig['options']>;

/**
 * What parseArgs lets through but is still a usage error: a flag given twice (unless it may
 * repeat), which would otherwise silently take the last value, and an empty value (`--db ''`
 * would open a throwaway database, `--host=` bind every interface).
 */
function checkFlags(args: string[], options: FlagOptions): void {
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  const seen = new Set<string>();
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const spec = options[token.name];
    if (spec === undefined) continue;
    if (spec.type === 'string' && token.value === '') throw new UsageError(`${token.rawName} must not be empty`);
    if (spec.multiple === true) continue;
    if (seen.has(token.name)) throw new UsageError(`${token.rawName} given twice`);
    seen.add(token.name);
  }
}

function env(name: string): string | undefined {
  const value = process.env[name];
  return value === undefined || value === '' ? undefined : value;
}

function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

function err(line: string): void {
  process.stderr.write(`${line}\n`);
}

function parseInteger(text: string, what: string, min: number, max: number): number {
  if (!/^[0-9]+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new UsageError(`${what} must be an integer from ${min} to ${max}, got "${text}"`);
  }
  return Number(text);
}

function parseId(text: string | undefined, what: string): number {
  if (text === undefined) throw new UsageError(`${what} is required`);
  return parseInteger(text, what, 1, INT32_MAX);
}

/** `--source` values, or `WTA_SOURCES` split at commas; `what` names the origin in messages. */
function parseSources(specs: readonly string[], what = '--source'): Map<string, URL> {
  const sources = new Map<string, URL>();
  for (const spec of specs) {
    const at = spec.indexOf('=');
    const key = at === -1 ? '' : spec.slice(0, at);
    const base = at === -1 ? '' : spec.slice(at + 1);
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(key)) throw new UsageError(`${what} must be KEY=BASEURL, got "${spec}"`);
    if (sources.has(key)) throw new UsageError(`${what} ${key} given twice`);
    let url: URL;
    try {
      url = new URL(base);
    } catch {
      throw new UsageError(`${what} ${key}: "${base}" is not an absolute URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${what} ${key}: the base URL must be http or https`);
    sources.set(key, url);
  }
  return sources;
}

/** `--source` flags win; otherwise `WTA_SOURCES`, comma-separated `KEY=BASEURL` pairs. */
function sourceSpecs(flags: readonly string[] | undefined): Map<string, URL> {
  if (flags !== undefined && flags.length > 0) return parseSources(flags);
  const fromEnv = env('WTA_SOURCES');
  if (fromEnv === undefined) return new Map();
  return parseSources(fromEnv.split(',').map((spec) => spec.trim()).filter((spec) => spec !== ''), 'WTA_SOURCES');
}

/** A boolean environment setting: 1/true/yes or 0/false/no. */
function envFlag(name: string): boolean | undefined {
  const value = env(name);
  if (value === undefined) return undefined;
  if (/^(1|true|yes)$/i.test(value)) return true;
  if (/^(0|false|no)$/i.test(value)) return false;
  throw new UsageError(`${name} must be 1, true or yes, or 0, false or no, got "${value}"`);
}

/** The CLI's database, and how to give it up when the command fails. */
interface OpenedDb {
  readonly db: Db;
  /** Closes it and removes what opening created (the file, directories), so a failure leaves no trace. */
  abandon(): void;
}

/**
 * Opens the database the CLI owns, creating the directory of a file database first. With
 * `mustExist` (commands that manage what is already there) a missing file is an error instead:
 * a mistyped `--db` would otherwise leave an empty database behind.
 */
async function openDb(dbOption: string | undefined, mustExist = false): Promise<OpenedDb> {
  const path = dbOption ?? env('WTA_DB') ?? DEFAULT_DB;
  const file = path === ':memory:' ? undefined : resolve(path);
  const existed = file === undefined || existsSync(file);
  if (mustExist && !existed) throw new CommandError(`no database at ${path} (serve or load creates one)`);
  const { fileHoldsServiceSchema, openDatabase } = await import('../lib/store/open.js');
  // Managing clients of a file that is not yet the service's (a mistyped --db that hit another
  // application's database, say) would install the schema in it: looked at first, writing nothing.
  if (mustExist && file !== undefined && !fileHoldsServiceSchema(file)) {
    throw new CommandError(`${path} is not a worker-task-api database (serve or load creates one)`);
  }
  let createdDirectory: string | undefined;
  const removeCreated = (): void => {
    if (file === undefined || existed) return;
    removeDatabaseFiles(file);
    if (createdDirectory !== undefined) removeEmptyDirectories(dirname(file), createdDirectory);
  };
  try {
    if (file !== undefined) createdDirectory = makeParents(dirname(file));
    const { db } = openDatabase(path);
    return {
      db,
      abandon: () => {
        db.close();
        removeCreated();
      },
    };
  } catch (error) {
    removeCreated();
    throw new CommandError(`cannot open database ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Runs a command on the database: closed afterwards, and abandoned (see OpenedDb) if it throws. */
async function withDb<T>(dbOption: string | undefined, action: (db: Db) => T, mustExist = false): Promise<T> {
  const opened = await openDb(dbOption, mustExist);
  let result: T;
  try {
    result = action(opened.db);
  } catch (error) {
    opened.abandon();
    throw error;
  }
  opened.db.close();
  return result;
}

function summaryLine(summary: LoadSummary): string {
  return (
    `loaded ${summary.organisations} organisations, ${summary.staff} staff, ${summary.clients} clients, ` +
    `${summary.projects} projects, ${summary.tasks} tasks, ${summary.claims} claims`
  );
}

function isLoopback(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^(::ffff:)?127\./.test(bare);
}

function urlHost(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host;
}

/** The demo client with a resource, as listed in the bundled fixture. */
function demoAgentToken(path: string): string | undefined {
  const fixture = JSON.parse(readFileSync(path, 'utf8')) as { clients?: { token?: unknown; resourceId?: unknown }[] };
  const agent = fixture.clients?.find((client) => client.resourceId !== null && typeof client.token === 'string');
  return typeof agent?.token === 'string' ? agent.token : undefined;
}

function readPem(path: string, flag: string): Buffer {
  try {
    return readFileSync(path);
  } catch {
    throw new CommandError(`cannot read ${flag} ${path}`);
  }
}

interface TlsFile {
  readonly path: string;
  /** The flag or environment variable that named it, for messages. */
  readonly name: string;
}

/**
 * Reads the certificate and key and checks them together before anything is opened, so a wrong,
 * swapped or mismatched file is named in words rather than by an OpenSSL error code.
 */
function readTlsPair(certFile: TlsFile, keyFile: TlsFile): { cert: Buffer; key: Buffer } {
  const cert = readPem(certFile.path, certFile.name);
  const key = readPem(keyFile.path, keyFile.name);
  const problem = (options: SecureContextOptions): boolean => {
    try {
      createSecureContext(options);
      return false;
    } catch {
      return true;
    }
  };
  if (problem({ cert })) throw new CommandError(`${certFile.name} ${certFile.path} is not a PEM certificate`);
  if (problem({ key })) throw new CommandError(`${keyFile.name} ${keyFile.path} is not a PEM private key (without a passphrase)`);
  if (problem({ cert, key })) throw new CommandError(`${keyFile.name} ${keyFile.path} is not the private key of the certificate in ${certFile.name} ${certFile.path}`);
  return { cert, key };
}

const SERVE_OPTIONS = {
  db: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  fixture: { type: 'string' },
  source: { type: 'string', multiple: true },
  'rate-limit': { type: 'string' },
  demo: { type: 'boolean' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies FlagOptions;

/** What one request-log line says about an answer. */
interface Answered {
  readonly method: string | null;
  readonly meta: ResponseMeta | undefined;
  readonly status: number;
  readonly durationMs: number | null;
  readonly traceId: string | undefined;
}

/** What `serve` runs with, from its flags and, where a flag is absent, its environment variable. */
interface ServeConfig {
  readonly host: string;
  readonly port: number;
  readonly rateLimit: number | undefined;
  readonly sourceUrls: Map<string, URL>;
  readonly fixturePath: string | undefined;
  readonly demo: boolean;
  readonly tls: { cert: Buffer; key: Buffer } | undefined;
}

type ServeValues = ReturnType<typeof parseArgs<{ args: string[]; strict: true; allowPositionals: false; options: typeof SERVE_OPTIONS }>>['values'];

function serveConfig(values: ServeValues): ServeConfig {
  const host = values.host ?? env('WTA_HOST') ?? '127.0.0.1';
  // A bad value is reported under the name it was given by: the flag, or else the variable.
  const port = parseInteger(values.port ?? env('WTA_PORT') ?? '8080', values.port === undefined ? 'WTA_PORT' : '--port', 0, 65535);
  const rateLimitText = values['rate-limit'] ?? env('WTA_RATE_LIMIT');
  const rateLimitName = values['rate-limit'] === undefined ? 'WTA_RATE_LIMIT' : '--rate-limit';
  const rateLimit = rateLimitText === undefined ? undefined : parseInteger(rateLimitText, rateLimitName, 1, 1e9);
  const sourceUrls = sourceSpecs(values.source);
  const fixturePath = values.fixture ?? env('WTA_FIXTURE');
  const demo = values.demo ?? envFlag('WTA_DEMO') ?? false;
  const certPath = values['tls-cert'] ?? env('WTA_TLS_CERT');
  const keyPath = values['tls-key'] ?? env('WTA_TLS_KEY');
  if ((certPath === undefined) !== (keyPath === undefined)) {
    const given = certPath !== undefined
      ? (values['tls-cert'] === undefined ? 'WTA_TLS_CERT' : '--tls-cert')
      : (values['tls-key'] === undefined ? 'WTA_TLS_KEY' : '--tls-key');
    throw new UsageError(`--tls-cert and --tls-key go together (or WTA_TLS_CERT and WTA_TLS_KEY): ${given} was given alone`);
  }
  const tls =
    certPath === undefined || keyPath === undefined
      ? undefined
      : readTlsPair(
        { path: certPath, name: values['tls-cert'] === undefined ? 'WTA_TLS_CERT' : '--tls-cert' },
        { path: keyPath, name: values['tls-key'] === undefined ? 'WTA_TLS_KEY' : '--tls-key' },
      );
  return { host, port, rateLimit, sourceUrls, fixturePath, demo, tls };
}

/**
 * Loads the demo (only into an empty database, so a restart keeps what the user changed) and then
 * `--fixture` over it, in one transaction: a fixture that fails takes the demo back with it.
 * Returns the demo agent's token when it works in this database.
 */
async function seedDatabase(db: Db, demo: boolean, fixturePath: string | undefined): Promise<string | undefined> {
  const [{ hashToken }, { loadFixtureFile }, { packageFile }] = await Promise.all([
    import('../lib/auth/token.js'),
    import('../lib/fixtures/load.js'),
    import('../lib/store/package-files.js'),
  ]);
  const demoPath = packageFile('fixtures/demo.json');
  const demoLoaded = db.transaction(() => {
    const empty = (db.prepare<[], { n: number }>('SELECT count(*) AS n FROM organisations').get()?.n ?? 0) === 0;
    const summary = demo && empty ? loadFixtureFile(db, demoPath) : undefined;
    if (fixturePath !== undefined) loadFixtureFile(db, fixturePath);
    return summary;
  }).immediate();
  // Told only once committed: a failing fixture takes the demo back with it.
  if (demoLoaded !== undefined) err(`demo: ${summaryLine(demoLoaded)}`);
  if (!demo) return undefined;
  const token = demoAgentToken(demoPath);
  const active = token === undefined ? undefined : db.prepare<[string], { id: number }>(
    'SELECT id FROM api_clients WHERE token_hash = ? AND is_active = 1',
  ).get(hashToken(token));
  if (active === undefined) {
    err('demo: the database already holds other data; the demo token does not work in it');
    return undefined;
  }
  return token;
}

/**
 * One JSON line per answered request on stderr: never the path as sent, a token or a body. The
 * adapter's hooks hand over what the service knew (route template, client id, trace id); `attach`
 * times every request the server answers.
 */
function requestLog() {
  // What the service knows of each request for its log line; never sent.
  const metaOf = new WeakMap<IncomingMessage, ResponseMeta & { traceId?: string }>();
  // A CONNECT is answered on its socket, without a ServerResponse to wait for.
  const connectStarted = new WeakMap<IncomingMessage, number>();
  const logLine = ({ method, meta, status, durationMs, traceId }: Answered): void => {
    err(JSON.stringify({
      time: new Date().toISOString(),
      level: 'info',
      method,
      route: meta?.route ?? null,
      status,
      durationMs: durationMs === null ? null : Math.round(durationMs * 100) / 100,
      clientId: meta?.clientId ?? null,
      traceId: traceId ?? null,
    }));
  };
  return {
    // The adapter sends headers with one writeHead (res.getHeader cannot see them): the trace id
    // is taken from the answer itself.
    onResponse(response: ServiceResponse, req: IncomingMessage): void {
      const traceId = response.headers['x-trace-id'];
      const started = connectStarted.get(req);
      if (started !== undefined) {
        logLine({ method: req.method ?? null, meta: response.meta, status: response.status, durationMs: performance.now() - started, traceId });
      }
      else metaOf.set(req, { ...response.meta, ...(traceId === undefined ? {} : { traceId }) });
    },
    // Bytes node:http cannot parse never become a request; their answer gets a line all the same.
    onClientError(response: ServiceResponse): void {
      logLine({ method: response.meta?.method ?? null, meta: response.meta, status: response.status, durationMs: null, traceId: response.headers['x-trace-id'] });
    },
    attach(server: Server): void {
      server.prependListener('connect', (req: IncomingMessage) => connectStarted.set(req, performance.now()));
      const logRequest = (req: IncomingMessage, res: ServerResponse): void => {
        const started = performance.now();
        res.once('finish', () => {
          const meta = metaOf.get(req);
          logLine({ method: req.method ?? null, meta, status: res.statusCode, durationMs: performance.now() - started, traceId: meta?.traceId });
        });
      };
      for (const event of ANSWERED_ON) server.on(event, logRequest);
    },
  };
}

/** Every event the adapter answers a request on. */
const ANSWERED_ON = ['request', 'checkContinue', 'checkExpectation'] as const;

/**
 * SIGTERM and SIGINT stop the server cleanly: answers still to be sent say `Connection: close`,
 * idle keep-alive connections close, work in flight finishes (`service.idle()`), then the
 * database closes. A second signal cuts slow clients off; busy ones get 10 s. Returns whether
 * the server is stopping (the health check answers 503 from then on).
 */
function stopOnSignals(server: Server, service: Service, db: Db): () => boolean {
  let stopping = false;
  // Prepended: the adapter may answer synchronously, and headers must be set before it writes them.
  const unanswered = new Set<ServerResponse>();
  const trackAnswer = (_req: IncomingMessage, res: ServerResponse): void => {
    if (stopping) {
      res.setHeader('connection', 'close');
      return;
    }
    unanswered.add(res);
    res.once('close', () => unanswered.delete(res));
  };
  for (const event of ANSWERED_ON) server.prependListener(event, trackAnswer);

  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) {
      // A second signal: stop waiting for slow clients.
      server.closeAllConnections();
      return;
    }
    stopping = true;
    for (const res of unanswered) if (!res.headersSent) res.setHeader('connection', 'close');
    err(JSON.stringify({ time: new Date().toISOString(), level: 'info', message: 'stopping', signal }));
    server.close(() => {
      // Publications to linked sources in flight finish first (each is bounded by its deadline).
      void service.idle().finally(() => {
        service.close();
        if (db.open) db.close();
        process.exitCode = 0;
      });
    });
    server.closeIdleConnections();
    // Keep-alive connections that stay busy get 10 s to finish before they are cut.
    setTimeout(() => server.closeAllConnections(), 10_000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  return () => stopping;
}

/** Set once `serve` runs: from then on lost output is the log's loss, not the command's failure. */
let serving = false;

async function serve(args: string[]): Promise<void> {
  serving = true;
  const { values } = parseArgs({ args, strict: true, allowPositionals: false, options: SERVE_OPTIONS });
  checkFlags(args, SERVE_OPTIONS);
  if (values.help === true) {
    process.stdout.write(USAGE);
    return;
  }
  const { host, port, rateLimit, sourceUrls, fixturePath, demo, tls } = serveConfig(values);

  const [{ createNodeServer }, { withHealthCheck }, { createService }, { httpSourceProvider }] = await Promise.all([
    import('../adapters/node-http.js'),
    import('./health.js'),
    import('../lib/service.js'),
    import('../lib/sources/http-provider.js'),
  ]);
  // Each --source KEY=BASEURL is the built-in http provider for linked items of that providerKey.
  const sources = Object.fromEntries([...sourceUrls].map(([key, url]) => {
    try {
      return [key, httpSourceProvider(url.toString())];
    } catch (error) {
      // What the provider refuses (credentials it cannot send) is the operator's flag to fix.
      throw new UsageError(`source ${key}: ${error instanceof Error ? error.message.replace(/^httpSourceProvider: /, '') : String(error)}`);
    }
  }));
  const opened = await openDb(values.db);
  const { db } = opened;
  let demoToken: string | undefined;
  try {
    demoToken = await seedDatabase(db, demo, fixturePath);
  } catch (error) {
    opened.abandon();
    throw error;
  }

  const service = createService({ db, sources, ...(rateLimit === undefined ? {} : { rateLimit }) });
  const log = requestLog();
  // Set once the server is made (the health check is part of it) and before it listens.
  let stopping = (): boolean => false;
  const server = createNodeServer(withHealthCheck(service, { db, stopping: () => stopping() }), {
    ...(tls === undefined ? {} : { tls }),
    onResponse: log.onResponse,
    onClientError: log.onClientError,
  });
  log.attach(server);
  stopping = stopOnSignals(server, service, db);
  const scheme = tls === undefined ? 'http' : 'https';

  server.once('error', (error: Error) => {
    err(`error: cannot listen on ${urlHost(host)}:${port}: ${error.message}`);
    // Like any failed command: a database this start created goes again.
    service.close();
    opened.abandon();
    process.exitCode = 1;
  });

  server.listen(port, host, () => {
    const address = server.address() as AddressInfo;
    out(`listening on ${scheme}://${urlHost(host)}:${address.port}`);
    if (tls === undefined && !isLoopback(host)) {
      err(`warning: serving plain HTTP on ${host}; bearer tokens cross the network unencrypted. Use --tls-cert and --tls-key, or a TLS-terminating proxy.`);
    }
    if (demoToken !== undefined) {
      const callHost = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : urlHost(host);
      const base = `${scheme}://${callHost}:${address.port}/api/v1`;
      out('');
      out('Demo agent "ada-bot" is ready. Try:');
      out(`  curl -H 'Authorization: Bearer ${demoToken}' ${base}/identity`);
      out(`  curl -H 'Authorization: Bearer ${demoToken}' ${base}/tasks/available`);
    }
  });
}

/**
 * The shape `load` and `backup` share: one FILE argument and `--db`. Answers null after printing
 * the usage for `--help`.
 */
function fileCommand(args: string[], what: string): { file: string; db: string | undefined } | null {
  const options = { db: { type: 'string' }, help: { type: 'boolean', short: 'h' } } as const satisfies FlagOptions;
  const { values, positionals } = parseArgs({ args, strict: true, allowPositionals: true, options });
  checkFlags(args, options);
  if (values.help === true) {
    process.stdout.write(USAGE);
    return null;
  }
  const [file, ...extra] = positionals;
  if (file === undefined) throw new UsageError(what);
  if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0] ?? ''}"`);
  return { file, db: values.db };
}

async function load(args: string[]): Promise<void> {
  const command = fileCommand(args, 'load needs a FIXTURE file');
  if (command === null) return;
  const fixture = command.file;
  const { loadFixtureFile } = await import('../lib/fixtures/load.js');
  out(summaryLine(await withDb(command.db, (db) => loadFixtureFile(db, fixture))));
}

function clientLine(client: ClientSummary): string {
  return [
    `id=${client.id}`,
    `org=${client.organisationId}`,
    `name=${JSON.stringify(client.name)}`,
    `sponsor=${client.sponsorId}`,
    `resource=${client.resourceId ?? 'none'}`,
    `active=${client.isActive ? 'yes' : 'no'}`,
    `scopes=${client.scopes.join(',')}`,
  ].join(' ');
}

function printToken(token: string): void {
  out(`token: ${token}`);
  out('This token is shown only once and cannot be recovered (only its hash is stored); keep it now.');
}

async function client(args: string[]): Promise<void> {
  const [action, ...rest] = args;
  if (action === undefined) throw new UsageError('client needs an action: create, rotate, revoke or list');
  if (action === '--help' || action === '-h') {
    process.stdout.write(USAGE);
    return;
  }
  const options: FlagOptions =
    action === 'create'
      ? {
          db: { type: 'string' },
          org: { type: 'string' },
          name: { type: 'string' },
          sponsor: { type: 'string' },
          resource: { type: 'string' },
          scope: { type: 'string', multiple: true },
          help: { type: 'boolean', short: 'h' },
        }
      : { db: { type: 'string' }, help: { type: 'boolean', short: 'h' } };
  const { values, positionals } = parseArgs({ args: rest, strict: true, allowPositionals: true, options });
  checkFlags(rest, options);
  if (values.help === true) {
    process.stdout.write(USAGE);
    return;
  }
  const { adminClients } = await import('../lib/admin/clients.js');
  const str = (name: string): string | undefined => {
    const value = values[name];
    return typeof value === 'string' ? value : undefined;
  };

  switch (action) {
    case 'create': {
      if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0] ?? ''}"`);
      const organisationId = parseId(str('org'), '--org');
      const name = str('name');
      if (name === undefined) throw new UsageError('--name is required');
      const sponsorId = parseId(str('sponsor'), '--sponsor');
      const resourceText = str('resource');
      const resourceId = resourceText === undefined ? null : parseId(resourceText, '--resource');
      const scopes = values['scope'];
      if (!Array.isArray(scopes) || scopes.length === 0) throw new UsageError('at least one --scope is required');
      // A bad flag value is a usage error (exit 2), found before the database is opened.
      const unknownScope = scopes.find((scope) => typeof scope !== 'string' || !isScope(scope));
      if (unknownScope !== undefined) throw new UsageError(`unknown scope "${String(unknownScope)}" (scopes: ${SCOPES.join(', ')})`);
      const created = await withDb(str('db'), (db) => adminClients(db).create({
        organisationId,
        name,
        sponsorId,
        resourceId,
        scopes: scopes.filter((scope): scope is string => typeof scope === 'string'),
      }), true);
      out(`created client ${clientLine(created.client)}`);
      printToken(created.token);
      return;
    }
    case 'rotate':
    case 'revoke': {
      const [idText, ...extra] = positionals;
      if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0] ?? ''}"`);
      const id = parseId(idText, `client ${action} ID`);
      if (action === 'rotate') {
        const rotated = await withDb(str('db'), (db) => adminClients(db).rotate(id), true);
        out(`rotated client ${clientLine(rotated.client)}; the old token no longer works`);
        printToken(rotated.token);
      } else {
        const revoked = await withDb(str('db'), (db) => adminClients(db).revoke(id), true);
        out(`${revoked.wasActive ? 'revoked' : 'already revoked:'} client ${clientLine(revoked.client)}`);
        if (revoked.releasedLeases > 0) out(`released ${revoked.releasedLeases} live lease${revoked.releasedLeases === 1 ? '' : 's'} it held`);
      }
      return;
    }
    case 'list': {
      if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0] ?? ''}"`);
      for (const summary of await withDb(str('db'), (db) => adminClients(db).list(), true)) out(clientLine(summary));
      return;
    }
    default:
      throw new UsageError(`unknown client action "${action}"`);
  }
}

/** A consistent online copy of the database (see lib/admin/backup.ts), also while serving. */
async function backup(args: string[]): Promise<void> {
  const command = fileCommand(args, 'backup needs a target FILE');
  if (command === null) return;
  const target = command.file;
  const source = command.db ?? env('WTA_DB') ?? DEFAULT_DB;
  const { backupDatabase } = await import('../lib/admin/backup.js');
  const { pages } = await backupDatabase(source, target);
  out(`backed up ${source} to ${target} (${pages} pages, integrity ok)`);
}

async function main(argv: string[]): Promise<void> {
  const [command, ...args] = argv;
  switch (command) {
    case undefined:
      // A usage error like any other: the usage goes to stderr (only --help's goes to stdout).
      process.stderr.write(USAGE);
      process.exitCode = 2;
      return;
    case '--help':
    case '-h':
    case 'help':
      process.stdout.write(USAGE);
      return;
    case 'serve':
      return serve(args);
    case 'load':
      return load(args);
    case 'client':
      return client(args);
    case 'backup':
      return backup(args);
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

function isParseArgsError(error: unknown): error is Error {
  return error instanceof TypeError && 'code' in error && String(error.code).startsWith('ERR_PARSE_ARGS');
}

// A reader of the output that goes away (`serve | head -1`, a log shipper that dies) must not take
// the server down with it: node would throw EPIPE as an unhandled 'error' event. What cannot be
// written is lost; the API keeps answering. A one-shot command whose output is lost (a new token,
// say) has failed, though: it exits 1, without the stack trace.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', () => {
    if (!serving) process.exitCode = 1;
  });
}

main(process.argv.slice(2)).catch(async (error: unknown) => {
  if (error instanceof UsageError || isParseArgsError(error)) {
    err(`error: ${error.message}\n`);
    process.stderr.write(USAGE);
    process.exitCode = 2;
    return;
  }
  // Already loaded when they can have been thrown.
  const [{ FixtureError }, { AdminError }] = await Promise.all([import('../lib/fixtures/load.js'), import('../lib/admin/clients.js')]);
  if (error instanceof FixtureError) {
    err(`fixture error: ${error.message}`);
  } else if (error instanceof AdminError || error instanceof CommandError) {
    err(`error: ${error.message}`);
  } else {
    err(`error: ${error instanceof Error ? error.message : String(error)}`);
  }
  process.exitCode = 1;
});
