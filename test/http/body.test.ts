import t from 'tap';
import type { TSchema } from 'typebox';
import { bodyByteLength, isJsonMediaType, MAX_BODY_BYTES, readBody, type ParsedBody } from '../../lib/http/body.js';
import { requestHeaders } from '../../lib/http/headers.js';
import type { BodySpec } from '../../lib/http/operations.js';
import { ServiceError, type ErrorCode } from '../../lib/domain/errors.js';
import { ActualEffort, EmptyRequest, NoteCreate, TaskPatch } from '../../lib/schemas/requests.js';
import type { TapTest } from '../helpers/api.js';
import { codeOf } from '../helpers/expect-problem.js';

// Unit tests of contract 1 step 6 for bodies: media type (415), then syntax, duplicates, shape (400).

const JSON_TYPE = 'application/json';
const required = (schema: TSchema): BodySpec => ({ schema, required: true });
const optional = (schema: TSchema): BodySpec => ({ schema, required: false });

/** `contentType` null sends no Content-Type header. */
function read(spec: BodySpec | null, body: string | Uint8Array | null | undefined, contentType: string | null = JSON_TYPE): ParsedBody | undefined {
  return readBody(spec, body, requestHeaders(contentType === null ? {} : { 'content-type': contentType }), false);
}

function expectCode(tt: TapTest, code: ErrorCode, spec: BodySpec | null, body: string | Uint8Array | null | undefined, contentType: string | null = JSON_TYPE, what?: string): void {
  const label = what ?? `${typeof body === 'string' ? JSON.stringify(body).slice(0, 80) : String(body)} as ${contentType}`;
  tt.equal(codeOf(() => read(spec, body, contentType)), code, `${label}: ${code}`);
}

t.test('BODY: isJsonMediaType accepts application/json and application/*+json with an optional charset=utf-8', async (t) => {
  for (const type of [
    'application/json',
    'Application/JSON; charset=UTF-8',
    'application/merge-patch+json',
    'application/problem+json',
    'application/vnd.example.v1+json',
    'application/json;charset=utf-8',
    'application/json ; charset="utf-8"',
    '  application/json  ',
    'application/json; CHARSET=utf-8',
    // RFC 9110 5.6.6: parameters = *( OWS ";" OWS [ parameter ] ), so empty ones are allowed.
    'application/json;',
    'application/json; charset=utf-8;',
  ]) {
    t.ok(isJsonMediaType(type), JSON.stringify(type));
  }
});

t.test('BODY: isJsonMediaType rejects other types, other charsets and other parameters', async (t) => {
  for (const type of [
    '',
    'text/plain',
    'text/json',
    'application/jsonx',
    'application/json+xml',
    'application/+json',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'json',
    '/json',
    'application',
    'application/json; charset=latin1',
    'application/json; charset=utf-16',
    'application/json; charset=utf8',
    'application/json; charset=utf-8; profile=x',
    'application/json; boundary=x',
    'application/json, text/plain',
    'applicationx/json',
    'application/json; =utf-8',
    'application/json; charset',
    'application/json; charset=utf-8=x',
  ]) {
    t.notOk(isJsonMediaType(type), JSON.stringify(type));
  }
});

t.test('BODY: a body without a JSON content type gives 415 unsupported_media_type', async (t) => {
  for (const spec of [required(NoteCreate), optional(EmptyRequest)]) {
    expectCode(t, 'unsupported_media_type', spec, '{}', null, 'no content type');
    for (const type of ['text/plain', 'application/jsonx', 'application/json; charset=latin1', 'application/x-www-form-urlencoded', '']) {
      expectCode(t, 'unsupported_media_type', spec, '{"text":"hi"}', type);
    }
  }
  // The media type is checked before the JSON: a malformed body with a wrong type is 415.
  expectCode(t, 'unsupported_media_type', required(TaskPatch), '{not json', 'text/plain');
});

t.test('BODY: a body with a content coding other than identity gives 415 unsupported_media_type', async (t) => {
  const withCoding = (coding: string) =>
    codeOf(() => readBody(required(NoteCreate), '{"text":"hi"}', requestHeaders({ 'content-type': JSON_TYPE, 'content-encoding': coding }), false));
  for (const coding of ['gzip', 'br', 'deflate', 'GZIP', 'identity, gzip']) t.equal(withCoding(coding), 'unsupported_media_type', coding);
  for (const coding of ['identity', ' Identity ', '']) {
    t.same(readBody(required(NoteCreate), '{"text":"hi"}', requestHeaders({ 'content-type': JSON_TYPE, 'content-encoding': coding }), false)?.value,
      { text: 'hi' }, `${JSON.stringify(coding)} is no coding`);
  }
});

t.test('BODY: a body with a transfer coding other than chunked gives 415 unsupported_media_type (hosts undo only chunked)', async (t) => {
  const withCoding = (coding: string) => () =>
    readBody(required(NoteCreate), '{"text":"hi"}', requestHeaders({ 'content-type': JSON_TYPE, 'transfer-encoding': coding }), false);
  for (const coding of ['gzip, chunked', 'GZIP,chunked', 'deflate, chunked', 'chunked, br']) t.equal(codeOf(withCoding(coding)), 'unsupported_media_type', coding);
  for (const coding of ['chunked', ' Chunked ', 'identity, chunked', '']) t.same(withCoding(coding)()?.value, { text: 'hi' }, `${JSON.stringify(coding)} is framing only`);
});

t.test('BODY: a JSON content type is accepted in its allowed spellings', async (t) => {
  for (const type of ['application/json', 'Application/JSON; charset=UTF-8', 'application/merge-patch+json']) {
    const parsed = read(required(NoteCreate), '{"text":"hello"}', type);
    t.same(parsed?.value, { text: 'hello' }, type);
  }
});

t.test('BODY: JSON syntax errors give 400 validation_failed', async (t) => {
  const spec = required(TaskPatch);
  for (const body of ['{', '{"title":"a",}', "{'title':'a'}", '{"title":"a"} {}', '{"title":"a"}x', '{"sequence":01}', '{"sequence":NaN}', '\ufeff{}', '{"title":"\u0001"}']) {
    expectCode(t, 'validation_failed', spec, body);
  }
  expectCode(t, 'validation_failed', spec, new Uint8Array([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]), JSON_TYPE, 'invalid UTF-8');
  expectCode(t, 'validation_failed', spec, '{"sequence":1e400}', JSON_TYPE, 'a number out of range');
});

t.test('BODY: duplicate members give 400 validation_failed, case variants and at any depth', async (t) => {
  const spec = required(TaskPatch);
  const interval = '"staffMemberId":10,"start":"2026-11-16T09:00:00","end":"2026-11-16T09:30:00"';
  for (const body of [
    '{"title":"a","title":"a"}',
    '{"title":"a","Title":"b"}',
    '{"isWaiting":true,"ISWAITING":true}',
    `{"actualIntervals":[{${interval},"start":"2026-11-16T09:00:00"}]}`,
    `{"actualIntervals":[{${interval},"End":"2026-11-16T09:30:00"}]}`,
    `{"actualIntervals":[{${interval}},{${interval},"staffmemberid":10}]}`,
  ]) {
    expectCode(t, 'validation_failed', spec, body);
  }
  t.ok(read(spec, `{"actualIntervals":[{${interval}},{${interval}}]}`), 'the same members in sibling objects are fine');
});

t.test('BODY: unknown members give 400 validation_failed', async (t) => {
  expectCode(t, 'validation_failed', required(TaskPatch), '{"project":{"id":1}}');
  expectCode(t, 'validation_failed', required(TaskPatch), '{"title":"a","etag":"x"}');
  expectCode(t, 'validation_failed', required(NoteCreate), '{"text":"a","author":"me"}');
  expectCode(t, 'validation_failed', required(TaskPatch),
    '{"actualIntervals":[{"staffMemberId":10,"start":"2026-11-16T09:00:00","end":"2026-11-16T09:30:00","minutes":30}]}', JSON_TYPE, 'an unknown member at depth');
});

t.test('BODY: wrong types and bounds give 400 validation_failed', async (t) => {
  const spec = required(TaskPatch);
  for (const body of [
    '{"title":5}',
    '{"title":""}',
    '{"title":null}',
    '{"sequence":"1"}',
    '{"sequence":1.5}',
    '{"sequence":100001}',
    '{"sequence":-1}',
    '{"estimatedMinutes":1000001}',
    '{"isWaiting":"true"}',
    '{"status":"Blocked"}',
    '{"dependencyIds":[0]}',
    '{"dependencyIds":"1"}',
    '{"startedAt":"yesterday"}',
  ]) {
    expectCode(t, 'validation_failed', spec, body);
  }
  expectCode(t, 'validation_failed', required(NoteCreate), '{}', JSON_TYPE, 'a missing required member');
  expectCode(t, 'validation_failed', required(ActualEffort), '{"actualIntervals":{}}');
});

t.test('BODY: null, arrays and scalars as a whole body give 400 validation_failed', async (t) => {
  for (const spec of [required(TaskPatch), required(NoteCreate), optional(EmptyRequest)]) {
    for (const body of ['null', '[]', '[{}]', '"{}"', '1', 'true']) expectCode(t, 'validation_failed', spec, body);
  }
});

t.test('BODY: an empty body where one is required gives 400 validation_failed', async (t) => {
  for (const body of [undefined, null, '', new Uint8Array(0)]) {
    expectCode(t, 'validation_failed', required(NoteCreate), body, JSON_TYPE, `${body === '' ? "''" : String(body)}`);
    // With no body there is no media type to judge: still 400, not 415.
    expectCode(t, 'validation_failed', required(TaskPatch), body, null, `${String(body)} without a content type`);
  }
  expectCode(t, 'validation_failed', required(NoteCreate), ' ', JSON_TYPE, 'whitespace is not an empty body');
});

t.test('BODY: an empty body declared as another media type or coding, where a body is required, gives 415 (they are judged first)', async (t) => {
  for (const body of [undefined, '', new Uint8Array(0)]) {
    // `curl -d ''` sends form-urlencoded with no content.
    expectCode(t, 'unsupported_media_type', required(TaskPatch), body, 'application/x-www-form-urlencoded');
    expectCode(t, 'unsupported_media_type', required(NoteCreate), body, 'text/plain');
    expectCode(t, 'unsupported_media_type', required(NoteCreate), body, 'application/json; charset=latin1');
    // EmptyRequest takes an empty body whatever it is labelled.
    t.same(read(optional(EmptyRequest), body, 'text/plain'), { value: {}, canonical: '{}' }, `${String(body)} as text/plain is {} for EmptyRequest`);
    // So is a declared coding.
    const gzip = requestHeaders({ 'content-type': JSON_TYPE, 'content-encoding': 'gzip' });
    t.equal(codeOf(() => readBody(required(NoteCreate), body, gzip, false)), 'unsupported_media_type', `${String(body)} declared gzip: 415`);
    const chunked = requestHeaders({ 'content-type': JSON_TYPE, 'transfer-encoding': 'chunked' });
    t.equal(codeOf(() => readBody(required(NoteCreate), body, chunked, false)), 'validation_failed', `${String(body)} chunked, no coding: 400`);
  }
});

t.test('BODY: EmptyRequest-style specs accept no body, an empty body and {}, and nothing else', async (t) => {
  const spec = optional(EmptyRequest);
  for (const body of [undefined, null, '', new Uint8Array(0)]) {
    t.same(read(spec, body, null), { value: {}, canonical: '{}' }, `${String(body)} is {}`);
  }
  t.same(read(spec, '{}'), { value: {}, canonical: '{}' }, '{}');
  t.same(read(spec, ' { } ', 'application/json; charset=utf-8'), { value: {}, canonical: '{}' }, '{} with whitespace');
  expectCode(t, 'validation_failed', spec, '{"a":1}');
  expectCode(t, 'validation_failed', spec, '[]');
  expectCode(t, 'validation_failed', spec, 'null');
  expectCode(t, 'validation_failed', spec, '{"a":1,"A":2}');
});

t.test('BODY: operations without a request body refuse any body with 400 validation_failed', async (t) => {
  t.equal(read(null, undefined), undefined);
  t.equal(read(null, ''), undefined);
  t.equal(read(null, new Uint8Array(0)), undefined);
  expectCode(t, 'validation_failed', null, '{}');
  expectCode(t, 'validation_failed', null, 'x', 'text/plain', 'text with a wrong type is still 400');
});

t.test('BODY: a valid body yields its value and canonical text, from text or bytes', async (t) => {
  const text = '{"title":"T","sequence":3,"dependencyIds":[2,1]}';
  const expected = { title: 'T', sequence: 3, dependencyIds: [2, 1] };
  const canonical = '{"dependencyIds":[2,1],"sequence":3,"title":"T"}';
  t.same(read(required(TaskPatch), text), { value: expected, canonical });
  t.same(read(required(TaskPatch), new TextEncoder().encode(text)), { value: expected, canonical });
  t.same(read(required(NoteCreate), '{"text":"caf\u00e9 \u2603"}')?.value, { text: 'caf\u00e9 \u2603' });
});

t.test('BODY: a schema failure is 400 validation_failed; its first failure is described only when asked for (debug logs)', async (t) => {
  const detailOf = (explain: boolean): string | undefined => {
    try {
      readBody(required(TaskPatch), '{"sequence":"x"}', requestHeaders({ 'content-type': JSON_TYPE }), explain);
    } catch (error) {
      t.ok(error instanceof ServiceError && error.code === 'validation_failed');
      return (error as ServiceError).detail;
    }
    return undefined;
  };
  t.match(detailOf(true), /sequence/, 'explained: names the member');
  t.equal(detailOf(false), 'does not match the schema', 'not explained: no failure listing');
});

t.test('BODY: bodyByteLength counts UTF-8 bytes', async (t) => {
  t.equal(bodyByteLength(undefined), 0);
  t.equal(bodyByteLength(null), 0);
  t.equal(bodyByteLength(''), 0);
  t.equal(bodyByteLength('abc'), 3);
  t.equal(bodyByteLength('\u00e9'), 2);
  t.equal(bodyByteLength('\u{1f600}'), 4);
  t.equal(bodyByteLength(new Uint8Array(7)), 7);
  t.equal(MAX_BODY_BYTES, 131072);
});
