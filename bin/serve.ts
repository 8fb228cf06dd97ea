import { isIP, type AddressInfo } from 'node:net';
import { resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { attachNegativeValues, checkFlags, env, envFlag, err, type FlagOptions, logLine, out, parseInteger, USAGE, UsageError } from './command-line.js';
import { openDb } from './database.js';
import { requestLog } from './request-log.js';
import { logNotes, seedDatabase } from './seed.js';
import { CONNECTION_LIMITS, limitConnections } from './connection-limits.js';
import { stopOnSignals } from './shutdown.js';
import { readTlsPair } from './tls.js';

/**
 * `--source` values, or `WTA_SOURCES` split at commas; `what` names the origin in messages. The
 * messages never repeat a value: a base URL may carry a password (a mistyped one, or one cut at a
 * comma in it), and they go to the journal.
 */
function parseSources(specs: readonly string[], what = '--source'): Map<string, URL> {
  const sources = new Map<string, URL>();
  for (const [index, spec] of specs.entries()) {
    const at = spec.indexOf('=');
    const key = at === -1 ? '' : spec.slice(0, at);
    const base = at === -1 ? '' : spec.slice(at + 1);
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(key)) {
      throw new UsageError(`${what} must be KEY=BASEURL (KEY of letters, digits, . _ -); ${specs.length > 1 ? `entry ${index + 1} is not` : 'it is not'}`);
    }
    if (sources.has(key)) throw new UsageError(`${what} ${key} given twice`);
    let url: URL;
    try {
      url = new URL(base);
    } catch {
      throw new UsageError(`${what} ${key}: the base URL is not an absolute URL`);
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

/** Whether the address the server is bound to (resolved, so a host name is judged by its IP) is loopback. */
function isLoopback(address: string): boolean {
  return address === '::1' || /^(::ffff:)?127\./.test(address.toLowerCase());
}

function urlHost(host: string): string {
  return isIP(host) === 6 ? `[${host}]` : host;
}

const SERVE_OPTIONS = {
  db: { type: 'string' },
  host: { type: 'string' },
  port: { type: 'string' },
  fixture: { type: 'string' },
  source: { type: 'string', multiple: true },
  'rate-limit': { type: 'string' },
  'keep-alive-timeout': { type: 'string' },
  demo: { type: 'boolean' },
  'tls-cert': { type: 'string' },
  'tls-key': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies FlagOptions;

/** What `serve` runs with, from its flags and, where a flag is absent, its environment variable. */
interface ServeConfig {
  readonly host: string;
  readonly port: number;
  readonly rateLimit: number | undefined;
  readonly keepAliveTimeoutMs: number;
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
  const keepAliveText = values['keep-alive-timeout'] ?? env('WTA_KEEP_ALIVE_TIMEOUT');
  const keepAliveName = values['keep-alive-timeout'] === undefined ? 'WTA_KEEP_ALIVE_TIMEOUT' : '--keep-alive-timeout';
  const keepAliveTimeoutMs = keepAliveText === undefined ? CONNECTION_LIMITS.keepAliveTimeoutMs : parseInteger(keepAliveText, keepAliveName, 1, 3600) * 1000;
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
  return { host, port, rateLimit, keepAliveTimeoutMs, sourceUrls, fixturePath, demo, tls };
}

export async function serve(given: string[]): Promise<void> {
  const args = attachNegativeValues(given, SERVE_OPTIONS);
  const { values } = parseArgs({ args, strict: true, allowPositionals: false, options: SERVE_OPTIONS });
  checkFlags(args, SERVE_OPTIONS);
  if (values.help === true) {
    process.stdout.write(USAGE);
    return;
  }
  const { host, port, rateLimit, keepAliveTimeoutMs, sourceUrls, fixturePath, demo, tls } = serveConfig(values);

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
  const seeded = await seedDatabase(db, demo, fixturePath, opened.claimIfEmpty).then((result) => {
    // A failing command that made the file may have removed it meanwhile: serving it would take
    // writes into a file nobody can open again.
    opened.assertInPlace();
    return result;
  }).catch((error: unknown) => {
    opened.abandon();
    throw opened.failure(error);
  });

  const service = createService({ db, sources, ...(rateLimit === undefined ? {} : { rateLimit }) });
  const log = requestLog();
  // Set once the server is made (the health check is part of it) and before it listens.
  let stopping = (): boolean => false;
  const server = createNodeServer(withHealthCheck(service, { db, stopping: () => stopping() }), {
    ...(tls === undefined ? {} : { tls }),
    onResponse: log.onResponse,
    onClientError: log.onClientError,
  });
  limitConnections(server, keepAliveTimeoutMs);
  log.attach(server);
  stopping = stopOnSignals(server, service, db);
  const scheme = tls === undefined ? 'http' : 'https';

  server.once('error', (error: Error) => {
    err(`error: cannot listen on ${urlHost(host)}:${port}: ${error.message}`);
    // Like any failed command: a database this start created goes again. One that stays keeps
    // the demo it was just given, which is then said as it would have been.
    service.close();
    if (!opened.abandon()) logNotes(seeded.notes);
    process.exitCode = 1;
  });

  server.listen(port, host, () => {
    const address = server.address() as AddressInfo;
    // Said where journald keeps it: a new, empty database where one was expected is worth seeing.
    // On stderr, so that stdout's first line is always the listening line a harness waits for.
    if (opened.created || opened.foundEmpty) {
      logLine('info', 'created a new database', { path: resolve(opened.path), ...(opened.foundEmpty ? { inEmptyFile: true } : {}) });
    }
    logNotes(seeded.notes);
    out(`listening on ${scheme}://${urlHost(host)}:${address.port}`);
    if (tls === undefined && !isLoopback(address.address)) {
      logLine('warn', `serving plain HTTP on ${host}; bearer tokens cross the network unencrypted. Use --tls-cert and --tls-key, or a TLS-terminating proxy.`, { host });
    }
    const { demoToken } = seeded;
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
