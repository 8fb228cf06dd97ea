import fc from 'fast-check';
import { SCOPES } from '../../lib/auth/scopes.js';
import { BASE_PATH, OPERATIONS, type OperationSpec } from '../../lib/http/operations.js';
import { LEASE_11, TOKENS } from '../helpers/fixture.js';
import { GAIL, GRACE, withoutScopeToken } from './world.js';

/**
 * Generators of hostile requests. A generated request is plain, small data: big payloads (deep
 * nesting, 131073-byte strings, very long paths) are named, not spelt out, and built only when
 * the request is sent, so a counterexample prints in a few lines. Values that depend on the
 * world at the time of sending (the current If-Match, a live lease, an Incoming revision) are
 * placeholders resolved then, so well-formed requests get past preconditions into the rules.
 */

/** A header value resolved when the request is sent. */
export interface Placeholder {
  readonly placeholder: 'if-match' | 'lease';
}
export type HeaderGen = string | readonly string[] | Placeholder;

/** Big or byte-level bodies, built on demand (see `payload`). */
export const PAYLOADS = [
  'deep-array-10000', 'deep-object-10000', 'deep-array-in-member-10000', 'deep-unclosed-10000', 'deep-array-1000',
  'string-131073', 'member-string-131073', 'body-exactly-131072', 'multibyte-over-limit', 'text-20001',
  'invalid-utf8-ff', 'invalid-utf8-overlong', 'invalid-utf8-surrogate', 'invalid-utf8-truncated', 'invalid-utf8-bare-continuation',
  'bom-object', 'nul-in-string', 'raw-control-in-string', 'lone-surrogate-escape', 'huge-array-of-ids',
] as const;
export type PayloadName = (typeof PAYLOADS)[number];

export type BodyGen =
  | { readonly kind: 'none' }
  | { readonly kind: 'null' }
  | { readonly kind: 'empty' }
  /** JSON.stringify'd when sent; the strings `$LEASE` and `$REVISION` are resolved first. */
  | { readonly kind: 'json'; readonly value: unknown }
  /** Sent verbatim. */
  | { readonly kind: 'text'; readonly text: string }
  | { readonly kind: 'bytes'; readonly bytes: readonly number[] }
  | { readonly kind: 'payload'; readonly name: PayloadName };

/** Very long strings and other oversized parts, named. */
export interface Label {
  readonly label: 'long-method' | 'long-path' | 'long-id' | 'long-query' | 'long-segment-unicode';
}

export interface RequestGen {
  readonly operationId: string;
  readonly method: string | Label;
  readonly path: string | Label;
  readonly query: string | Label;
  /** In order; a later entry with the same exact name replaces an earlier one. */
  readonly headers: readonly (readonly [string, HeaderGen])[];
  readonly body: BodyGen;
  readonly encoding: 'string' | 'bytes';
}

// ---------------------------------------------------------------- building blocks

const BIG = 10000;

export function payload(name: PayloadName): string | Uint8Array {
  const utf8 = (...parts: (string | number[])[]) =>
    Buffer.concat(parts.map((part) => (typeof part === 'string' ? Buffer.from(part, 'utf8') : Buffer.from(part))));
  switch (name) {
    case 'deep-array-10000': return `${'['.repeat(BIG)}${']'.repeat(BIG)}`;
    case 'deep-object-10000': return `${'{"a":'.repeat(BIG)}1${'}'.repeat(BIG)}`;
    case 'deep-array-in-member-10000': return `{"text":${'['.repeat(BIG)}${']'.repeat(BIG)}}`;
    case 'deep-unclosed-10000': return '['.repeat(BIG);
    case 'deep-array-1000': return `${'['.repeat(1000)}1${']'.repeat(1000)}`;
    // A JSON string of 131073 bytes in all: one byte over the limit.
    case 'string-131073': return `"${'a'.repeat(131071)}"`;
    case 'member-string-131073': return `{"text":"${'a'.repeat(131073 - 11)}"}`;
    // Exactly at the limit: read, then refused for its content (text is at most 20000).
    case 'body-exactly-131072': return `{"text":"${'a'.repeat(131072 - 11)}"}`;
    // 65537 characters of two bytes each: under the limit in characters, over it in bytes.
    case 'multibyte-over-limit': return `{"text":"${'\u00e9'.repeat(65537)}"}`;
    case 'text-20001': return `{"text":"${'x'.repeat(20001)}"}`;
    case 'invalid-utf8-ff': return utf8('{"text":"', [0xff, 0xfe], '"}');
    case 'invalid-utf8-overlong': return utf8('{"text":"', [0xc0, 0xaf], '"}');
    case 'invalid-utf8-surrogate': return utf8('{"text":"', [0xed, 0xa0, 0x80], '"}');
    case 'invalid-utf8-truncated': return utf8('{"text":"', [0xe2, 0x82], '"}');
    case 'invalid-utf8-bare-continuation': return utf8([0x80, 0x7b, 0x7d]);
    case 'bom-object': return '\ufeff{}';
    case 'nul-in-string': return '{"text":"a\\u0000b","title":"a\\u0000b","response":"\\u0000"}';
    case 'raw-control-in-string': return '{"text":"a\u0001b"}';
    case 'lone-surrogate-escape': return '{"text":"\\ud800","title":"\\udfff","response":"\\ud800\\u0041"}';
    case 'huge-array-of-ids': return `{"dependencyIds":[${Array.from({ length: 1001 }, (_, i) => i + 1).join(',')}]}`;
  }
}

const TASK_IDS = ['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '80', '81', '90', '999', '2147483647'];
/**
 * Stage ids share the task id space (the set-up makes 91 to 94; 94 is organisation 2's); Incoming
 * ids have their own (1 Grace's, 2 Ada's, 3 Bob's, 4 Gus's).
 */
const STAGE_IDS = ['91', '92', '93', '94', '1', '11', '90', '999', '2147483647'];
const INCOMING_IDS = ['1', '2', '3', '4', '5', '91', '999', '2147483647'];

const GARBAGE_IDS = [
  '0', '-1', '01', '00', '1.5', '1e3', '0x1', '+1', '%2B1', '2147483648', '4294967297', '99999999999', '12345678901',
  'abc', 'null', 'undefined', 'NaN', 'Infinity', '%00', '1%00', '%31', '%2e%2e', '..', '.', '\u0661', '\u{1D7D9}', '\uFF11',
  '1%20', '%20', '1;2', '1,2', '[1]', '{id}', ':id', '%zz', '%', '%E0%A4%A', '%C0%AF', '\u00ff', '\u{1F600}', '1\u0000', 'ﬀ',
];

const idsFor = (operation: OperationSpec): string[] =>
  operation.target === 'incoming' ? INCOMING_IDS : operation.target === 'assistance-stage' ? STAGE_IDS : TASK_IDS;

/** Targets Ada's client may act on: her tasks (11 holds her lease), her Incoming item 2, her stages. */
const adasIdsFor = (operation: OperationSpec): string[] =>
  operation.target === 'incoming' ? ['2'] : operation.target === 'assistance-stage' ? ['91', '92'] : ['1', '2', '3', '4', '5', '8', '11'];

const targetIdArb = (operation: OperationSpec) =>
  fc.oneof({ weight: 3, arbitrary: fc.constantFrom(...adasIdsFor(operation)) }, { weight: 1, arbitrary: fc.constantFrom(...idsFor(operation)) });

const routeOf = (operation: OperationSpec, id: string) => `${BASE_PATH}${operation.path.replace('{id}', id)}`;

const shortString = fc.string({ maxLength: 12 });
const anyUnicode = fc.string({ unit: 'binary', maxLength: 16 });
const loneSurrogates = fc.string({ unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((code) => String.fromCharCode(code)), maxLength: 3 });

export const methodArb: fc.Arbitrary<string | Label> = fc.oneof(
  fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'TRACE', 'CONNECT', 'PROPFIND', 'MKCOL', 'QUERY'),
  fc.constantFrom('get', 'post', 'patch', 'put', 'Get', 'Post', 'pAtCh', '', ' ', 'GET ', ' GET', 'G\u0130T', 'POST\r\n', '*'),
  shortString,
  fc.constant<Label>({ label: 'long-method' }),
);

function pathArb(operation: OperationSpec): fc.Arbitrary<string | Label> {
  const route = routeOf(operation, '1');
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...GARBAGE_IDS).map((id) => routeOf(operation, id)) },
    { weight: 1, arbitrary: fc.oneof(shortString, anyUnicode, loneSurrogates).map((id) => routeOf(operation, id)) },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        route.replace(`${BASE_PATH}/`, `${BASE_PATH}//`), `${route}/`, `${route}//`, `/${route}`, `${route}/..`, `${route}/.`,
        route.replace(BASE_PATH, `${BASE_PATH}/.`), route.replace(BASE_PATH, `${BASE_PATH}/x/..`), route.replace(BASE_PATH, ''),
        route.toUpperCase(), route.replace('/api', '/API'), route.replace(BASE_PATH, '/api/v2'), route.replace(BASE_PATH, '/api/v1%2F'),
        route.replaceAll('/', '%2F'), route.replaceAll('/', '\\'), `http://example.test${route}`, `${route}#fragment`, `${route};x=1`,
        `${route}%00`, `${route}%2F`, `${route}\u0000`, `${route} `, ` ${route}`, route.replace('tasks', 'ta%73ks'),
        route.replace('tasks', 't\u0430sks'), `${BASE_PATH}/tasks/available/`, `${BASE_PATH}/tasks/waiting/1`, `${BASE_PATH}/tasks`,
        `${BASE_PATH}/`, BASE_PATH, '/', '', '*', '/api/v1/openapi.json/', '/api/v1/incoming/', '/api/v1/human-requests',
      ),
    },
    { weight: 1, arbitrary: fc.webPath().map((path) => `${BASE_PATH}${path}`) },
    { weight: 1, arbitrary: fc.array(fc.webSegment(), { maxLength: 5 }).map((segments) => `${BASE_PATH}/${segments.join('/')}`) },
    { weight: 1, arbitrary: fc.constantFrom<Label>({ label: 'long-path' }, { label: 'long-id' }, { label: 'long-segment-unicode' }) },
  );
}

export const queryArb: fc.Arbitrary<string | Label> = fc.oneof(
  { weight: 2, arbitrary: fc.constant('') },
  {
    weight: 3,
    arbitrary: fc
      .array(
        fc.tuple(
          fc.oneof(fc.constantFrom('includeAccepted', 'includeaccepted', 'IncludeAccepted', 'x', '', '__proto__', 'constructor', 'include%41ccepted', 'a[b]'), shortString),
          fc.oneof(fc.constantFrom('true', 'false', 'TRUE', 'True', '', '1', '0', 'yes', '%74rue', '%zz', 'true%00', 'true ', '\u00e9'), shortString),
        ),
        { maxLength: 4 },
      )
      .map((pairs) => `?${pairs.map(([name, value]) => `${name}=${value}`).join('&')}`),
  },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '?', '?&', '?&&', '?=', '?=true', '?includeAccepted', '?includeAccepted=', '?includeAccepted=true&includeAccepted=true',
      '?includeAccepted=true&includeAccepted=false', '?includeAccepted=true&x=1', '?%', '?%zz', '??includeAccepted=true',
      '?includeAccepted=true;x=1', '?includeAccepted=true#frag', '?includeAccepted=%00', '?includeAccepted=tru%C3%A9', '?+=+',
    ),
  },
  { weight: 1, arbitrary: fc.oneof(shortString, anyUnicode).map((text) => `?${text}`) },
  { weight: 1, arbitrary: fc.constant<Label>({ label: 'long-query' }) },
);

// ---------------------------------------------------------------- headers

/** Tokens of clients that authenticate. */
export const VALID_TOKENS: readonly string[] = [
  TOKENS.ada, TOKENS.readOnly, TOKENS.identityOnly, TOKENS.bob, TOKENS.otherOrg, GRACE, GAIL, ...SCOPES.map(withoutScopeToken),
];

/** Credentials that must never authenticate: absent from the header, or present and refused. */
export const invalidAuthorizationArb: fc.Arbitrary<HeaderGen | null> = fc.oneof(
  fc.constant(null),
  fc.constantFrom(TOKENS.revoked, TOKENS.inactiveSponsor, TOKENS.inactiveResource, TOKENS.inactiveOrg, 'wta_unknown_token', `${TOKENS.ada}x`, TOKENS.ada.toUpperCase())
    .map((token) => `Bearer ${token}`),
  fc.constantFrom(
    '', ' ', 'Bearer', 'Bearer ', `Basic ${Buffer.from(`ada:${TOKENS.ada}`).toString('base64')}`, `Token ${TOKENS.ada}`, TOKENS.ada,
    `Bearer:${TOKENS.ada}`, `Bearer ${TOKENS.ada} extra`, `Bearer ${TOKENS.ada},`, `Bearer "${TOKENS.ada}"`, `Bearer\t${TOKENS.ada}`,
    `Bearer ${TOKENS.ada}\u00e9`, `Bearer ${TOKENS.ada}\r\nX: y`, `Bearer ${TOKENS.ada}\u0000`, `Bearer ${'A'.repeat(5000)}`,
    `Bearer ${TOKENS.revoked}, Bearer ${TOKENS.ada}`, `Bearer ${TOKENS.ada} Bearer ${TOKENS.ada}`,
  ),
  fc.constantFrom<readonly string[]>(
    [], ['', ''], [`Bearer ${TOKENS.ada}`, `Bearer ${TOKENS.ada}`], [`Bearer ${TOKENS.revoked}`, `Bearer ${TOKENS.ada}`],
    [`Bearer ${TOKENS.ada}`, ''], ['Bearer', TOKENS.ada],
  ),
  fc.oneof(shortString, anyUnicode).map((text) => `Bearer ${text}`),
  anyUnicode,
);

const validAuthorizationArb: fc.Arbitrary<HeaderGen> = fc.oneof(
  { weight: 6, arbitrary: fc.constant(`Bearer ${TOKENS.ada}`) },
  { weight: 3, arbitrary: fc.constantFrom(...VALID_TOKENS).map((token) => `Bearer ${token}`) },
  { weight: 1, arbitrary: fc.constantFrom(`bearer ${TOKENS.ada}`, `BEARER  ${TOKENS.ada} `, `Bearer ${TOKENS.bob}`) },
  { weight: 1, arbitrary: fc.constant<readonly string[]>([`Bearer ${TOKENS.ada}`]) },
);

const current = (placeholder: Placeholder['placeholder']): Placeholder => ({ placeholder });

const ifMatchArb: fc.Arbitrary<HeaderGen> = fc.oneof(
  { weight: 4, arbitrary: fc.constant(current('if-match')) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '*', '"task-1-plan-1"', '"task-1-plan-999"', 'W/"task-1-plan-1"', 'task-1-plan-1', '"task-0-plan-1"', '"task-01-plan-1"',
      '"task-99999999999-plan-1"', '"task-1-plan-99999999999999999"', '"task-1-plan-0"', '"task--1-plan-1"', '', ' ', '"', '""',
      '"00000000-0000-0000-0000-000000000000"', '0b7e2f9c-5d1a-4c3e-8f6b-9a2d4e1c7b30', '"0B7E2F9C-5D1A-4C3E-8F6B-9A2D4E1C7B30"',
      '"task-1-plan-1", "task-1-plan-2"', '"task-1-plan-1\u0000"',
    ),
  },
  { weight: 1, arbitrary: fc.uuid().map((uuid) => `"${uuid}"`) },
  { weight: 1, arbitrary: fc.oneof(shortString, anyUnicode) },
  { weight: 1, arbitrary: fc.constantFrom<HeaderGen>(['"task-1-plan-1"', '"task-1-plan-1"'], [], ['*']) },
);

/** A small pool, so keys are reused: replays and idempotency conflicts get exercised. */
const idempotencyKeyArb: fc.Arbitrary<HeaderGen> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('k1', 'k2', 'k3', 'retry.1', 'a:b-c_d') },
  { weight: 2, arbitrary: fc.stringMatching(/^[a-zA-Z0-9._:-]{1,100}$/) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '', ' ', 'a'.repeat(100), 'a'.repeat(101), 'has space', '\u043a\u043b\u044e\u0447', 'a/b', 'a,b', 'k1 ', ' k1', 'k1\u0000', '*',
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom<HeaderGen>(['k1', 'k1'], ['k1'], []) },
  { weight: 1, arbitrary: anyUnicode },
);

const claimHeaderArb: fc.Arbitrary<HeaderGen> = fc.oneof(
  { weight: 3, arbitrary: fc.constant(current('lease')) },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      LEASE_11, LEASE_11.toUpperCase(), ` ${LEASE_11} `, '00000000-0000-0000-0000-000000000000', 'not-a-uuid', '', `{${LEASE_11}}`,
      LEASE_11.replaceAll('-', ''), `${LEASE_11}, ${LEASE_11}`,
    ),
  },
  { weight: 1, arbitrary: fc.uuid() },
  { weight: 1, arbitrary: fc.constantFrom<HeaderGen>([LEASE_11, LEASE_11], [LEASE_11]) },
  { weight: 1, arbitrary: anyUnicode },
);

const contentTypeArb: fc.Arbitrary<HeaderGen> = fc.oneof(
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      'application/json', 'application/json; charset=utf-8', 'application/json;charset="utf-8"', 'application/merge-patch+json',
      'APPLICATION/JSON', 'application/json;', 'application/problem+json',
    ),
  },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'application/json; charset=latin1', 'application/json; charset=utf-8; x=1', 'application/json; charset', 'text/plain',
      'text/json', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '', ' ', 'application/', '/json',
      'application/+json', 'application/x+json+', 'json', '*/*', 'application/*', 'application/json\u0000', 'application/jsonp',
      'application/json, text/plain', 'application/json; charset=utf-8=x',
    ),
  },
  { weight: 1, arbitrary: fc.constantFrom<HeaderGen>(['application/json', 'application/json'], ['application/json'], []) },
  { weight: 1, arbitrary: anyUnicode },
);

const contentLengthArb: fc.Arbitrary<HeaderGen> = fc.oneof(
  fc.constantFrom(
    '0', '1', '-1', '-131073', 'abc', '', ' 5', '1e9', '131072', '131073', '99999999999999999999', 'Infinity', '-Infinity', 'NaN',
    '0x10', '1.5', '1e400', '5,5', '+5', '0b1', '\u0661',
  ),
  fc.nat().map(String),
  fc.constantFrom<HeaderGen>(['1', '1'], ['131073'], ['0', '999999']),
  shortString,
);

const anyHeaderValueArb: fc.Arbitrary<HeaderGen> = fc.oneof(
  shortString,
  anyUnicode,
  fc.array(shortString, { maxLength: 3 }),
);

/** Header names as hosts may spell them, including case variants that make a duplicate. */
const HEADER_NAMES = [
  'authorization', 'Authorization', 'AUTHORIZATION', 'if-match', 'If-Match', 'IF-MATCH', 'idempotency-key', 'Idempotency-Key',
  'x-task-claim', 'X-Task-Claim', 'content-type', 'Content-Type', 'content-length', 'Content-Length', 'if-none-match',
  'transfer-encoding', 'x-http-method-override', 'x-forwarded-for', 'host', '__proto__', 'constructor', 'toString', 'hasOwnProperty',
] as const;

function headerValueFor(name: string): fc.Arbitrary<HeaderGen> {
  switch (name.toLowerCase()) {
    case 'authorization': return fc.oneof(validAuthorizationArb, invalidAuthorizationArb.map((value) => value ?? ''));
    case 'if-match': return ifMatchArb;
    case 'if-none-match': return fc.oneof(fc.constant(current('if-match')), ifMatchArb);
    case 'idempotency-key': return idempotencyKeyArb;
    case 'x-task-claim': return claimHeaderArb;
    case 'content-type': return contentTypeArb;
    case 'content-length': return contentLengthArb;
    default: return anyHeaderValueArb;
  }
}

/** One header entry, of a known name (with its own hostile values) or of any name. */
const headerEntryArb: fc.Arbitrary<readonly [string, HeaderGen]> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...HEADER_NAMES).chain((name) => headerValueFor(name).map((value) => [name, value] as const)) },
  { weight: 1, arbitrary: fc.tuple(fc.oneof(shortString, anyUnicode), anyHeaderValueArb) },
);

/** Headers that never carry a credential (for the "no valid credential" property). */
const nonAuthHeaderEntryArb = headerEntryArb.filter(([name]) => name.toLowerCase() !== 'authorization');

// ---------------------------------------------------------------- bodies

const LOCAL_TIMES = [
  '2026-11-16T08:00:00', '2026-11-16T09:30:00', '2026-11-16T10:00:00', '2026-11-16T11:00:00', '2026-11-17T09:00:00',
  '2026-11-02T09:00:00', '2026-03-29T01:30:00', '2026-10-25T01:30:00', '2026-11-16T09:00:00Z', '2026-11-16T09:00:00+01:00',
  '2026-11-16T09:00:00.123456789', '2026-02-30T10:00:00', '2026-11-16 09:00:00', '2026-11-16', '', '0000-01-01T00:00:00',
  '9999-12-31T23:59:59', '2026-11-16T24:00:00', '2026-11-16T09:00:00-14:00', '+002026-11-16T09:00:00',
];

const localTimeArb = fc.oneof(
  { weight: 2, arbitrary: fc.constantFrom(...LOCAL_TIMES) },
  {
    weight: 1,
    arbitrary: fc
      .date({ min: new Date('2025-01-01T00:00:00Z'), max: new Date('2028-01-01T00:00:00Z'), noInvalidDate: true })
      .map((date) => date.toISOString().slice(0, 19)),
  },
);

const titleArb = fc.oneof(
  { weight: 4, arbitrary: fc.string({ minLength: 1, maxLength: 40 }) },
  { weight: 1, arbitrary: fc.constantFrom('', ' ', '   ', '\u00a0', '\u200b', '\t\n', 'x'.repeat(200), 'x'.repeat(201), 'Ünïcödé \u{1F600}') },
);
const textArb = fc.oneof(titleArb, fc.constant(null), fc.string({ unit: 'grapheme', maxLength: 30 }));
const minutesArb = fc.oneof(
  { weight: 4, arbitrary: fc.integer({ min: 0, max: 600 }) },
  { weight: 1, arbitrary: fc.constantFrom(-1, 1000000, 1000001, 100001, 2147483647, 2147483648, 1.5, -0, 1e300) },
);
const smallIdArb = fc.constantFrom(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 20, 21, 80, 81, 90, 91, 92, 93, 94, 999, 0, -1, 2147483648);
const intervalArb = fc.record(
  { staffMemberId: fc.constantFrom(10, 10, 10, 11, 12, 20), start: localTimeArb, end: localTimeArb },
  { requiredKeys: ['staffMemberId', 'start', 'end'] },
);

/** Bodies of the right shape for the operation, with values anywhere from valid to out of bounds. */
function shapedBodyArb(operation: OperationSpec): fc.Arbitrary<unknown> {
  switch (operation.operationId) {
    case 'patchTask':
      return fc.record(
        {
          title: titleArb,
          description: textArb,
          status: fc.constantFrom('Ready', 'InProgress', 'Done', 'done', ''),
          sequence: minutesArb,
          estimatedMinutes: minutesArb,
          remainingMinutes: minutesArb,
          startedAt: fc.oneof(localTimeArb, fc.constant(null)),
          earliestStart: fc.oneof(localTimeArb, fc.constant(null)),
          isWaiting: fc.oneof(fc.boolean(), fc.constantFrom<unknown>('true', 0, null)),
          releaseDate: fc.oneof(localTimeArb, fc.constant(null)),
          resourceMode: fc.constantFrom('Independent', 'Collaboration', 'independent'),
          dependencyIds: fc.array(smallIdArb, { maxLength: 4 }),
          actualIntervals: fc.array(intervalArb, { maxLength: 3 }),
        },
        { requiredKeys: [] },
      );
    case 'replaceActualEffort':
      return fc.record({ actualIntervals: fc.array(intervalArb, { maxLength: 4 }) });
    case 'appendNote':
      return fc.record({ text: titleArb });
    case 'claimTask':
    case 'startIncoming':
      return fc.constantFrom<unknown>({}, undefined);
    case 'renewClaim':
    case 'releaseClaim':
      return fc.record({
        token: fc.oneof(fc.constantFrom<unknown>('$LEASE', '$LEASE', LEASE_11, '00000000-0000-0000-0000-000000000000', null, ''), fc.uuid()),
      });
    case 'createHumanRequest':
      return fc.record(
        {
          humanAssigneeId: fc.oneof({ weight: 3, arbitrary: fc.constant(11) }, { weight: 1, arbitrary: smallIdArb }),
          title: titleArb,
          details: textArb,
          estimatedMinutes: minutesArb,
          priority: fc.constantFrom('critical', 'high', 'normal', 'low', 'urgent'),
          isBlocking: fc.boolean(),
          assistanceKind: fc.constantFrom('Question', 'Review', 'Approval', 'Action', 'question'),
          publishExternally: fc.boolean(),
        },
        { requiredKeys: ['humanAssigneeId', 'title', 'estimatedMinutes'] },
      );
    case 'evaluateExternal':
      return fc.oneof(
        fc.record({ decision: fc.constant('acknowledge'), eventId: fc.oneof(smallIdArb, fc.constantFrom(9007199254740991, 9007199254740992)) }),
        fc.record(
          {
            decision: fc.constantFrom('resolve', 'keepwaiting', 'followup', 'Resolve', 'acknowledge'),
            incomingId: fc.constantFrom(1, 2, 3, 4, 999),
            revision: fc.oneof(fc.constant('$REVISION'), fc.uuid()),
            message: titleArb,
          },
          { requiredKeys: ['decision', 'incomingId', 'revision'] },
        ),
      );
    case 'planIncoming':
      return fc.record({ plannedStart: localTimeArb });
    case 'reassignIncoming':
      return fc.record({ assigneeId: smallIdArb });
    case 'completeIncoming':
      return fc.record({ response: textArb }, { requiredKeys: [] });
    default:
      return fc.constant(undefined);
  }
}

const JSON_TEXTS = [
  'null', 'true', '0', '-0', '"string"', '[]', '[{}]', '{}', '{} x', '{}{}', '{,}', '{"a":1,}', "{'a':1}", 'NaN', '[1,]', '"\\x41"',
  '"\\u12"', '\n\t {}\r\n', '{"text"}', '{"text":}', '{"text":"a"', '"', '1e400', '123456789012345678901234567890', '-1e400',
  '{"sequence":1e400}', '{"estimatedMinutes":123456789012345678901234567890}', '{"humanAssigneeId":1e400,"title":"t","estimatedMinutes":1}',
  '{"decision":"acknowledge","eventId":123456789012345678901234567890}', '{"assigneeId":1e400}', '{"sequence":-0}', '{"sequence":1.0}',
  '{"sequence":1e2}', '{"assigneeId":1.0000000000000001}', '{"sequence":0.1e1}', '{"estimatedMinutes":1E+2}',
  '{"text":"a","text":"b"}', '{"text":"a","Text":"b"}', '{"text":"a","TEXT":"a"}', '{"text":"a","\\u0074ext":"b"}',
  '{"title":"a","TITLE":"b"}', '{"actualIntervals":[{"staffMemberId":10,"staffMemberId":10,"start":"2026-11-16T08:00:00","end":"2026-11-16T09:00:00"}]}',
  '{"actualIntervals":[{"staffMemberId":10,"StaffMemberId":10,"start":"2026-11-16T08:00:00","end":"2026-11-16T09:00:00"}]}',
  '{"a":{"b":1,"B":2}}', '{"response":"x","response":"x"}', '{"plannedStart":"2026-11-17T10:00:00","plannedstart":"2026-11-17T10:00:00"}',
  '{"__proto__":{"text":"x"}}', '{"__proto__":null}', '{"constructor":{"prototype":{"polluted":true}}}', '{"text":"x","__proto__":{"text":"y"}}',
  '{"__proto__":{"isAdmin":true},"text":"x"}', '{"text":"x","constructor":1}', '{"toString":"x"}', '{"hasOwnProperty":1,"text":"x"}',
  '{"text":123}', '{"text":null}', '{"title":null}', '{"decision":"resolve"}', '{"decision":"acknowledge","eventId":"1"}',
  '{"actualIntervals":{}}', '{"dependencyIds":"1,2"}', '{"dependencyIds":[1,1]}', '{"dependencyIds":[1]}', '{"token":null}',
  '{"token":"00000000-0000-0000-0000-000000000000"}', '{"plannedStart":"2026-03-29T01:30:00"}', '{"plannedStart":"2026-02-30T10:00:00"}',
  '{"response":null}', '{"status":"Done"}', '{"status":"InProgress"}', '{"startedAt":null}', '{"remainingMinutes":5}',
  '{"decision":"resolve","incomingId":1,"revision":"0b7e2f9c-5d1a-4c3e-8f6b-9a2d4e1c7b30","extra":1}',
  '{"decision":["resolve"]}', '{"decision":null}', '[{"text":"x"}]', '{"text":["x"]}', '{"text":{"x":1}}',
];

export const bodyArb = (operation: OperationSpec): fc.Arbitrary<BodyGen> =>
  fc.oneof(
    { weight: 3, arbitrary: shapedBodyArb(operation).map((value): BodyGen => (value === undefined ? { kind: 'none' } : { kind: 'json', value })) },
    { weight: 1, arbitrary: fc.constantFrom<BodyGen>({ kind: 'none' }, { kind: 'null' }, { kind: 'empty' }) },
    { weight: 3, arbitrary: fc.constantFrom(...JSON_TEXTS).map((text): BodyGen => ({ kind: 'text', text })) },
    { weight: 2, arbitrary: fc.constantFrom(...PAYLOADS).map((name): BodyGen => ({ kind: 'payload', name })) },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 4 }).map((value): BodyGen => ({ kind: 'json', value })) },
    { weight: 1, arbitrary: fc.oneof(anyUnicode, loneSurrogates, fc.string({ maxLength: 40 })).map((text): BodyGen => ({ kind: 'text', text })) },
    { weight: 1, arbitrary: fc.array(fc.integer({ min: 0, max: 255 }), { maxLength: 40 }).map((bytes): BodyGen => ({ kind: 'bytes', bytes })) },
  );

// ---------------------------------------------------------------- whole requests

const operationArb = fc.constantFrom(...OPERATIONS);

/**
 * A request an API client might plausibly send: the operation's method and route with a real or
 * plausible target, the current If-Match, a key from a small pool, a JSON content type and a
 * body of the right shape; the credential is `authorization`.
 */
function wellFormedArb(operation: OperationSpec, authorization: fc.Arbitrary<HeaderGen | null>): fc.Arbitrary<RequestGen> {
  const query = operation.query.length === 0 ? fc.constant('') : fc.constantFrom('', '?includeAccepted=true', '?includeAccepted=false');
  return fc
    .record({
      id: targetIdArb(operation),
      query,
      authorization,
      ifMatch: fc.oneof({ weight: 5, arbitrary: fc.constant<HeaderGen | null>(current('if-match')) }, { weight: 1, arbitrary: fc.constant(null) }),
      // Mostly fresh keys; sometimes one of a small pool, so replays and conflicts happen too.
      key: fc.oneof(
        { weight: 4, arbitrary: fc.stringMatching(/^[a-zA-Z0-9._:-]{12,40}$/).map((key): HeaderGen | null => key) },
        { weight: 1, arbitrary: fc.constantFrom<HeaderGen | null>('k1', 'k2', 'retry.1') },
        { weight: 1, arbitrary: fc.constant(null) },
      ),
      claim: fc.oneof({ weight: 3, arbitrary: fc.constant<HeaderGen | null>(null) }, { weight: 1, arbitrary: fc.constant<HeaderGen | null>(current('lease')) }),
      body: shapedBodyArb(operation),
      encoding: fc.constantFrom<'string' | 'bytes'>('string', 'bytes'),
    })
    .map(({ id, query, authorization, ifMatch, key, claim, body, encoding }): RequestGen => {
      const headers: [string, HeaderGen][] = [];
      if (authorization !== null) headers.push(['authorization', authorization]);
      if (operation.ifMatch !== 'none' && ifMatch !== null) headers.push(['if-match', ifMatch]);
      if (operation.idempotencyKey !== 'none' && key !== null) headers.push(['idempotency-key', key]);
      if (operation.claimHeader && claim !== null) headers.push(['x-task-claim', claim]);
      if (body !== undefined) headers.push(['content-type', 'application/json']);
      return {
        operationId: operation.operationId,
        method: operation.method,
        path: routeOf(operation, id),
        query,
        headers,
        body: body === undefined ? { kind: 'none' } : { kind: 'json', value: body },
        encoding,
      };
    });
}

type Mutation =
  | { readonly part: 'method'; readonly value: string | Label }
  | { readonly part: 'path'; readonly value: string | Label }
  | { readonly part: 'query'; readonly value: string | Label }
  | { readonly part: 'header'; readonly entry: readonly [string, HeaderGen] }
  | { readonly part: 'drop-header'; readonly index: number }
  | { readonly part: 'body'; readonly value: BodyGen }
  | { readonly part: 'encoding' };

function mutationArb(operation: OperationSpec, headerEntries: fc.Arbitrary<readonly [string, HeaderGen]>): fc.Arbitrary<Mutation> {
  return fc.oneof(
    { weight: 1, arbitrary: methodArb.map((value): Mutation => ({ part: 'method', value })) },
    { weight: 2, arbitrary: pathArb(operation).map((value): Mutation => ({ part: 'path', value })) },
    { weight: 1, arbitrary: queryArb.map((value): Mutation => ({ part: 'query', value })) },
    { weight: 3, arbitrary: headerEntries.map((entry): Mutation => ({ part: 'header', entry })) },
    // The well-formed request spells these in lower case, so the same name replaces its value.
    {
      weight: 3,
      arbitrary: fc
        .constantFrom('if-match', 'idempotency-key', 'x-task-claim', 'content-type', 'content-length')
        .chain((name) => headerValueFor(name).map((value): Mutation => ({ part: 'header', entry: [name, value] }))),
    },
    { weight: 1, arbitrary: fc.nat(6).map((index): Mutation => ({ part: 'drop-header', index })) },
    { weight: 3, arbitrary: bodyArb(operation).map((value): Mutation => ({ part: 'body', value })) },
    { weight: 1, arbitrary: fc.constant<Mutation>({ part: 'encoding' }) },
  );
}

function mutate(request: RequestGen, mutations: readonly Mutation[]): RequestGen {
  let result = request;
  for (const mutation of mutations) {
    switch (mutation.part) {
      case 'method': result = { ...result, method: mutation.value }; break;
      case 'path': result = { ...result, path: mutation.value }; break;
      case 'query': result = { ...result, query: mutation.value }; break;
      case 'header': result = { ...result, headers: [...result.headers, mutation.entry] }; break;
      case 'drop-header': result = { ...result, headers: result.headers.filter((_, index) => index !== mutation.index) }; break;
      case 'body': result = { ...result, body: mutation.value }; break;
      case 'encoding': result = { ...result, encoding: result.encoding === 'string' ? 'bytes' : 'string' }; break;
    }
  }
  return result;
}

/** Everything at random, the operation only suggesting the route and body. */
function chaosArb(operation: OperationSpec, headerEntries: fc.Arbitrary<readonly [string, HeaderGen]>, authorization: fc.Arbitrary<HeaderGen | null>): fc.Arbitrary<RequestGen> {
  return fc
    .record({
      method: fc.oneof(fc.constant<string | Label>(operation.method), methodArb),
      path: fc.oneof(fc.constantFrom(...idsFor(operation)).map((id): string | Label => routeOf(operation, id)), pathArb(operation)),
      query: queryArb,
      authorization,
      headers: fc.array(headerEntries, { maxLength: 6 }),
      body: bodyArb(operation),
      encoding: fc.constantFrom<'string' | 'bytes'>('string', 'bytes'),
    })
    .map(({ method, path, query, authorization: credential, headers, body, encoding }): RequestGen => ({
      operationId: operation.operationId,
      method,
      path,
      query,
      headers: credential === null ? headers : [['authorization', credential], ...headers],
      body,
      encoding,
    }));
}

/** Well-formed, well-formed with one to three hostile changes, or chaos; any credential. */
export const anyRequestArb: fc.Arbitrary<RequestGen> = operationArb.chain((operation) => {
  const credential = fc.oneof({ weight: 4, arbitrary: validAuthorizationArb }, { weight: 1, arbitrary: invalidAuthorizationArb });
  return fc.oneof(
    { weight: 2, arbitrary: wellFormedArb(operation, credential) },
    {
      weight: 5,
      arbitrary: fc
        .tuple(wellFormedArb(operation, credential), fc.array(mutationArb(operation, headerEntryArb), { minLength: 1, maxLength: 3 }))
        .map(([request, mutations]) => mutate(request, mutations)),
    },
    { weight: 2, arbitrary: chaosArb(operation, headerEntryArb, credential) },
  );
});

/** Requests that carry no valid credential (none, or one that must be refused), otherwise anything. */
export const unauthenticatedRequestArb: fc.Arbitrary<RequestGen> = operationArb.chain((operation) =>
  fc.oneof(
    { weight: 2, arbitrary: wellFormedArb(operation, invalidAuthorizationArb) },
    {
      weight: 3,
      arbitrary: fc
        .tuple(wellFormedArb(operation, invalidAuthorizationArb), fc.array(mutationArb(operation, nonAuthHeaderEntryArb), { minLength: 1, maxLength: 3 }))
        .map(([request, mutations]) => mutate(request, mutations)),
    },
    { weight: 2, arbitrary: chaosArb(operation, nonAuthHeaderEntryArb, invalidAuthorizationArb) },
  ),
);

/** Ada's (or another valid client's) well-formed requests with bodies of the right shape: business rules. */
export const businessRequestArb: fc.Arbitrary<RequestGen> = operationArb
  .filter((operation) => operation.caller !== 'anonymous')
  .chain((operation) => wellFormedArb(operation, validAuthorizationArb));

// ---------------------------------------------------------------- materialising

export function labelText(label: Label): string {
  switch (label.label) {
    case 'long-method': return 'GET'.repeat(40000);
    case 'long-path': return `${BASE_PATH}/${'tasks/'.repeat(30000)}1`;
    case 'long-id': return `${BASE_PATH}/tasks/${'9'.repeat(100000)}`;
    case 'long-query': return `?${'includeAccepted=true&'.repeat(10000)}`;
    case 'long-segment-unicode': return `${BASE_PATH}/tasks/${'\u00e9\u{1F600}'.repeat(20000)}`;
  }
}

export const textOf = (value: string | Label): string => (typeof value === 'string' ? value : labelText(value));

export const isPlaceholder = (value: HeaderGen): value is Placeholder => typeof value === 'object' && !Array.isArray(value);
