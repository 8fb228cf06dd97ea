import { parseArgs, type ParseArgsConfig } from 'node:util';
import { SCOPES } from '../lib/auth/scopes.js';
import { INT32_MAX } from '../lib/domain/limits.js';
import type { LoadSummary } from '../lib/fixtures/load.js';

// What every command shares: the usage text, its two kinds of failure, flag and environment
// parsing, and output.

export const USAGE = `Usage: worker-task-api <command> [options]

Commands:
  serve [--db FILE] [--host H] [--port N] [--fixture FILE] [--source KEY=BASEURL]...
        [--rate-limit N] [--keep-alive-timeout S] [--demo]
        [--tls-cert FILE --tls-key FILE]
      Serve the API; prints "listening on http://HOST:PORT" (https:// with TLS) once it
      accepts connections, logs one JSON line per request to stderr, answers GET /healthz,
      stops cleanly on SIGTERM and SIGINT.
  load FIXTURE [--db FILE]
      Validate a fixture file and load it (a bad fixture changes nothing). Fixtures upsert
      by id: this is how organisations, staff, projects, tasks and assignments are managed.
  client create --org ID --name NAME --sponsor STAFF_ID [--resource STAFF_ID]
                [--scope S]... [--db FILE]
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
  --keep-alive-timeout S
                        seconds an idle keep-alive connection stays open (default 125, longer
                        than a proxy's own)                         [env WTA_KEEP_ALIVE_TIMEOUT]
  --demo                load the bundled demo fixture into an empty database and print how to
                        call it                                                  [env WTA_DEMO=1]
  --tls-cert FILE       PEM certificate; with --tls-key, serve HTTPS             [env WTA_TLS_CERT]
  --tls-key FILE        PEM private key                                          [env WTA_TLS_KEY]
  -h, --help            show this help

Scopes: ${SCOPES.join(', ')}
`;

export const DEFAULT_DB = './data/worker-task-api.sqlite';

/** Bad command line: usage on stderr, exit 2. */
export class UsageError extends Error {}

/** Expected operational failure: `error: ...` on stderr, exit 1. */
export class CommandError extends Error {}

export type FlagOptions = NonNullable<ParseArgsConfig['options']>;

/**
 * `--port -1` as `--port=-1`, and `client rotate -5` with the `-5` as a positional argument:
 * parseArgs takes anything starting with a dash for an option and refuses it in its own words;
 * this way a negative number is judged like any other value (`--port must be an integer from 0
 * to 65535, got "-1"`).
 */
export function attachNegativeValues(args: readonly string[], options: FlagOptions, allowPositionals = false): string[] {
  const attached: string[] = [];
  const negativePositionals: string[] = [];
  let index = 0;
  for (; index < args.length; index += 1) {
    const arg = args[index] as string;
    if (arg === '--') break;
    const next = args[index + 1];
    if (arg.startsWith('--') && options[arg.slice(2)]?.type === 'string' && next !== undefined && NEGATIVE.test(next)) {
      attached.push(`${arg}=${next}`);
      index += 1;
    } else if (allowPositionals && NEGATIVE.test(arg)) {
      negativePositionals.push(arg);
    } else {
      attached.push(arg);
    }
  }
  const rest = args.slice(index + 1);
  return negativePositionals.length === 0 && index >= args.length ? attached : [...attached, '--', ...negativePositionals, ...rest];
}

const NEGATIVE = /^-[0-9]/;

/**
 * What parseArgs lets through but is still a usage error: a flag given twice (unless it may
 * repeat), which would otherwise silently take the last value, and an empty value (`--db ''`
 * would open a throwaway database, `--host=` bind every interface).
 */
export function checkFlags(args: string[], options: FlagOptions): void {
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

export function env(name: string): string | undefined {
  const value = process.env[name];
  return value === undefined || value === '' ? undefined : value;
}

export function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

/**
 * Writes a command's report and resolves once it is written. A report that cannot be written (a
 * full disk, a reader that went away) rejects: the command then fails, and undoes what it did.
 */
export function report(lines: readonly string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(lines.map((line) => `${line}\n`).join(''), (error) => {
      if (error === null || error === undefined) resolve();
      else reject(new CommandError(`the output could not be written (${(error as NodeJS.ErrnoException).code ?? error.message})`));
    });
  });
}

export function err(line: string): void {
  process.stderr.write(`${line}\n`);
}

export type LogLevel = 'info' | 'warn' | 'error';

/**
 * One line of the server's log on stderr, always a JSON object starting with `time` and `level`:
 * a harness or a `jq` reading every line as JSON meets nothing else while the server runs. (What
 * ends the command, such as `error: ...` or `fixture error: ...`, is plain text.)
 */
export function logEntry(level: LogLevel, fields: Record<string, unknown>): void {
  err(JSON.stringify({ time: new Date().toISOString(), level, ...fields }));
}

/** A log line that is a message rather than a request's record. */
export function logLine(level: LogLevel, message: string, fields: Record<string, unknown> = {}): void {
  logEntry(level, { message, ...fields });
}

export function parseInteger(text: string, what: string, min: number, max: number): number {
  if (!/^[0-9]+$/.test(text) || Number(text) < min || Number(text) > max) {
    throw new UsageError(`${what} must be an integer from ${min} to ${max}, got "${text}"`);
  }
  return Number(text);
}

export function parseId(text: string | undefined, what: string): number {
  if (text === undefined) throw new UsageError(`${what} is required`);
  return parseInteger(text, what, 1, INT32_MAX);
}

/** A boolean environment setting: 1/true/yes or 0/false/no. */
export function envFlag(name: string): boolean | undefined {
  const value = env(name);
  if (value === undefined) return undefined;
  if (/^(1|true|yes)$/i.test(value)) return true;
  if (/^(0|false|no)$/i.test(value)) return false;
  throw new UsageError(`${name} must be 1, true or yes, or 0, false or no, got "${value}"`);
}

export function summaryLine(summary: LoadSummary): string {
  return (
    `loaded ${summary.organisations} organisations, ${summary.staff} staff, ${summary.clients} clients, ` +
    `${summary.projects} projects, ${summary.tasks} tasks, ${summary.claims} claims`
  );
}

/**
 * The shape `load` and `backup` share: one FILE argument and `--db`. Answers null after printing
 * the usage for `--help`.
 */
export function fileCommand(given: string[], what: string): { file: string; db: string | undefined } | null {
  const options = { db: { type: 'string' }, help: { type: 'boolean', short: 'h' } } as const satisfies FlagOptions;
  const args = attachNegativeValues(given, options, true);
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
