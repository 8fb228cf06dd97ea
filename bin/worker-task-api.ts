#!/usr/bin/env node
import { backup, client, load } from './admin-commands.js';
import { CommandError, err, USAGE, UsageError } from './command-line.js';
import { serve } from './serve.js';

// The library (schemas compiled at load, SQLite) is imported only once the command line has been
// parsed, so --help and usage errors answer at once: no module here imports it at the top.

/** Set once `serve` runs: from then on lost output is the log's loss, not the command's failure. */
let serving = false;

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
      serving = true;
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
  const [{ FixtureError }, { AdminError }] = await Promise.all([import('../lib/fixtures/fixture-error.js'), import('../lib/admin/clients.js')]);
  if (error instanceof FixtureError) {
    err(`fixture error: ${error.message}`);
  } else if (error instanceof AdminError || error instanceof CommandError) {
    err(`error: ${error.message}`);
  } else {
    err(`error: ${error instanceof Error ? error.message : String(error)}`);
  }
  process.exitCode = 1;
});
