import t from 'tap';
import { readFileSync } from 'node:fs';

// The README's Performance section publishes one `npm run bench` run; a new run replaces
// bench/results/latest.json by hand, and a stale table or derived figure would go unnoticed.

interface BenchRow {
  readonly scenario: string;
  readonly reqPerSec: number;
  /** To three decimals, where the rows have two: the README rounds from these. */
  readonly detail: { readonly perSecond: number; readonly p50Ms: number; readonly p99Ms: number };
}

interface BenchResults {
  readonly settings: { readonly ceilingReqPerSec: number };
  readonly rows: readonly BenchRow[];
  readonly durability: { readonly acknowledgedPatches: number };
}

const results = JSON.parse(readFileSync(new URL('../../bench/results/latest.json', import.meta.url), 'utf8')) as BenchResults;
const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
const performance = readme.slice(readme.indexOf('\n## Performance\n'), readme.indexOf('\n## Tests\n'));
/** The section's prose with line breaks as spaces, so re-wrapping a paragraph breaks no match. */
const prose = performance.replaceAll('\n', ' ');

function row(scenario: string): BenchRow {
  const found = results.rows.find((candidate) => candidate.scenario === scenario);
  if (found === undefined) throw new Error(`latest.json has no row "${scenario}"`);
  return found;
}

/** The README rounds the unrounded figure to two significant digits: half a unit of the second. */
function agrees(published: number, measured: number): boolean {
  const unit = 10 ** (Math.floor(Math.log10(Math.abs(measured))) - 1);
  return Math.abs(published - measured) <= unit / 2 + 1e-9;
}

function integer(text: string): number {
  return Number(text.replaceAll(',', ''));
}

const ceilingRows = [row('ceiling, raw node:http (first)'), row('ceiling, raw node:http (last)')];
const mean = (values: readonly number[]): number => values.reduce((sum, value) => sum + value, 0) / values.length;
const ceiling = mean(ceilingRows.map((ceilingRow) => ceilingRow.detail.perSecond));

// README label → what latest.json says for it.
const TABLE: ReadonlyArray<readonly [string, { reqPerSec: number; p50Ms: number; p99Ms: number; ratio: number }]> = [
  ['ceiling: raw node:http, fixed small JSON (mean of first and last)', {
    reqPerSec: results.settings.ceilingReqPerSec,
    p50Ms: mean(ceilingRows.map((ceilingRow) => ceilingRow.detail.p50Ms)),
    p99Ms: mean(ceilingRows.map((ceilingRow) => ceilingRow.detail.p99Ms)),
    ratio: 1,
  }],
  ...([
    ['GET /tasks/{id}', 'GET /tasks/{id}'],
    ['GET /tasks/available (50 tasks, 39 KB)', 'GET /tasks/available (50)'],
    ['PATCH /tasks/{id} (durable, 2xx only)', 'PATCH /tasks/{id} (2xx only)'],
    ['reference: the same PATCH load with `synchronous = OFF` (not durable)', 'reference: PATCH, synchronous=OFF'],
    ['reference: the same GET + PATCH load on node:http doing no work', 'reference: GET+PATCH, no-work server'],
  ] as const).map(([label, scenario]) => {
    const measured = row(scenario);
    const { perSecond, p50Ms, p99Ms } = measured.detail;
    return [label, { reqPerSec: measured.reqPerSec, p50Ms, p99Ms, ratio: perSecond / ceiling }] as const;
  }),
];

t.test('README: the Performance table is bench/results/latest.json, row by row', async (t) => {
  for (const [label, measured] of TABLE) {
    const line = performance.split('\n').find((candidate) => candidate.startsWith(`| ${label} |`));
    if (line === undefined) {
      t.fail(`no table row "${label}"`);
      continue;
    }
    const [reqPerSec, p50, p99, ratio] = line.slice(label.length + 4).split('|').map((cell) => cell.trim());
    t.equal(integer(reqPerSec ?? ''), measured.reqPerSec, `${label}: req/s`);
    t.ok(agrees(Number.parseFloat(p50 ?? ''), measured.p50Ms), `${label}: p50 ${p50} for ${measured.p50Ms} ms`);
    t.ok(agrees(Number.parseFloat(p99 ?? ''), measured.p99Ms), `${label}: p99 ${p99} for ${measured.p99Ms} ms`);
    t.ok(agrees(Number.parseFloat(ratio ?? ''), measured.ratio), `${label}: ratio ${ratio} for ${measured.ratio}`);
  }
});

t.test('README: the ceiling at the start and end of the published run is latest.json\'s', async (t) => {
  const match = /ceiling held still at its usual level \(([\d,]+) req\/s at the start, ([\d,]+) at the end\)/.exec(prose);
  t.equal(integer(match?.[1] ?? ''), row('ceiling, raw node:http (first)').reqPerSec, 'at the start');
  t.equal(integer(match?.[2] ?? ''), row('ceiling, raw node:http (last)').reqPerSec, 'at the end');
});

t.test('README: the acknowledged PATCHes that survived SIGKILL are latest.json\'s', async (t) => {
  const match = /and ([\d,]+) acknowledged PATCHes all survived a SIGKILL/.exec(prose);
  t.equal(integer(match?.[1] ?? ''), results.durability.acknowledgedPatches);
});

t.test('README: "Why PATCH misses" works from latest.json\'s ceiling and reference rows', async (t) => {
  const target = 0.2 * results.settings.ceilingReqPerSec;
  const pairMicros = 1e6 / target;
  const noWorkMicros = 1e6 / row('reference: GET+PATCH, no-work server').detail.perSecond;
  const unsyncedMicros = 1e6 / row('reference: PATCH, synchronous=OFF').detail.perSecond;
  const durableMicros = 1e6 / row('PATCH /tasks/{id} (2xx only)').detail.perSecond;
  const figures = /At 0\.20 of this run's ceiling \(([\d,]+) PATCHes a second\) the server would have to finish a GET \+ PATCH pair every (\d+) µs .* takes (\d+) µs a pair .* which leaves (\d+) µs .* spends about (\d+) µs on that .* row: (\d+) µs a pair, less node:http's (\d+)\), and the durable commit adds about (\d+) µs more/.exec(prose);
  if (figures === null) {
    t.fail('the paragraph\'s figures were not found');
    return;
  }
  const [, patches, pair, noWork, leaves, service, unsynced, noWorkAgain, durable] = figures.map((figure) => integer(figure ?? ''));
  t.equal(patches, Math.round(target), 'PATCHes a second at 0.20');
  t.equal(pair, Math.round(pairMicros), 'µs a pair at the target');
  t.equal(noWork, Math.round(noWorkMicros), 'µs a pair with no work');
  t.equal(noWorkAgain, noWork, 'the same no-work figure twice');
  t.equal(leaves, (pair ?? 0) - (noWork ?? 0), 'what is left for the service');
  t.equal(unsynced, Math.round(unsyncedMicros), 'µs a pair with synchronous = OFF');
  t.equal(service, (unsynced ?? 0) - (noWork ?? 0), 'the service\'s own work');
  t.equal(durable, Math.round(durableMicros - unsyncedMicros), 'what the durable commit adds');
  const gain = /would gain at most the (\d+)% between the PATCH row and the `synchronous = OFF` row/.exec(prose);
  t.equal(Number(gain?.[1]), Math.round(100 * (durableMicros / unsyncedMicros - 1)), 'what moving the fsync away could gain');
  const cheaper = /would need the service's own work to be about (\w+) times cheaper/.exec(prose);
  const NUMBERS = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'];
  t.equal(NUMBERS.indexOf(cheaper?.[1] ?? ''), Math.round((service ?? 0) / (leaves ?? 1)), 'how much cheaper the service would have to be');
});

// README's planning-cost rows, in order → bench/results/plan.json's scenarios (`npm run bench:plan`).
const PLAN_ROWS = [
  ['one agent with 1,000 open tasks', 'resourceWith1000Tasks'],
  ['one agent with 20,000 open tasks', 'resourceWith20000Tasks'],
  ['one agent with 1,000 open and 99,000 finished tasks', 'resourceWith99000DoneTasks'],
  ['1,000 tasks, 10 agents', 'smallOrganisation'],
  ['100,000 tasks, 1,000 agents', 'largeOrganisation'],
  ['1,000 tasks, one of 1,000,000 minutes, on 48 slots of 25 minutes a day', 'slotsCalendar'],
  ['40,000 tasks of 1 to 5 minutes on those 48 slots, each with an earliest start of its own through the year', 'scatteredOnSlots'],
  ['night shift (22:00-06:00), 1,000 tasks in progress since 1 January 2024', 'nightShiftStarted2024'],
  ['night shift, 1,000 tasks in progress since 1 January 2018', 'nightShiftStarted2018'],
  ['the 48-slot world above, with 1,000 floating Incoming items, none of which fits', 'incomingSuggestions'],
] as const;
const PLAN_COLUMNS = ['planMs', 'getTaskMs', 'availableMs', 'readThenPatchMs', 'writeReadPatchAvailableMs'] as const;

/** A figure as written ("14.7 ms") agrees when it is the measured one rounded to its own decimals. */
function roundsTo(published: string, measured: number): boolean {
  const decimals = /\.(\d+)/.exec(published)?.[1]?.length ?? 0;
  return Math.abs(Number.parseFloat(published) - measured) <= 0.5 * 10 ** -decimals + 1e-9;
}

t.test('README: the planning-cost table is bench/results/plan.json, row by row', async (t) => {
  const plan = JSON.parse(readFileSync(new URL('../../bench/results/plan.json', import.meta.url), 'utf8')) as
    Record<string, Record<string, number>>;
  const header = performance.indexOf('| scenario | one resource\'s plan |');
  const table = performance.slice(header, performance.indexOf('\n\n', header)).split('\n').slice(2);
  t.strictSame(table.map((line) => line.split(' | ')[0]?.slice(2)), PLAN_ROWS.map(([label]) => label), 'the rows, in order, and no others');
  for (const [label, scenario] of PLAN_ROWS) {
    const line = performance.split('\n').find((candidate) => candidate.startsWith(`| ${label} |`));
    const measured = plan[scenario];
    if (line === undefined || measured === undefined) {
      t.fail(`no table row "${label}" or no scenario "${scenario}"`);
      continue;
    }
    const cells = line.slice(label.length + 4).split('|').map((cell) => cell.trim());
    PLAN_COLUMNS.forEach((column, index) => {
      const cell = cells[index] ?? '';
      // The Incoming row measures a PATCH and the Incoming list in the offer list's column.
      const value = column === 'writeReadPatchAvailableMs' ? measured[column] ?? measured['patchThenIncomingMs'] : measured[column];
      if (value === undefined) t.equal(cell, '', `${label}: ${column} is left empty`);
      else t.ok(roundsTo(cell, value), `${label}: ${column} ${cell} for ${value} ms`);
    });
  }
});
