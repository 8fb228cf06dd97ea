import t from 'tap';
import Database from 'better-sqlite3';
import { Agent } from 'node:http';
import { join } from 'node:path';
import { createNodeServer } from '../../adapters/node-http.js';
import { createService } from '../../lib/service.js';
import { manualClock } from '../../lib/time/clock.js';
import { generateOrganisation } from '../../bench/generate.js';
import { addResourceClients, claimRace, concentrateOffers, httpCall, judgeClaimRace, liveLeases } from '../../bench/http.js';
import { TEST_NOW } from '../helpers/fixture.js';

/**
 * Contract 2 under load (the short version of the bench's claim race): 64 keep-alive connections,
 * each a client of the same agent, race over real HTTP to claim the same 50 offered tasks on a
 * file database. Each connection reads the ETag, claims with its own Idempotency-Key and re-reads
 * on 412. Afterwards the database holds exactly one live lease per task, each the token of a 200.
 */

const CONNECTIONS = 64;
const TASKS = 50;
const AGENT0 = 2; // generateOrganisation: staff id idBase + 1 for agent 0, sponsor idBase.

t.test('CLAIM RACE (load): 64 connections over HTTP claiming the same 50 tasks leave exactly one live lease per task', { timeout: 60_000 }, async (t) => {
  const path = join(t.testdir(), 'race.sqlite');
  const setup = new Database(path);
  const org = generateOrganisation(setup, { organisationId: 1, agents: 50, tasksPerAgent: 20, idBase: 1 });
  concentrateOffers(setup, 1, AGENT0, TASKS);
  const tokens = addResourceClients(setup, { organisationId: 1, resourceId: AGENT0, sponsorId: 1, count: CONNECTIONS, idBase: 5_000 });
  setup.close();

  const clock = manualClock(TEST_NOW);
  const logged: unknown[] = [];
  const service = createService({ db: path, clock, rateLimit: 1_000_000, logger: { error: (entry) => logged.push(entry) } });
  const server = createNodeServer(service);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    service.close();
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;

  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const offered = async (): Promise<number[]> => {
    const response = await httpCall(agent, port, 'GET', '/api/v1/tasks/available', { authorization: `Bearer ${org.tokens[0] as string}` });
    t.equal(response.status, 200, 'GET /tasks/available answers 200');
    return (JSON.parse(response.body) as { id: number }[]).map((task) => task.id);
  };
  const taskIds = await offered();
  t.equal(taskIds.length, TASKS, 'agent 0 is offered 50 tasks before the race');

  const race = await claimRace({ port, tokens, taskIds });
  t.comment(`${race.requests} requests in ${Math.round(race.ms)} ms; claim answers ${JSON.stringify(race.claimStatuses)}`);

  const check = new Database(path, { readonly: true });
  t.teardown(() => check.close());
  const leases = liveLeases(check, taskIds, clock.now());
  const verdict = judgeClaimRace(race, leases);
  t.equal(race.outcomes.length, CONNECTIONS * TASKS, 'every connection finished every task');
  t.equal(verdict.wins, TASKS, 'exactly one 200 per task');
  t.equal(new Set(race.outcomes.filter((o) => o.status === 200).map((o) => o.taskId)).size, TASKS, 'one winner for each task');
  t.equal(verdict.tasksWithExactlyOneLease, TASKS, 'the claims table holds exactly one live lease for each task');
  t.equal(verdict.winsWithLeaseRow, TASKS, 'every 200 claim has its lease row');
  t.equal(verdict.leasesWithoutWin, 0, 'and every lease row is the token of a 200');
  t.strictSame(Object.keys(verdict.finalOutcomes).sort(), ['200', '409 task_claimed'], 'the losers end with 409 task_claimed (412s were retried)');
  t.equal(verdict.serverErrors, 0, 'never a 5xx');
  t.strictSame(logged, [], 'no unexpected error was logged');

  const winners = new Map(race.outcomes.filter((o) => o.status === 200).map((o) => [o.taskId, tokens[o.connection]]));
  const owners = check.prepare('SELECT task_id AS taskId, client_id AS clientId FROM claims WHERE released_utc IS NULL').all() as { taskId: number; clientId: number }[];
  t.ok(owners.every((row) => row.clientId === 5_000 + tokens.indexOf(winners.get(row.taskId) as string)), "each lease belongs to its winner's client");
  const version = (check.prepare('SELECT workspace_version AS v FROM organisations WHERE id = 1').get() as { v: number }).v;
  t.equal(version, 1 + TASKS, 'the workspace version moved once per successful claim');
  const receipts = (check.prepare('SELECT count(*) AS n FROM idempotency_receipts').get() as { n: number }).n;
  t.equal(receipts, TASKS, 'one receipt per 200, none for refusals');
  t.strictSame(await offered(), [], 'nothing is offered any more');
  agent.destroy();
});
