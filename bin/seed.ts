import { readFileSync } from 'node:fs';
import type { Db } from '../lib/store/open.js';
import { type LogLevel, logLine, summaryLine } from './command-line.js';

/** The demo client with a resource, as listed in the bundled fixture. */
function demoAgentToken(path: string): string | undefined {
  const fixture = JSON.parse(readFileSync(path, 'utf8')) as { clients?: { token?: unknown; resourceId?: unknown }[] };
  const agent = fixture.clients?.find((client) => client.resourceId !== null && typeof client.token === 'string');
  return typeof agent?.token === 'string' ? agent.token : undefined;
}

type Note = { readonly level: LogLevel; readonly message: string };

export interface Seeded {
  /** The demo agent's token, when it works in this database. */
  readonly demoToken: string | undefined;
  /**
   * What the demo did, for the log once the server listens (after the line announcing a new
   * database): a start that fails after seeding (it cannot listen) removes a database only it
   * wrote to, demo and all, and says nothing of it; one that stays is told all the same.
   */
  readonly notes: readonly Note[];
}

export function logNotes(notes: readonly Note[]): void {
  for (const note of notes) logLine(note.level, note.message);
}

/**
 * Loads the demo (only into an empty database, so a restart keeps what the user changed) and then
 * `--fixture` over it, in one transaction: a fixture that fails takes the demo back with it.
 */
export async function seedDatabase(
  db: Db, demo: boolean, fixturePath: string | undefined,
  /** Runs first inside the seeding transaction (see OpenedDb.claimIfEmpty). */
  claimIfEmpty: () => void = () => undefined,
): Promise<Seeded> {
  const [{ hashToken }, { loadFixtureFile }, { packageFile }] = await Promise.all([
    import('../lib/auth/token.js'),
    import('../lib/fixtures/load.js'),
    import('../lib/store/package-files.js'),
  ]);
  const demoPath = packageFile('fixtures/demo.json');
  const demoLoaded = db.transaction(() => {
    claimIfEmpty();
    const empty = (db.prepare<[], { n: number }>('SELECT count(*) AS n FROM organisations').get()?.n ?? 0) === 0;
    const summary = demo && empty ? loadFixtureFile(db, demoPath) : undefined;
    if (fixturePath !== undefined) loadFixtureFile(db, fixturePath);
    return summary;
  }).immediate();
  // Told only once committed: a failing fixture takes the demo back with it.
  const loaded = demoLoaded === undefined ? [] : [{ level: 'info' as const, message: `demo: ${summaryLine(demoLoaded)}` }];
  if (!demo) return { demoToken: undefined, notes: loaded };
  const token = demoAgentToken(demoPath);
  const active = token === undefined ? undefined : db.prepare<[string], { id: number }>(
    'SELECT id FROM api_clients WHERE token_hash = ? AND is_active = 1',
  ).get(hashToken(token));
  if (active === undefined) {
    return {
      demoToken: undefined,
      notes: [...loaded, { level: 'warn', message: 'demo: the database already holds other data; the demo token does not work in it' }],
    };
  }
  return { demoToken: token, notes: loaded };
}
