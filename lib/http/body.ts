import { ServiceError } from '../domain/errors.js';
import { validatorFor } from '../schemas/validator.js';
import { readJson, type JsonValue } from './json-reader.js';
import type { RequestHeaders } from './headers.js';
import type { BodySpec } from './operations.js';

export const MAX_BODY_BYTES = 131072;

export interface ParsedBody {
  readonly value: JsonValue;
  /** Canonical text for idempotency fingerprints (members sorted, numbers as sent). */
  readonly canonical: string;
}

const EMPTY_OBJECT: ParsedBody = { value: {}, canonical: '{}' };

/** Byte length without copying: strings are measured as UTF-8. */
export function bodyByteLength(body: Uint8Array | string | null | undefined): number {
  if (body === undefined || body === null) return 0;
  return typeof body === 'string' ? Buffer.byteLength(body, 'utf8') : body.byteLength;
}

/** `application/json` or `application/*+json`, with at most a `charset=utf-8` parameter. */
export function isJsonMediaType(contentType: string): boolean {
  const [mediaType = '', ...parameters] = contentType.split(';');
  const type = mediaType.trim().toLowerCase();
  const slash = type.indexOf('/');
  if (slash <= 0 || type.slice(0, slash) !== 'application') return false;
  const subtype = type.slice(slash + 1);
  if (subtype !== 'json' && !(subtype.endsWith('+json') && subtype.length > 5 && /^[a-z0-9!#$&^_.+-]+$/.test(subtype))) {
    return false;
  }
  for (const parameter of parameters) {
    // RFC 9110 5.6.6 allows empty parameters (`application/json;`); they say nothing.
    if (parameter.trim() === '') continue;
    // Split at the first `=` only, so `charset=utf-8=x` is not read as `charset=utf-8`.
    const equals = parameter.indexOf('=');
    if (equals === -1) return false;
    const name = parameter.slice(0, equals).trim().toLowerCase();
    const value = parameter.slice(equals + 1).trim().toLowerCase();
    if (name !== 'charset' || (value !== 'utf-8' && value !== '"utf-8"')) return false;
  }
  return true;
}

/**
 * Step 6 of the pipeline for bodies: media type and content coding (415), then JSON syntax, duplicate members, shape
 * and bounds (400). Returns undefined for operations without a request body. `explain` asks for
 * the first schema failure in the error's detail (for debug logs only): listing failures costs
 * many times the check itself on a large body, so it is not done for a log nobody reads.
 */
export function readBody(
  spec: BodySpec | null,
  body: Uint8Array | string | null | undefined,
  headers: RequestHeaders,
  explain: boolean,
): ParsedBody | undefined {
  const empty = bodyByteLength(body) === 0;
  if (spec === null) {
    if (!empty) throw new ServiceError('validation_failed', 'this operation takes no request body');
    return undefined;
  }
  if (empty) {
    if (!spec.required) return EMPTY_OBJECT;
    // A declared type or coding is judged before the missing JSON (contract step 6 order); with
    // neither there is nothing to judge, only a body missing.
    checkMediaType(headers, false);
    throw new ServiceError('validation_failed', 'request body required');
  }
  checkMediaType(headers, true);
  const parsed = readJson(body as Uint8Array | string);
  if (!parsed.ok) throw new ServiceError('validation_failed', `JSON ${parsed.failure} at ${parsed.offset}`);
  const validator = validatorFor(spec.schema);
  if (!validator.check(parsed.value)) {
    throw new ServiceError('validation_failed', explain ? validator.describeFailure(parsed.value) : 'does not match the schema');
  }
  return { value: parsed.value, canonical: parsed.canonical };
}

/**
 * 415 for a body the service cannot read as JSON: another media type (or none, when there is a
 * body), or a content or transfer coding it does not undo.
 */
function checkMediaType(headers: RequestHeaders, bodyPresent: boolean): void {
  const contentType = headers.get('content-type');
  if (contentType === undefined ? bodyPresent : !isJsonMediaType(contentType)) {
    throw new ServiceError('unsupported_media_type', `content type ${contentType ?? '(none)'}`);
  }
  // RFC 9110 (15.5.16): a content coding the server does not undo is 415, rather than reading
  // compressed bytes as JSON (a 400 that would blame the JSON) or taking a mislabelled body; its
  // Accept-Encoding (12.5.3) tells the client which coding would do, none.
  const coding = headers.get('content-encoding')?.trim().toLowerCase();
  if (coding !== undefined && coding !== '' && coding !== 'identity') {
    throw new ServiceError('unsupported_media_type', `content coding ${coding}`, { 'accept-encoding': 'identity' });
  }
  // Hosts undo chunked framing only: node:http hands over a `gzip, chunked` body still compressed.
  const transferCoding = otherTransferCoding(headers.get('transfer-encoding'));
  if (transferCoding !== undefined) throw new ServiceError('unsupported_media_type', `transfer coding ${transferCoding}`);
}

/** The first transfer coding listed other than chunked (which hosts undo) and identity, if any. */
function otherTransferCoding(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  for (const listed of header.split(',')) {
    const coding = listed.trim().toLowerCase();
    if (coding !== '' && coding !== 'chunked' && coding !== 'identity') return coding;
  }
  return undefined;
}
