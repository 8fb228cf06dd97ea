import t, { type Test } from 'tap';
import {
  LONDON,
  LOCAL_DATE_TIME_INPUT_PATTERN,
  epochMsToLocal,
  formatUtc,
  localToEpochMs,
  parseLocalDateTime,
  parseUtc,
} from '../../lib/time/london.js';

/** Real minutes between two wall times, each ambiguous one at its first occurrence. */
const elapsedMinutes = (startLocal: string, endLocal: string): number => (localToEpochMs(endLocal) - localToEpochMs(startLocal)) / 60_000;

/** Whether a canonical wall time exists in London (localToEpochMs refuses the others). */
const isCanonicalLocal = (local: string): boolean => {
  try {
    localToEpochMs(local);
    return true;
  } catch {
    return false;
  }
};

const utc = (iso: string): number => {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) throw new Error(`bad fixture ${iso}`);
  return ms;
};

/**
 * A successful parse: the instant is the one sent (fraction truncated) for a Z or offset input,
 * else the wall time's first occurrence.
 */
const parsed = (input: string, local: string) => ({
  ok: true,
  local,
  instant: /(Z|[+-][0-9]{2}:[0-9]{2})$/.test(input) ? utc(input.replace(/\.[0-9]+/, '')) : localToEpochMs(local),
});

/** `input` parses (see `parsed`) to the wall time `local`. */
function parsesTo(tt: Test, input: string, local: string, message = input): void {
  tt.same(parseLocalDateTime(input), parsed(input, local), message);
}

/** Each `[input, local]` pair parses to its wall time. */
function parseTable(tt: Test, pairs: readonly (readonly [string, string])[]): void {
  for (const [input, local] of pairs) parsesTo(tt, input, local);
}

interface Change {
  readonly day: string;
  readonly kind: 'spring' | 'autumn';
}

const CHANGES: readonly Change[] = [
  { day: '2026-03-29', kind: 'spring' },
  { day: '2026-10-25', kind: 'autumn' },
  { day: '2027-03-28', kind: 'spring' },
  { day: '2027-10-31', kind: 'autumn' },
];

t.test('LONDON names the Europe/London zone', async (t) => {
  t.equal(LONDON, 'Europe/London');
});

for (const { day, kind } of CHANGES.filter((c) => c.kind === 'spring')) {
  t.test(`spring forward ${day}: 00:59:59 exists, 01:00:00-01:59:59 do not, 02:00:00 exists`, async (t) => {
    parsesTo(t, `${day}T00:59:59`, `${day}T00:59:59`);
    t.same(parseLocalDateTime(`${day}T01:00:00`), { ok: false, reason: 'nonexistent' });
    t.same(parseLocalDateTime(`${day}T01:30:00`), { ok: false, reason: 'nonexistent' });
    t.same(parseLocalDateTime(`${day}T01:59:59`), { ok: false, reason: 'nonexistent' });
    parsesTo(t, `${day}T02:00:00`, `${day}T02:00:00`);
    t.equal(isCanonicalLocal(`${day}T00:59:59`), true);
    t.equal(isCanonicalLocal(`${day}T01:00:00`), false);
    t.equal(isCanonicalLocal(`${day}T01:59:59`), false);
    t.equal(isCanonicalLocal(`${day}T02:00:00`), true);
    t.equal(kind, 'spring');
  });

  t.test(`spring forward ${day}: boundary wall times map to GMT before and BST after 01:00Z`, async (t) => {
    t.equal(localToEpochMs(`${day}T00:59:59`), utc(`${day}T00:59:59Z`));
    t.equal(localToEpochMs(`${day}T02:00:00`), utc(`${day}T01:00:00Z`));
    t.equal(epochMsToLocal(utc(`${day}T00:59:59.999Z`)), `${day}T00:59:59`);
    t.equal(epochMsToLocal(utc(`${day}T01:00:00Z`)), `${day}T02:00:00`);
  });

  t.test(`spring forward ${day}: localToEpochMs throws RangeError inside the gap`, async (t) => {
    t.throws(() => localToEpochMs(`${day}T01:00:00`), RangeError);
    t.throws(() => localToEpochMs(`${day}T01:59:59`), RangeError);
  });

  t.test(`spring forward ${day}: 00:00 -> 03:00 is 120 real minutes`, async (t) => {
    t.equal(elapsedMinutes(`${day}T00:00:00`, `${day}T03:00:00`), 120);
    t.equal(elapsedMinutes(`${day}T00:59:59`, `${day}T02:00:00`), 1 / 60);
  });
}

for (const { day } of CHANGES.filter((c) => c.kind === 'autumn')) {
  const prev = new Date(utc(`${day}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);

  t.test(`fall back ${day}: the repeated hour 01:00:00-01:59:59 and its neighbours all exist`, async (t) => {
    for (const time of ['00:59:59', '01:00:00', '01:30:00', '01:59:59', '02:00:00']) {
      parsesTo(t, `${day}T${time}`, `${day}T${time}`, time);
      t.equal(isCanonicalLocal(`${day}T${time}`), true, time);
    }
  });

  t.test(`fall back ${day}: an ambiguous wall time maps to its first (BST, +01:00) occurrence`, async (t) => {
    t.equal(localToEpochMs(`${day}T00:59:59`), utc(`${prev}T23:59:59Z`));
    t.equal(localToEpochMs(`${day}T01:00:00`), utc(`${day}T00:00:00Z`));
    t.equal(localToEpochMs(`${day}T01:30:00`), utc(`${day}T00:30:00Z`));
    t.equal(localToEpochMs(`${day}T01:59:59`), utc(`${day}T00:59:59Z`));
    t.equal(localToEpochMs(`${day}T02:00:00`), utc(`${day}T02:00:00Z`));
  });

  t.test(`fall back ${day}: both occurrences of the repeated hour format as the same wall time`, async (t) => {
    t.equal(epochMsToLocal(utc(`${day}T00:30:00Z`)), `${day}T01:30:00`);
    t.equal(epochMsToLocal(utc(`${day}T01:30:00Z`)), `${day}T01:30:00`);
    t.equal(epochMsToLocal(utc(`${day}T00:59:59.999Z`)), `${day}T01:59:59`);
    t.equal(epochMsToLocal(utc(`${day}T01:00:00Z`)), `${day}T01:00:00`);
    t.equal(epochMsToLocal(utc(`${day}T01:59:59Z`)), `${day}T01:59:59`);
    t.equal(epochMsToLocal(utc(`${day}T02:00:00Z`)), `${day}T02:00:00`);
  });

  t.test(`fall back ${day}: offset inputs in the repeated hour convert to that wall time`, async (t) => {
    parsesTo(t, `${day}T01:30:00Z`, `${day}T01:30:00`);
    parsesTo(t, `${day}T00:30:00Z`, `${day}T01:30:00`);
    parsesTo(t, `${day}T01:30:00+01:00`, `${day}T01:30:00`);
    parsesTo(t, `${day}T01:30:00+00:00`, `${day}T01:30:00`);
  });

  t.test(`fall back ${day}: 00:00 -> 03:00 is 240 real minutes`, async (t) => {
    t.equal(elapsedMinutes(`${day}T00:00:00`, `${day}T03:00:00`), 240);
    t.equal(elapsedMinutes(`${day}T01:00:00`, `${day}T02:00:00`), 120);
    t.equal(elapsedMinutes(`${day}T01:59:59`, `${day}T02:00:00`), 60 + 1 / 60);
  });
}

t.test('2026-10-25T01:30:00 given bare stays a wall time', async (t) => {
  parsesTo(t, '2026-10-25T01:30:00', '2026-10-25T01:30:00');
});

t.test('offset inputs are instants converted to London wall time (+02:00, -05:00, Z)', async (t) => {
  parseTable(t, [
    ['2026-06-01T12:00:00+02:00', '2026-06-01T11:00:00'],
    ['2026-01-15T07:00:00-05:00', '2026-01-15T12:00:00'],
    ['2026-06-01T12:00:00Z', '2026-06-01T13:00:00'],
    ['2026-01-15T12:00:00Z', '2026-01-15T12:00:00'],
    ['2026-07-01T23:30:00-05:00', '2026-07-02T05:30:00'],
    ['2026-12-31T23:30:00-01:00', '2027-01-01T00:30:00'],
    ['2026-01-01T00:30:00+05:30', '2025-12-31T19:00:00'],
    ['2026-01-01T00:00:00-00:00', '2026-01-01T00:00:00'],
  ]);
});

t.test('offset inputs on a spring day land either side of the gap, never in it', async (t) => {
  parseTable(t, [
    ['2026-03-29T00:30:00Z', '2026-03-29T00:30:00'],
    ['2026-03-29T01:30:00Z', '2026-03-29T02:30:00'],
    ['2026-03-29T03:30:00+02:00', '2026-03-29T02:30:00'],
    ['2027-03-28T01:00:00Z', '2027-03-28T02:00:00'],
  ]);
});

t.test('fractions of any number of digits are accepted and truncated to whole seconds', async (t) => {
  parseTable(t, [
    ['2026-01-01T10:00:00.5', '2026-01-01T10:00:00'],
    ['2026-01-01T10:00:59.999999999', '2026-01-01T10:00:59'],
    ['2026-06-01T10:00:59.999Z', '2026-06-01T11:00:59'],
    ['2026-06-01T10:00:00.123456+02:00', '2026-06-01T09:00:00'],
    ['2026-12-31T23:59:59.999999999Z', '2026-12-31T23:59:59'],
  ]);
  // RFC 3339 sets no limit on the digits of a fraction.
  parsesTo(t, '2026-01-01T10:00:00.1234567890', '2026-01-01T10:00:00');
  const long = `2026-06-01T10:00:59.${'9'.repeat(40)}Z`;
  parsesTo(t, long, '2026-06-01T11:00:59', 'a 40-digit fraction');
});

t.test('a fraction does not rescue a nonexistent spring wall time', async (t) => {
  t.same(parseLocalDateTime('2026-03-29T01:30:00.5'), { ok: false, reason: 'nonexistent' });
  parsesTo(t, '2026-03-29T00:59:59.999999999', '2026-03-29T00:59:59');
});

t.test('nonexistent spring wall time 2026-03-29T01:30:00 is rejected as nonexistent', async (t) => {
  t.same(parseLocalDateTime('2026-03-29T01:30:00'), { ok: false, reason: 'nonexistent' });
});

const SYNTAX_ERRORS: readonly string[] = [
  '2026-02-30T10:00:00',
  '2027-02-29T10:00:00',
  '2026-04-31T10:00:00',
  '2026-1-01T10:00:00',
  '2026-01-1T10:00:00',
  '26-01-01T10:00:00',
  '2026-01-01 10:00:00',
  '2026-01-01t10:00:00',
  '2026-01-01T24:00:00',
  '2026-01-01T25:00:00',
  '2026-01-01T10:60:00',
  '2026-01-01T10:00:60',
  '2026-01-01T10:00',
  '2026-01-01T1:00:00',
  '2026-13-01T10:00:00',
  '2026-00-01T10:00:00',
  '2026-01-00T10:00:00',
  '2026-01-32T10:00:00',
  '2026-01-01',
  '2026-01-01T10:00:00.',
  '2026-01-01T10:00:00z',
  '2026-01-01T10:00:00+0100',
  '2026-01-01T10:00:00+01',
  '2026-01-01T10:00:00+24:00',
  '2026-01-01T10:00:00 +01:00',
  '2026-01-01T10:00:00Z ',
  ' 2026-01-01T10:00:00',
  '2026-01-01T10:00:00[Europe/London]',
  '+02026-01-01T10:00:00',
  '２０２６-01-01T10:00:00',
  '',
];

for (const input of SYNTAX_ERRORS) {
  t.test(`syntax error: ${JSON.stringify(input)} is rejected as syntax`, async (t) => {
    t.same(parseLocalDateTime(input), { ok: false, reason: 'syntax' });
    t.equal(isCanonicalLocal(input), false);
    t.throws(() => localToEpochMs(input), RangeError);
  });
}

t.test('leap days exist only in leap years', async (t) => {
  parsesTo(t, '2028-02-29T12:00:00', '2028-02-29T12:00:00');
  parsesTo(t, '2000-02-29T12:00:00', '2000-02-29T12:00:00');
  t.same(parseLocalDateTime('2100-02-29T12:00:00'), { ok: false, reason: 'syntax' });
});

t.test('LOCAL_DATE_TIME_INPUT_PATTERN is a plain anchored pattern matching the input syntax', async (t) => {
  t.type(LOCAL_DATE_TIME_INPUT_PATTERN, 'string');
  // JSON-schema validators such as Ajv compile patterns with the `u` flag.
  for (const re of [new RegExp(LOCAL_DATE_TIME_INPUT_PATTERN), new RegExp(LOCAL_DATE_TIME_INPUT_PATTERN, 'u')]) {
    for (const ok of [
      '2026-01-01T10:00:00',
      '2026-03-29T01:30:00',
      '2026-02-30T10:00:00',
      '2026-01-01T10:00:00.1',
      '2026-01-01T10:00:00.123456789',
      '2026-01-01T10:00:00Z',
      '2026-01-01T10:00:00.5+02:00',
      '2026-01-01T10:00:00-05:00',
    ]) {
      t.ok(re.test(ok), `accepts ${ok}`);
    }
    for (const bad of SYNTAX_ERRORS.filter((s) => !/^20(26-02-30|27-02-29|26-04-31)/.test(s))) {
      t.notOk(re.test(bad), `rejects ${JSON.stringify(bad)}`);
    }
  }
});

t.test('isCanonicalLocal accepts only the exact output form of an existing wall time', async (t) => {
  t.equal(isCanonicalLocal('2026-01-01T10:00:00'), true);
  t.equal(isCanonicalLocal('2026-10-25T01:30:00'), true);
  t.equal(isCanonicalLocal('2026-01-01T10:00:00.0'), false);
  t.equal(isCanonicalLocal('2026-01-01T10:00:00Z'), false);
  t.equal(isCanonicalLocal('2026-01-01T10:00:00+00:00'), false);
  t.equal(isCanonicalLocal('2026-03-29T01:30:00'), false);
  t.equal(isCanonicalLocal('2026-02-30T10:00:00'), false);
});

t.test('localToEpochMs rejects non-canonical input with RangeError', async (t) => {
  t.throws(() => localToEpochMs('2026-01-01T10:00:00Z'), RangeError);
  t.throws(() => localToEpochMs('2026-01-01T10:00:00.5'), RangeError);
  t.throws(() => localToEpochMs('2026-01-01T10:00'), RangeError);
});

t.test('round trip epochMsToLocal(localToEpochMs(x)) === x for ordinary times', async (t) => {
  for (const local of [
    '2026-01-01T00:00:00',
    '2026-01-15T09:30:15',
    '2026-03-28T23:59:59',
    '2026-03-29T03:00:00',
    '2026-06-21T12:00:00',
    '2026-10-24T23:59:59',
    '2026-10-25T03:00:00',
    '2026-12-31T23:59:59',
    '2027-07-04T18:45:00',
    '2028-02-29T08:00:00',
    '1999-12-31T23:59:59',
  ]) {
    t.equal(epochMsToLocal(localToEpochMs(local)), local, local);
  }
});

t.test('localToEpochMs uses GMT in winter and BST in summer', async (t) => {
  t.equal(localToEpochMs('2026-01-15T12:00:00'), utc('2026-01-15T12:00:00Z'));
  t.equal(localToEpochMs('2026-06-15T12:00:00'), utc('2026-06-15T11:00:00Z'));
});

t.test('every hour of 2026 and 2027 round-trips instant -> local -> instant except the second repeated hour', async (t) => {
  const repeated = new Set([utc('2026-10-25T01:00:00Z'), utc('2027-10-31T01:00:00Z')]);
  let mismatches = 0;
  for (let ms = utc('2026-01-01T00:00:00Z'); ms < utc('2028-01-01T00:00:00Z'); ms += 3_600_000) {
    const back = localToEpochMs(epochMsToLocal(ms));
    const expected = repeated.has(ms) ? ms - 3_600_000 : ms;
    if (back !== expected) mismatches++;
  }
  t.equal(mismatches, 0);
});

t.test('epochMsToLocal drops the sub-second part, including before 1970', async (t) => {
  t.equal(epochMsToLocal(utc('2026-01-01T10:00:00.999Z')), '2026-01-01T10:00:00');
  // London stayed on +01:00 all year from 1968 to 1971, so the epoch itself is 01:00 wall time.
  t.equal(epochMsToLocal(0), '1970-01-01T01:00:00');
  t.equal(epochMsToLocal(-1), '1970-01-01T00:59:59');
  t.equal(epochMsToLocal(utc('1960-01-01T00:00:00.500Z')), '1960-01-01T00:00:00');
});

t.test('epochMsToLocal rejects non-finite instants with RangeError', async (t) => {
  t.throws(() => epochMsToLocal(Number.NaN), RangeError);
  t.throws(() => epochMsToLocal(Number.POSITIVE_INFINITY), RangeError);
});

t.test('formatUtc output has the exact shape YYYY-MM-DDTHH:mm:ss.sssZ', async (t) => {
  t.equal(formatUtc(0), '1970-01-01T00:00:00.000Z');
  t.equal(formatUtc(utc('2026-03-29T01:00:00Z')), '2026-03-29T01:00:00.000Z');
  t.equal(formatUtc(utc('2026-10-25T00:30:00.007Z')), '2026-10-25T00:30:00.007Z');
  t.match(formatUtc(localToEpochMs('2026-06-01T12:34:56')), /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  t.equal(formatUtc(localToEpochMs('2026-06-01T12:34:56')), '2026-06-01T11:34:56.000Z');
});

t.test('parseUtc accepts Z forms with or without a fraction of any length, truncating to milliseconds', async (t) => {
  t.equal(parseUtc('2026-03-29T01:00:00Z'), utc('2026-03-29T01:00:00Z'));
  t.equal(parseUtc('2026-03-29T01:00:00.5Z'), utc('2026-03-29T01:00:00.500Z'));
  t.equal(parseUtc('2026-03-29T01:00:00.123Z'), utc('2026-03-29T01:00:00.123Z'));
  t.equal(parseUtc('2026-03-29T01:00:00.123999999Z'), utc('2026-03-29T01:00:00.123Z'));
  t.equal(parseUtc('2026-03-29T01:00:00.1239999999999Z'), utc('2026-03-29T01:00:00.123Z'));
  t.equal(parseUtc('0050-06-01T00:00:00Z'), utc('0050-06-01T00:00:00Z'));
});

t.test('parseUtc round-trips formatUtc output', async (t) => {
  for (const ms of [0, 1, -1, utc('2026-10-25T01:00:00.999Z'), utc('2099-12-31T23:59:59.999Z')]) {
    t.equal(parseUtc(formatUtc(ms)), ms, formatUtc(ms));
  }
});

t.test('parseUtc rejects non-Z forms and invalid fields with null', async (t) => {
  for (const input of [
    '2026-03-29T01:00:00',
    '2026-03-29T01:00:00+00:00',
    '2026-03-29T01:00:00+01:00',
    '2026-03-29T01:00:00-05:00',
    '2026-03-29T01:00:00z',
    '2026-03-29T01:00:00.Z',
    '2026-03-29 01:00:00Z',
    '2026-03-29T01:00Z',
    '2026-02-30T01:00:00Z',
    '2026-03-29T24:00:00Z',
    '+002026-03-29T01:00:00.000Z',
    '2026-03-29',
    '',
  ]) {
    t.equal(parseUtc(input), null, JSON.stringify(input));
  }
});

t.test('elapsedMinutes is end minus start in real minutes, fractional or negative', async (t) => {
  t.equal(elapsedMinutes('2026-01-01T10:00:00', '2026-01-01T10:00:30'), 0.5);
  t.equal(elapsedMinutes('2026-01-01T10:00:00', '2026-01-01T09:00:00'), -60);
  t.equal(elapsedMinutes('2026-06-01T10:00:00', '2026-06-01T10:00:00'), 0);
  t.equal(elapsedMinutes('2026-03-28T12:00:00', '2026-03-29T12:00:00'), 23 * 60);
  t.equal(elapsedMinutes('2026-10-24T12:00:00', '2026-10-25T12:00:00'), 25 * 60);
  t.equal(elapsedMinutes('2026-01-01T00:00:00', '2027-01-01T00:00:00'), 365 * 24 * 60);
});

t.test('elapsedMinutes throws RangeError for a nonexistent endpoint', async (t) => {
  t.throws(() => elapsedMinutes('2026-03-29T00:00:00', '2026-03-29T01:30:00'), RangeError);
  t.throws(() => elapsedMinutes('2027-03-28T01:00:00', '2027-03-28T03:00:00'), RangeError);
});
