import { parseArgs } from 'node:util';
import type { ClientSummary } from '../lib/admin/clients.js';
import { isScope, SCOPES, type Scope } from '../lib/auth/scopes.js';
import { attachNegativeValues, checkFlags, CommandError, DEFAULT_DB, env, fileCommand, type FlagOptions, parseId, report, summaryLine, USAGE, UsageError } from './command-line.js';
import { withDb } from './database.js';

export async function load(args: string[]): Promise<void> {
  const command = fileCommand(args, 'load needs a FIXTURE file');
  if (command === null) return;
  const fixture = command.file;
  const { loadFixtureFile } = await import('../lib/fixtures/load.js');
  await withDb(command.db, (db) => loadFixtureFile(db, fixture), (summary) => [summaryLine(summary)]);
}

function clientLine(client: ClientSummary): string {
  return [
    `id=${client.id}`,
    `org=${client.organisationId}`,
    `name=${JSON.stringify(client.name)}`,
    `sponsor=${client.sponsorId}`,
    `resource=${client.resourceId ?? 'none'}`,
    `active=${client.isActive ? 'yes' : 'no'}`,
    `scopes=${client.scopes.length === 0 ? 'none' : client.scopes.join(',')}`,
  ].join(' ');
}

function tokenLines(token: string): string[] {
  return [`token: ${token}`, 'This token is shown only once and cannot be recovered (only its hash is stored); keep it now.'];
}

export async function client(args: string[]): Promise<void> {
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
  const flags = attachNegativeValues(rest, options, true);
  const { values, positionals } = parseArgs({ args: flags, strict: true, allowPositionals: true, options });
  checkFlags(flags, options);
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
      const scopes = Array.isArray(values['scope']) ? values['scope'] : [];
      // An identity-only client reads /identity, which needs no scope; a worker's client without
      // one could do nothing more, so that is taken for a forgotten flag.
      if (resourceId !== null && scopes.length === 0) throw new UsageError('a client with --resource needs at least one --scope');
      // A bad flag value is a usage error (exit 2), found before the database is opened.
      const unknownScope = scopes.find((scope) => typeof scope !== 'string' || !isScope(scope));
      if (unknownScope !== undefined) throw new UsageError(`unknown scope "${String(unknownScope)}" (scopes: ${SCOPES.join(', ')})`);
      await withDb(str('db'), (db) => adminClients(db).create({
        organisationId,
        name,
        sponsorId,
        resourceId,
        scopes: scopes.filter((scope): scope is Scope => typeof scope === 'string' && isScope(scope)),
      }), (created) => [`created client ${clientLine(created.client)}`, ...tokenLines(created.token)], { mustExist: true });
      return;
    }
    case 'rotate':
    case 'revoke': {
      const [idText, ...extra] = positionals;
      if (extra.length > 0) throw new UsageError(`unexpected argument "${extra[0] ?? ''}"`);
      const id = parseId(idText, `client ${action} ID`);
      if (action === 'rotate') {
        await withDb(str('db'), (db) => adminClients(db).rotate(id), (rotated) => [
          `rotated client ${clientLine(rotated.client)}; the old token no longer works`,
          ...tokenLines(rotated.token),
        ], { mustExist: true });
      } else {
        await withDb(str('db'), (db) => adminClients(db).revoke(id), (revoked) => [
          `${revoked.wasActive ? 'revoked' : 'already revoked:'} client ${clientLine(revoked.client)}`,
          ...(revoked.releasedLeases > 0 ? [`released ${revoked.releasedLeases} live lease${revoked.releasedLeases === 1 ? '' : 's'} it held`] : []),
        ], { mustExist: true });
      }
      return;
    }
    case 'list': {
      if (positionals.length > 0) throw new UsageError(`unexpected argument "${positionals[0] ?? ''}"`);
      await withDb(str('db'), (db) => adminClients(db).list(), (summaries) => summaries.map(clientLine), { mustExist: true, readOnly: true });
      return;
    }
    default:
      throw new UsageError(`unknown client action "${action}"`);
  }
}

/** A consistent online copy of the database (see lib/admin/backup.ts), also while serving. */
export async function backup(args: string[]): Promise<void> {
  const command = fileCommand(args, 'backup needs a target FILE');
  if (command === null) return;
  const target = command.file;
  const source = command.db ?? env('WTA_DB') ?? DEFAULT_DB;
  // A stop (Ctrl-C, systemd ending a timer job) would otherwise kill the process in the middle of
  // the copy, leaving a file named like a good backup that holds nothing, and blocking the next run.
  // The handlers stay until the process exits (they do not keep it alive): a stop that comes
  // after the copy was reported whole changes nothing, and the command still exits 0.
  const stop = new AbortController();
  const interrupt = (): void => stop.abort();
  process.on('SIGINT', interrupt);
  process.on('SIGTERM', interrupt);
  const { backupDatabase } = await import('../lib/admin/backup.js');
  // Like any failed command: no copy is left that its cron job believes was never made.
  await backupDatabase(source, target, ({ pages }) =>
    report([`backed up ${source} to ${target} (${pages} pages, integrity ok)`]).catch((error: unknown) => {
      throw error instanceof CommandError ? new CommandError(`${error.message}; the copy was removed`) : error;
    }), stop.signal);
}
