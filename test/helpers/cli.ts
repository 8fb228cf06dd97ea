import { spawn, type ChildProcess } from 'node:child_process';
import type { TapTest } from './api.js';
import { buildEnv, CLI, ROOT } from './build.js';

/**
 * Spawning the command line for the CLI tests: the built one users run (`dist/`, kept current by
 * the suite's `before` program), which also starts three times faster than the source through tsx.
 */

export { CLI, ROOT };
export const LISTENING = /^listening on (https?):\/\/127\.0\.0\.1:(\d+)$/m;

/**
 * The parent's environment without WTA_* settings (they would change what the CLI does) and
 * without tap's process tracking, which roughly doubles a child's start-up time; `extra` on top.
 */
export function cleanEnv(extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  return { ...buildEnv(), ...extra };
}

/** Spawns the command line, in the repository unless `cwd` says otherwise. */
export function start(args: readonly string[], env: Readonly<Record<string, string>> = {}, cwd = ROOT): ChildProcess {
  return spawn(process.execPath, [CLI, ...args], {
    cwd,
    env: cleanEnv(env),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

export interface Output {
  stdout: string;
  stderr: string;
}

export type Watched = Output & { waitFor(stream: keyof Output, pattern: RegExp): Promise<RegExpExecArray> };

/** Accumulates a child's output and lets a test wait for a pattern in it (no sleeping). */
export function watch(child: ChildProcess): Watched {
  const output: Output = { stdout: '', stderr: '' };
  const waiters: { stream: keyof Output; pattern: RegExp; resolve(match: RegExpExecArray): void; reject(error: Error): void }[] = [];
  const check = (): void => {
    for (const waiter of [...waiters]) {
      const match = waiter.pattern.exec(output[waiter.stream]);
      if (match !== null) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve(match);
      }
    }
  };
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
    output.stdout += chunk;
    check();
  });
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
    output.stderr += chunk;
    check();
  });
  // 'close' comes after the pipes have delivered everything.
  child.on('close', () => {
    check();
    for (const waiter of waiters.splice(0)) {
      waiter.reject(new Error(`exited before ${waiter.stream} matched ${String(waiter.pattern)}\n${output.stdout}\n${output.stderr}`));
    }
  });
  return Object.assign(output, {
    waitFor(stream: keyof Output, pattern: RegExp): Promise<RegExpExecArray> {
      return new Promise<RegExpExecArray>((resolve, reject) => {
        waiters.push({ stream, pattern, resolve, reject });
        check();
      });
    },
  });
}

export function exited(child: ChildProcess): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve({ code: child.exitCode, signal: child.signalCode });
    else child.once('close', (code, signal) => resolve({ code, signal }));
  });
}

const isJsonObject = (line: string): boolean => {
  try {
    const value: unknown = JSON.parse(line);
    return typeof value === 'object' && value !== null && !Array.isArray(value);
  } catch {
    return false;
  }
};

/** The lines of a server's log that are not one JSON object each (none should be). */
export const notJson = (log: string): string[] => log.split('\n').filter((line) => line !== '' && !isJsonObject(line));

/** The JSON lines of a server's log, parsed. */
export const jsonLines = (log: string): Record<string, unknown>[] =>
  log.split('\n').filter(isJsonObject).map((line) => JSON.parse(line) as Record<string, unknown>);

/** A one-shot command still running after this long has hung: it is killed, and its test fails. */
const RUN_DEADLINE_MS = 60_000;

/**
 * Runs a command to completion. One that hangs (spinning in synchronous code, where SIGTERM is
 * never handled) is killed with SIGKILL at the deadline, so it cannot outlive its test.
 */
export async function run(args: readonly string[], env: Readonly<Record<string, string>> = {}): Promise<Output & { code: number | null }> {
  const child = start(args, env);
  const output = watch(child);
  const deadline = setTimeout(() => child.kill('SIGKILL'), RUN_DEADLINE_MS);
  const { code } = await exited(child);
  clearTimeout(deadline);
  return { code, stdout: output.stdout, stderr: output.stderr };
}

/**
 * Starts `serve` and resolves once it prints its listening line; killed at teardown. The port is
 * 0 (any free one) unless `args` or `env` say otherwise.
 */
export async function serve(
  tt: TapTest,
  args: readonly string[],
  env: Readonly<Record<string, string>> = {},
): Promise<{ child: ChildProcess; output: Watched; base: string; port: number }> {
  const portGiven = args.includes('--port') || env['WTA_PORT'] !== undefined;
  const child = start(['serve', ...(portGiven ? [] : ['--port', '0']), ...args], env);
  tt.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  const output = watch(child);
  const match = await output.waitFor('stdout', LISTENING);
  const port = Number(match[2]);
  return { child, output, base: `${match[1] ?? 'http'}://127.0.0.1:${port}`, port };
}
