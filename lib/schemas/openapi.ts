import type { TSchema } from 'typebox';
import { ERROR_CATALOGUE } from '../http/problem.js';
import { NOT_STORED, REVALIDATED_PER_CLIENT } from '../http/conditional.js';
import { BASE_PATH, BUSINESS_ERRORS, OPERATIONS, type OperationSpec } from '../http/operations.js';
import type { ErrorCode } from '../domain/errors.js';
import { Id } from './common.js';
import { IdempotencyKey, LeaseToken } from './requests.js';
import { Problem } from './resources.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const COMPONENT_PREFIX = '#/components/schemas/';

const requiredNames = (schema: JsonObject): string[] =>
  Array.isArray(schema['required']) ? schema['required'].filter((name): name is string => typeof name === 'string') : [];

/** The one string a required property of `schema` may hold, if it is held to exactly one. */
function singleStringValue(schema: JsonObject, propertyName: string): string | undefined {
  const properties = schema['properties'];
  const property = isObject(properties) ? properties[propertyName] : undefined;
  const values = isObject(property) ? property['enum'] : undefined;
  return requiredNames(schema).includes(propertyName) && Array.isArray(values) && values.length === 1 && typeof values[0] === 'string'
    ? values[0]
    : undefined;
}

/**
 * Converts a TypeBox (JSON Schema 2020-12 style) schema to an OpenAPI 3.0.3 Schema Object:
 * `anyOf [X, null]` becomes X with `nullable: true` (and null added to X's `enum`, if any), `const`
 * becomes a one-value `enum`, objects with a `title` become named components referenced with `$ref`,
 * and a union of such components told apart by one member's value becomes a `oneOf` with a
 * `discriminator`.
 */
class SchemaConverter {
  readonly components = new Map<string, JsonObject>();

  convert(schema: unknown, asComponent = true): Json {
    if (!isObject(schema)) return schema as Json;
    const title = typeof schema['title'] === 'string' ? schema['title'] : undefined;
    if (asComponent && title !== undefined && (schema['type'] === 'object' || Array.isArray(schema['anyOf']))) {
      if (!this.components.has(title)) {
        this.components.set(title, {}); // reserve first: guards against recursion
        this.components.set(title, this.convert(schema, false) as JsonObject);
      }
      return { $ref: `${COMPONENT_PREFIX}${title}` };
    }
    const anyOfValue = schema['anyOf'];
    if (Array.isArray(anyOfValue)) {
      const anyOf: readonly unknown[] = anyOfValue;
      const nonNull = anyOf.filter((member) => !(isObject(member) && member['type'] === 'null'));
      if (nonNull.length === 1 && nonNull.length < anyOf.length) {
        // Inline, never a $ref: OpenAPI 3.0.3 has no nullable reference (`nullable` only widens a
        // `type` beside it, and validators reject it without one).
        const inner = this.convert(nonNull[0], false) as JsonObject;
        const { title: _title, ...rest } = this.copyAnnotations(schema);
        // `nullable` does not widen `enum` (OpenAPI 3.0.3 clarification; Ajv agrees): a nullable
        // enum must list null itself, or validators reject the null the schema means to allow.
        const values = inner['enum'];
        if (Array.isArray(values) && !values.includes(null)) return { ...inner, enum: [...values, null], nullable: true, ...rest };
        return { ...inner, nullable: true, ...rest };
      }
      const members = anyOf.map((member) => this.convert(member));
      const discriminator = this.discriminatorOf(members);
      // Members told apart by one member's value are exclusive: oneOf says so, and the
      // discriminator lets generated clients pick the variant without trying each.
      if (discriminator !== undefined) return { ...this.copyAnnotations(schema), oneOf: members, discriminator };
      return { ...this.copyAnnotations(schema), anyOf: members };
    }
    const result: JsonObject = {};
    for (const [key, value] of Object.entries(schema)) {
      switch (key) {
        case '$schema':
        case '$id':
          break;
        case 'const':
          result['enum'] = [value as Json];
          break;
        case 'properties':
          result[key] = Object.fromEntries(
            Object.entries(value as Record<string, unknown>).map(([name, member]) => [name, this.convert(member)]),
          );
          break;
        case 'items':
          result[key] = this.convert(value);
          break;
        default:
          result[key] = value as Json;
      }
    }
    // TypeBox enums carry no `type`; OpenAPI 3.0 tools need one (and `nullable` requires it).
    if (result['type'] === undefined && Array.isArray(result['enum'])) {
      const values = result['enum'];
      if (values.every((value) => typeof value === 'string')) result['type'] = 'string';
      else if (values.every((value) => Number.isInteger(value))) result['type'] = 'integer';
    }
    return result;
  }

  /**
   * The Discriminator Object of a union whose members are all components (3.0.3 maps values to
   * `$ref`s only) requiring one property that holds a single string, a different one in each.
   */
  private discriminatorOf(members: readonly Json[]): JsonObject | undefined {
    const components = members.map((member) =>
      isObject(member) && typeof member['$ref'] === 'string' ? { ref: member['$ref'], schema: this.components.get(member['$ref'].slice(COMPONENT_PREFIX.length)) } : undefined);
    const [first] = components;
    if (first?.schema === undefined) return undefined;
    for (const propertyName of requiredNames(first.schema)) {
      const mapping = new Map<string, string>();
      for (const component of components) {
        const value = component?.schema === undefined ? undefined : singleStringValue(component.schema, propertyName);
        if (value === undefined || component === undefined || mapping.has(value)) break;
        mapping.set(value, component.ref);
      }
      if (mapping.size === members.length) return { propertyName, mapping: Object.fromEntries(mapping) };
    }
    return undefined;
  }

  private copyAnnotations(schema: Record<string, unknown>): JsonObject {
    const annotations: JsonObject = {};
    for (const key of ['title', 'description', 'deprecated'] as const) {
      const value = schema[key];
      if (value !== undefined) annotations[key] = value as Json;
    }
    return annotations;
  }
}

const STATUS_RESPONSES: readonly { status: number; name: string; description: string; headers?: string[] }[] = [
  { status: 400, name: 'BadRequest', description: 'The request is malformed: its JSON, parameters or headers.' },
  { status: 401, name: 'Unauthorized', description: 'A missing, invalid or revoked credential, or an inactive sponsor, organisation or resource.', headers: ['WWW-Authenticate'] },
  { status: 403, name: 'Forbidden', description: 'A scope or assignment denial.' },
  { status: 404, name: 'NotFound', description: 'No such path, or no such task, request or Incoming item for the caller.' },
  { status: 405, name: 'MethodNotAllowed', description: 'The path does not support the method.', headers: ['Allow'] },
  { status: 409, name: 'Conflict', description: 'A business conflict.' },
  { status: 412, name: 'PreconditionFailed', description: "A malformed or stale task ETag or Incoming revision (If-Match, or an evaluation's body revision); the ETag header has the target's current ETag.", headers: ['ETag'] },
  { status: 413, name: 'PayloadTooLarge', description: 'A body, or a declared Content-Length, over 131072 bytes (on any operation).' },
  {
    status: 415, name: 'UnsupportedMediaType',
    description: 'A body that is not application/json or application/*+json (charset utf-8 only), or has a Content-Encoding other than identity or a Transfer-Encoding other than chunked.',
    headers: ['Accept-Encoding'],
  },
  { status: 422, name: 'UnprocessableEntity', description: 'Valid JSON that breaks a field or domain rule, or a missing or malformed Idempotency-Key. The spec also lists validation_failed under 422; this service answers every validation_failed with 400.' },
  { status: 428, name: 'PreconditionRequired', description: 'If-Match is missing.' },
  { status: 429, name: 'TooManyRequests', description: 'The rate limit is exceeded.', headers: ['Retry-After'] },
  { status: 500, name: 'InternalError', description: 'A sanitised failure carrying only a traceId.' },
  { status: 503, name: 'ServiceUnavailable', description: "A linked source could not be read (a claim), or the service cannot take the request now.", headers: ['Retry-After'] },
];

const HEADERS: Record<string, JsonObject> = {
  'X-Trace-Id': { description: 'Trace id of this request (32 lowercase hex characters).', schema: { type: 'string', pattern: '^[0-9a-f]{32}$' } },
  RateLimit: { description: 'Remaining requests and seconds to the end of the window as the answer is sent (a full window once it has ended), e.g. "default";r=119;t=60. On answers to authenticated requests, errors included; not on a 401, nor on answers given before authentication (an unknown path or method, a body over the limit).', schema: { type: 'string' } },
  'RateLimit-Policy': { description: 'The limit policy, "default";q=120;w=60 at the default limit (q is the limit the service runs with).', schema: { type: 'string' } },
  'WWW-Authenticate': { description: 'Always Bearer.', schema: { type: 'string', enum: ['Bearer'] } },
  Allow: { description: 'The methods the path supports.', schema: { type: 'string' } },
  'Accept-Encoding': { description: 'On a 415 for a Content-Encoding: identity, the only content coding request bodies may have.', schema: { type: 'string', enum: ['identity'] } },
  'Retry-After': {
    description: 'Whole seconds to wait, at least 1. 429: to the end of the rate-limit window. 503 temporarily_unavailable: 1 (the database was busy or full, its storage stopped taking writes or its file is no longer at its path, or the service is shutting down). 503 source_unavailable: how long the failure keeps the task out of GET /tasks/available (15 by default).',
    schema: { type: 'integer', minimum: 1 },
  },
  ETag: { description: "On task reads and writes the quoted task ETag (equal to the etag field); on Incoming actions the quoted new revision. On a 412, the target's current one: the task's (after a stale evaluation revision it is unchanged, and the item's revision must be read again), or for an Incoming action the item's.", schema: { type: 'string' } },
  Location: { description: 'Path of the created assistance stage.', schema: { type: 'string' } },
  Warning: { description: '299 warning for deprecated input.', schema: { type: 'string' } },
  'Idempotent-Replayed': { description: 'true when the response is a stored receipt.', schema: { type: 'string', enum: ['true'] } },
  'Cache-Control': {
    description: 'no-store: no cache keeps the answer (lists, identities, writes and errors are per client and have no validator).',
    schema: { type: 'string', enum: [NOT_STORED] },
  },
  // The same header on the task read, with another value: a component of its own, so the
  // document says which answer carries which.
  'Cache-Control-Revalidated': {
    description: "private, no-cache: the caller's own HTTP cache may keep the task, one copy per credential (Vary), and must revalidate it with If-None-Match before each use.",
    schema: { type: 'string', enum: [REVALIDATED_PER_CLIENT['cache-control']] },
  },
  Vary: {
    description: 'Authorization: the same ETag can come with another body for another credential (assistance content needs human-requests:read).',
    schema: { type: 'string', enum: [REVALIDATED_PER_CLIENT.vary] },
  },
};

/** Header name -> its component; a name given as `Name:Component` takes that component instead. */
function headerRefs(names: readonly string[]): JsonObject {
  return Object.fromEntries(names.map((entry) => {
    const [name, component = name] = entry.split(':') as [string, string?];
    return [name, { $ref: `#/components/headers/${component}` }];
  }));
}

/** A schema with no named parts (a header's, a path parameter's) as OpenAPI shows it. */
const plainSchema = (schema: TSchema): Json => new SchemaConverter().convert(schema, false);

const IDEMPOTENCY_RULES = 'A successful answer is kept 24 hours per organisation, client and key: the same request again (members in any order) ' +
  'gets it back with Idempotent-Replayed: true, even with a stale If-Match (a present, well-formed one is still needed); ' +
  'the same key with another operation or body is 409 idempotency_conflict. Missing where required, or malformed, is 422 idempotency_key_required.';

const PARAMETERS: Record<string, JsonObject> = {
  TaskId: { name: 'id', in: 'path', required: true, description: 'The task id (positive int32).', schema: plainSchema(Id) },
  StageId: {
    name: 'id', in: 'path', required: true, schema: plainSchema(Id),
    description: "The assistance stage id (positive int32): a human request's id and Location, not its incomingId.",
  },
  IncomingId: {
    name: 'id', in: 'path', required: true, schema: plainSchema(Id),
    description: "The Incoming item id (positive int32): a human request's incomingId, not its stage id.",
  },
  IfMatchTask: { name: 'If-Match', in: 'header', required: true, description: 'The exact quoted task ETag "task-{id}-plan-{workspaceVersion}". Missing gives 428; malformed or stale gives 412.', schema: { type: 'string' } },
  IfMatchIncoming: { name: 'If-Match', in: 'header', required: true, description: 'The quoted Incoming revision (its etag). Missing gives 428; malformed or stale gives 412.', schema: { type: 'string' } },
  IdempotencyKeyRequired: { name: 'Idempotency-Key', in: 'header', required: true, description: `Required. ${IDEMPOTENCY_RULES}`, schema: plainSchema(IdempotencyKey) },
  IdempotencyKeyOptional: { name: 'Idempotency-Key', in: 'header', required: false, description: `Optional, recommended. ${IDEMPOTENCY_RULES}`, schema: plainSchema(IdempotencyKey) },
  TaskClaim: {
    name: 'X-Task-Claim', in: 'header', required: false,
    description: 'The live lease token. While a live lease exists it is required, and a missing or other token gives 409 task_claimed; ' +
      'with no live lease, any token sent gives 409 claim_expired. Malformed or all-zero gives 400.',
    schema: plainSchema(LeaseToken),
  },
  IfNoneMatch: {
    name: 'If-None-Match', in: 'header', required: false,
    description: 'The task ETag last read, or a comma-separated list, compared weakly (W/"..." matches; * matches any task). A match gives 304 with the ETag and no body. The ETag moves with every write in the organisation, so a 304 says nothing was written there, not that figures moving with the clock alone (remainingMinutes), or source bookkeeping a refresh updates without recording a change (isAvailable, lastSuccessUtc), are the same.',
    schema: { type: 'string' },
  },
};

/**
 * The error codes an operation can answer, by status: what its table row implies (credentials,
 * scope, target, body, If-Match, retry key, lease header) and its business rules. Unknown paths
 * and methods (404 route_not_found, 405) are answered for the path, before any operation.
 */
function operationErrorCodes(operation: OperationSpec): Record<string, ErrorCode[]> {
  const codes = new Set<ErrorCode>(['validation_failed', 'request_too_large', 'internal_error', 'temporarily_unavailable']);
  if (operation.caller !== 'anonymous') codes.add('authentication_failed').add('rate_limited');
  if (operation.caller === 'resource-client' || operation.scope !== null) codes.add('permission_denied');
  if (operation.target === 'task') codes.add('task_not_found').add('task_not_owned');
  if (operation.target === 'assistance-stage') codes.add('request_not_found').add('task_not_owned');
  if (operation.target === 'incoming') codes.add('incoming_not_found');
  if (operation.body !== null) codes.add('unsupported_media_type');
  if (operation.ifMatch !== 'none') codes.add('precondition_required').add('stale_update');
  if (operation.idempotencyKey !== 'none') codes.add('idempotency_conflict').add('idempotency_key_required');
  if (operation.claimHeader) codes.add('task_claimed').add('claim_expired');
  for (const code of BUSINESS_ERRORS[operation.operationId]) codes.add(code);
  const byStatus: Record<string, ErrorCode[]> = {};
  for (const code of codes) (byStatus[String(ERROR_CATALOGUE[code].status)] ??= []).push(code);
  return Object.fromEntries(Object.entries(byStatus).sort(([a], [b]) => Number(a) - Number(b)).map(([status, list]) => [status, list.sort()]));
}

function operationObject(operation: OperationSpec, converter: SchemaConverter): JsonObject {
  const parameters: Json[] = [];
  const ref = (name: string) => ({ $ref: `#/components/parameters/${name}` });
  if (operation.target === 'task') parameters.push(ref('TaskId'));
  if (operation.target === 'assistance-stage') parameters.push(ref('StageId'));
  if (operation.target === 'incoming') parameters.push(ref('IncomingId'));
  for (const query of operation.query) {
    parameters.push({
      name: query.name, in: 'query', required: false, schema: { type: 'boolean' },
      description: `${query.description} Only true or false; an unknown or repeated query parameter is 400.`,
    });
  }
  if (operation.ifMatch === 'task-etag') parameters.push(ref('IfMatchTask'));
  if (operation.ifMatch === 'incoming-revision') parameters.push(ref('IfMatchIncoming'));
  if (operation.idempotencyKey === 'required') parameters.push(ref('IdempotencyKeyRequired'));
  if (operation.idempotencyKey === 'optional') parameters.push(ref('IdempotencyKeyOptional'));
  if (operation.claimHeader) parameters.push(ref('TaskClaim'));
  if (operation.operationId === 'getTask') parameters.push(ref('IfNoneMatch'));

  const authenticated = operation.caller !== 'anonymous';
  const caching = operation.operationId === 'getTask' ? ['Cache-Control:Cache-Control-Revalidated', 'Vary'] : ['Cache-Control'];
  const successHeaders = [...operation.success.headers, ...caching, 'X-Trace-Id', ...(authenticated ? ['RateLimit', 'RateLimit-Policy'] : [])];
  if (operation.idempotencyKey !== 'none') successHeaders.push('Idempotent-Replayed');
  const success: JsonObject = { description: operation.success.description, headers: headerRefs(successHeaders) };
  if (operation.success.schema !== null) {
    success['content'] = { 'application/json': { schema: converter.convert(operation.success.schema) } };
  }
  const responses: JsonObject = { [String(operation.success.status)]: success };
  if (operation.operationId === 'getTask') {
    responses['304'] = { description: 'Not modified: If-None-Match matched the current ETag.', headers: headerRefs(['ETag', ...caching, 'X-Trace-Id', 'RateLimit', 'RateLimit-Policy']) };
  }
  for (const { status, name } of STATUS_RESPONSES) responses[String(status)] = { $ref: `#/components/responses/${name}` };

  const errorCodes = operationErrorCodes(operation);
  const result: JsonObject = {
    operationId: operation.operationId,
    summary: operation.summary,
    description: `${describeRules(operation)} Errors it answers: ${Object.entries(errorCodes).map(([status, list]) => `${status} ${list.join(', ')}`).join('; ')}.`,
    parameters,
    responses,
    security: authenticated ? [{ bearer: [] }] : [],
    // The same, machine-readable: an operation lists every status of the spec's Errors table
    // (the responses above), but answers only these codes.
    'x-error-codes': errorCodes,
  };
  if (operation.body !== null) {
    result['requestBody'] = {
      description: 'JSON in UTF-8, at most 131072 bytes (413 beyond): application/json or any application/*+json type, with no parameter but charset=utf-8, and no content or transfer coding but chunked.',
      required: operation.body.required,
      content: {
        'application/json': { schema: converter.convert(operation.body.schema) },
      },
    };
  }
  return result;
}

function describeRules(operation: OperationSpec): string {
  const lines: string[] = [];
  if (operation.caller === 'anonymous') lines.push('Anonymous.');
  else if (operation.scope === null) lines.push('Needs authentication only (identity-only clients allowed).');
  else lines.push(`Scope: ${operation.scope}. Identity-only clients get 403.`);
  for (const { member, scope } of operation.memberScopes ?? []) {
    lines.push(`Sending ${member} also needs scope ${scope} (403 otherwise, checked with the business rules).`);
  }
  if (operation.idempotencyKey !== 'none') lines.push(`Idempotency-Key: ${operation.idempotencyKey}.`);
  if (operation.body !== null && !operation.body.required) lines.push('The body is optional: none, empty or {}.');
  return lines.join(' ');
}

let cached: string | undefined;

/** The OpenAPI 3.0.3 document of the v1 interface, generated from the operation table. */
export function openApiDocument(): JsonObject {
  const converter = new SchemaConverter();
  const paths: JsonObject = {};
  for (const operation of OPERATIONS) {
    const item = (paths[operation.path] ??= {}) as JsonObject;
    item[operation.method.toLowerCase()] = operationObject(operation, converter);
  }
  const problemSchema = converter.convert(Problem as TSchema);
  const responses: JsonObject = {};
  for (const { status, name, description, headers = [] } of STATUS_RESPONSES) {
    const codes = Object.entries(ERROR_CATALOGUE).filter(([, entry]) => entry.status === status).map(([code]) => code);
    responses[name] = {
      description: `${description} Codes: ${codes.join(', ')} (each operation's x-error-codes say which it answers).`,
      // Authenticated answers carry the RateLimit fields, errors included; a 401 has no client,
      // and 405 and 413 are answered before authentication.
      headers: headerRefs([...headers, 'Cache-Control', 'X-Trace-Id', ...([401, 405, 413].includes(status) ? [] : ['RateLimit', 'RateLimit-Policy'])]),
      content: { 'application/problem+json': { schema: problemSchema } },
    };
  }
  return {
    openapi: '3.0.3',
    info: {
      title: 'Assigned-Worker Task API',
      version: '1.0',
      description:
        'The interface through which an automated worker sees the tasks assigned to it, leases them, ' +
        'updates planning fields under optimistic concurrency, logs notes and effort, asks humans for help ' +
        'and handles Incoming work items. Planning times are Europe/London wall time; fields ending in Utc are UTC instants.',
    },
    servers: [{ url: BASE_PATH }],
    paths,
    components: {
      // Code-point order, so the document is the same bytes whatever the host's locale.
      schemas: Object.fromEntries([...converter.components].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))),
      responses,
      parameters: PARAMETERS,
      headers: HEADERS,
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'The API client token.' } },
    },
    security: [{ bearer: [] }],
  };
}

/** The document as served: generated once per process. */
export function openApiText(): string {
  cached ??= JSON.stringify(openApiDocument());
  return cached;
}
