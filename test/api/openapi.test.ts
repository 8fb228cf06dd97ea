import t from 'tap';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv } from 'ajv';
import { harness } from '../helpers/service.js';
import { baseFixture, TOKENS } from '../helpers/fixture.js';

/** GET /openapi.json: anonymous, valid OpenAPI 3.0.3, and faithful to the spec's tables. */

type Json = any; // the document is walked generically

async function servedDocument(): Promise<{ doc: Json; text: string }> {
  const h = harness();
  const response = await h.call('GET', '/api/v1/openapi.json', { token: null });
  if (response.status !== 200 || response.text === undefined) throw new Error(`openapi.json answered ${response.status}`);
  return { doc: JSON.parse(response.text), text: response.text };
}

/** The spec's endpoint table. */
interface Row {
  method: string;
  path: string;
  success: number;
  idempotencyKey: 'required' | 'optional' | 'none';
  /** The request body's component, or null for no body; `optional` for EmptyRequest operations. */
  body: { component: string; required: boolean } | null;
  ifMatch: boolean;
  taskClaim: boolean;
}

const taskWrite = (method: string, path: string, success: number, idempotencyKey: 'required' | 'optional', component: string, extra: Partial<Row> = {}): Row => ({
  method, path, success, idempotencyKey, body: { component, required: true }, ifMatch: true, taskClaim: true, ...extra,
});
const incomingAction = (action: string, component: string, required = true): Row => ({
  method: 'post', path: `/incoming/{id}/${action}`, success: 204, idempotencyKey: 'required',
  body: { component, required }, ifMatch: true, taskClaim: false,
});
const read = (path: string): Row => ({ method: 'get', path, success: 200, idempotencyKey: 'none', body: null, ifMatch: false, taskClaim: false });

const ENDPOINTS: Row[] = [
  read('/identity'),
  read('/tasks/available'),
  read('/tasks/waiting'),
  read('/tasks/{id}'),
  taskWrite('patch', '/tasks/{id}', 204, 'optional', 'TaskPatch'),
  taskWrite('put', '/tasks/{id}/actual-effort', 204, 'optional', 'ActualEffort'),
  taskWrite('post', '/tasks/{id}/notes', 204, 'optional', 'NoteCreate'),
  // Claim, renew and release carry no X-Task-Claim: acquisition needs no lease, the others send the token in the body.
  taskWrite('post', '/tasks/{id}/claim', 200, 'required', 'EmptyRequest', { body: { component: 'EmptyRequest', required: false }, taskClaim: false }),
  taskWrite('post', '/tasks/{id}/claim/renew', 200, 'required', 'ClaimRequest', { taskClaim: false }),
  taskWrite('post', '/tasks/{id}/claim/release', 200, 'required', 'ClaimRequest', { taskClaim: false }),
  taskWrite('post', '/tasks/{id}/human-requests', 201, 'optional', 'AssistanceCreate'),
  read('/human-requests/{id}'),
  taskWrite('post', '/tasks/{id}/external-evaluation', 204, 'required', 'ExternalEvaluation'),
  read('/incoming'),
  incomingAction('start', 'EmptyRequest', false),
  incomingAction('plan', 'IncomingPlan'),
  incomingAction('reassign', 'IncomingReassign'),
  incomingAction('complete', 'IncomingComplete'),
  read('/openapi.json'),
];

const SUCCESS_SCHEMAS: Record<string, string | { array: string } | 'object'> = {
  'get /identity': 'Identity',
  'get /tasks/available': { array: 'Task' },
  'get /tasks/waiting': { array: 'Task' },
  'get /tasks/{id}': 'Task',
  'post /tasks/{id}/claim': 'Claim',
  'post /tasks/{id}/claim/renew': 'Claim',
  'post /tasks/{id}/claim/release': 'ClaimRelease',
  'post /tasks/{id}/human-requests': 'CreatedRequest',
  'get /human-requests/{id}': 'HumanRequest',
  'get /incoming': { array: 'Incoming' },
  'get /openapi.json': 'object',
};

/** The spec's Errors table. */
const ERROR_STATUSES = ['400', '401', '403', '404', '405', '409', '412', '413', '415', '422', '428', '429', '500', '503'];

function resolve(doc: Json, value: Json): Json {
  if (value !== null && typeof value === 'object' && typeof value.$ref === 'string') {
    const target = value.$ref.replace(/^#\//, '').split('/').reduce((node: Json, part: string) => node?.[part.replaceAll('~1', '/').replaceAll('~0', '~')], doc);
    return resolve(doc, target);
  }
  return value;
}

function parameter(doc: Json, operation: Json, name: string, location: string): Json {
  return (operation.parameters ?? []).map((p: Json) => resolve(doc, p)).find((p: Json) => p.name === name && p.in === location);
}

/** Every schema object in the document, with its JSON pointer. */
function* schemas(node: Json, pointer = ''): Generator<[string, Json]> {
  if (node === null || typeof node !== 'object') return;
  if (Array.isArray(node)) {
    for (const [index, member] of node.entries()) yield* schemas(member, `${pointer}/${index}`);
    return;
  }
  yield [pointer, node];
  for (const [key, member] of Object.entries(node)) yield* schemas(member, `${pointer}/${key}`);
}

t.test('GET /openapi.json: anonymous, 200, application/json', async (t) => {
  const h = harness();
  const anonymous = await h.call('GET', '/api/v1/openapi.json', { token: null });
  t.equal(anonymous.status, 200);
  t.equal(anonymous.headers['content-type'], 'application/json');
  t.equal(anonymous.json.openapi, '3.0.3');
  t.equal(anonymous.headers['www-authenticate'], undefined);
  t.equal(anonymous.headers['ratelimit'], undefined, 'no per-client rate-limit fields without a client');
  const badToken = await h.call('GET', '/api/v1/openapi.json', { token: 'not-a-real-token' });
  t.equal(badToken.status, 200, 'credentials are not looked at');
  const withToken = await h.call('GET', '/api/v1/openapi.json', { token: TOKENS.ada });
  t.equal(withToken.text, anonymous.text);
});

t.test('GET /openapi.json: the document is valid OpenAPI 3.0.3 by an independent validator', async (t) => {
  const { doc } = await servedDocument();
  const validator = new Validator();
  const result = await validator.validate(doc);
  t.equal(validator.version, '3.0');
  t.strictSame(result.errors ?? [], []);
  t.equal(result.valid, true);
});

t.test('GET /openapi.json: info.version is 1.0 and the server is /api/v1', async (t) => {
  const { doc } = await servedDocument();
  t.equal(doc.openapi, '3.0.3');
  t.equal(doc.info.version, '1.0');
  t.type(doc.info.title, 'string');
  t.strictSame(doc.servers, [{ url: '/api/v1' }]);
});

t.test('GET /openapi.json: every path and method of the endpoint table is present, and nothing else', async (t) => {
  const { doc } = await servedDocument();
  const documented = Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.keys(item as object).filter((key) => ['get', 'put', 'post', 'patch', 'delete', 'options', 'head', 'trace'].includes(key)).map((method) => `${method} ${path}`));
  t.strictSame(documented.sort(), ENDPOINTS.map((row) => `${row.method} ${row.path}`).sort());
  const operationIds = documented.map((key) => { const [method, path] = key.split(' '); return doc.paths[path!][method!].operationId; });
  t.equal(new Set(operationIds).size, operationIds.length, 'operationIds are unique');
});

t.test('GET /openapi.json: the path id is a required integer with minimum 1 wherever the path has {id}', async (t) => {
  const { doc } = await servedDocument();
  for (const row of ENDPOINTS) {
    const id = parameter(doc, doc.paths[row.path][row.method], 'id', 'path');
    if (!row.path.includes('{id}')) {
      t.equal(id, undefined, `${row.method} ${row.path} has no id`);
      continue;
    }
    t.ok(id, `${row.method} ${row.path} declares id`);
    t.equal(id.required, true);
    t.equal(id.schema.type, 'integer');
    t.equal(id.schema.minimum, 1);
  }
});

t.test('GET /openapi.json: If-Match is required on task writes and Incoming actions and absent elsewhere', async (t) => {
  const { doc } = await servedDocument();
  for (const row of ENDPOINTS) {
    const ifMatch = parameter(doc, doc.paths[row.path][row.method], 'If-Match', 'header');
    if (row.ifMatch) {
      t.ok(ifMatch, `${row.method} ${row.path} declares If-Match`);
      t.equal(ifMatch?.required, true, `${row.method} ${row.path}: If-Match required`);
      t.equal(ifMatch?.schema?.type, 'string');
    } else {
      t.equal(ifMatch, undefined, `${row.method} ${row.path} has no If-Match`);
    }
  }
});

t.test('GET /openapi.json: Idempotency-Key is required or optional as the endpoint table says', async (t) => {
  const { doc } = await servedDocument();
  for (const row of ENDPOINTS) {
    const key = parameter(doc, doc.paths[row.path][row.method], 'Idempotency-Key', 'header');
    const label = `${row.method} ${row.path}`;
    if (row.idempotencyKey === 'none') {
      t.equal(key, undefined, `${label}: n/a`);
      continue;
    }
    t.ok(key, `${label} declares Idempotency-Key`);
    t.equal(key?.required === true, row.idempotencyKey === 'required', `${label}: ${row.idempotencyKey}`);
    t.match(key?.schema, { type: 'string', minLength: 1, maxLength: 100, pattern: '^[a-zA-Z0-9._:-]+$' }, `${label}: bounds and pattern`);
  }
});

t.test('GET /openapi.json: X-Task-Claim is an optional uuid header on task writes other than claim, renew and release', async (t) => {
  const { doc } = await servedDocument();
  for (const row of ENDPOINTS) {
    const claim = parameter(doc, doc.paths[row.path][row.method], 'X-Task-Claim', 'header');
    if (row.taskClaim) {
      t.ok(claim, `${row.method} ${row.path} declares X-Task-Claim`);
      t.equal(claim?.required, false, 'only required while a live lease exists');
      t.match(claim?.schema, { type: 'string', format: 'uuid' });
      t.notOk(new RegExp(claim?.schema.pattern).test('00000000-0000-0000-0000-000000000000'), 'the all-zero uuid is outside the pattern');
      t.ok(new RegExp(claim?.schema.pattern).test('6f1c8a52-3f7e-4a8e-9d1e-2b7f0c4d9a10'));
    } else {
      t.equal(claim, undefined, `${row.method} ${row.path} has no X-Task-Claim`);
    }
  }
});

t.test('GET /openapi.json: /incoming has the optional boolean query parameter includeAccepted', async (t) => {
  const { doc } = await servedDocument();
  const includeAccepted = parameter(doc, doc.paths['/incoming'].get, 'includeAccepted', 'query');
  t.ok(includeAccepted);
  t.equal(includeAccepted.required, false);
  t.equal(includeAccepted.schema.type, 'boolean');
  for (const row of ENDPOINTS.filter((r) => r.path !== '/incoming')) {
    const query = (doc.paths[row.path][row.method].parameters ?? []).map((p: Json) => resolve(doc, p)).filter((p: Json) => p.in === 'query');
    t.strictSame(query, [], `${row.method} ${row.path} has no query parameters`);
  }
});

t.test('GET /openapi.json: body-taking operations document their request body and its media types, the others none', async (t) => {
  const { doc } = await servedDocument();
  for (const row of ENDPOINTS) {
    const operation = doc.paths[row.path][row.method];
    const label = `${row.method} ${row.path}`;
    if (row.body === null) {
      t.equal(operation.requestBody, undefined, `${label}: no body`);
      continue;
    }
    t.ok(operation.requestBody, `${label} has a requestBody`);
    t.equal(operation.requestBody.required, row.body.required, `${label}: body required is ${row.body.required}`);
    t.strictSame(operation.requestBody.content['application/json'].schema, { $ref: `#/components/schemas/${row.body.component}` }, `${label}: ${row.body.component}`);
    t.match(operation.requestBody.description, /application\/\*\+json/, `${label}: says application/*+json types are taken too (spec, Common rules)`);
    t.equal(doc.components.schemas[row.body.component].additionalProperties === false || row.body.component === 'ExternalEvaluation', true, `${row.body.component} is closed`);
  }
  for (const { $ref } of doc.components.schemas.ExternalEvaluation.oneOf) {
    const variant = doc.components.schemas[$ref.replace('#/components/schemas/', '')];
    t.equal(variant.additionalProperties, false, 'every ExternalEvaluation variant is closed');
    t.ok(variant.required.includes('decision'));
  }
});

t.test('GET /openapi.json: TaskPatch.status states the transitions and the codes that refuse them, and If-None-Match how it compares', async (t) => {
  const { doc } = await servedDocument();
  const status = doc.components.schemas.TaskPatch.properties.status;
  const codes = doc.paths['/tasks/{id}'].patch['x-error-codes']['409'];
  for (const code of ['task_blocked', 'dependency_conflict', 'task_completed']) {
    t.match(status.description, `409 ${code}`, `status names ${code}`);
    t.ok(codes.includes(code), `${code} is among PATCH's 409 codes`);
  }
  t.match(status.description, /InProgress may go back to Ready/);
  const ifNoneMatch = doc.components.parameters.IfNoneMatch.description;
  t.match(ifNoneMatch, /comma-separated list, compared weakly \(W\/"\.\.\." matches; \* matches any task\)/);
  t.match(ifNoneMatch, /304 with the ETag and no body/);
});

t.test('GET /openapi.json: ExternalEvaluation is a oneOf of its four variants, told apart by a discriminator on decision', async (t) => {
  const { doc } = await servedDocument();
  const evaluation = doc.components.schemas.ExternalEvaluation;
  const variants: Record<string, string[]> = {
    acknowledge: ['decision', 'eventId'],
    resolve: ['decision', 'incomingId', 'revision'],
    keepwaiting: ['decision', 'incomingId', 'revision'],
    followup: ['decision', 'incomingId', 'revision', 'message'],
  };
  t.equal(evaluation.anyOf, undefined, 'the variants exclude each other, so it is no anyOf');
  t.equal(evaluation.discriminator.propertyName, 'decision');
  t.strictSame(Object.keys(evaluation.discriminator.mapping), Object.keys(variants), 'every decision of the spec is mapped');
  t.strictSame(evaluation.oneOf.map((member: Json) => member.$ref), Object.values(evaluation.discriminator.mapping), 'each member is the one its value maps to');
  for (const [decision, members] of Object.entries(variants)) {
    const variant = doc.components.schemas[evaluation.discriminator.mapping[decision].replace('#/components/schemas/', '')];
    t.strictSame(variant.properties.decision.enum, [decision], `${decision}: its variant holds decision to "${decision}"`);
    t.strictSame(Object.keys(variant.properties), members, `${decision}: the members of the spec's table, nothing else`);
    t.strictSame(variant.required, members, `${decision}: all required`);
    t.match(variant.description, /\w/, `${decision}: says what the decision does`);
  }
});

t.test('GET /openapi.json: each operation documents the success status of the endpoint table with its schema and headers', async (t) => {
  const { doc } = await servedDocument();
  for (const row of ENDPOINTS) {
    const key = `${row.method} ${row.path}`;
    const responses = doc.paths[row.path][row.method].responses;
    const successes = Object.keys(responses).filter((status) => Number(status) < 400);
    const expected = row.path === '/tasks/{id}' && row.method === 'get' ? ['200', '304'] : [String(row.success)];
    t.strictSame(successes.sort(), expected, `${key}: ${expected.join(', ')}`);
    const success = resolve(doc, responses[String(row.success)]);
    const schema = SUCCESS_SCHEMAS[key];
    if (schema === undefined) {
      t.equal(success.content, undefined, `${key}: ${row.success} has no body`);
    } else if (schema === 'object') {
      t.equal(success.content['application/json'].schema.type, 'object');
    } else if (typeof schema === 'string') {
      t.strictSame(success.content['application/json'].schema, { $ref: `#/components/schemas/${schema}` }, `${key}: ${schema}`);
    } else {
      t.strictSame(success.content['application/json'].schema, { type: 'array', items: { $ref: `#/components/schemas/${schema.array}` } }, `${key}: ${schema.array}[]`);
    }
  }
  t.ok(doc.paths['/tasks/{id}'].get.responses['200'].headers.ETag, 'GET /tasks/{id} 200 has ETag');
  t.ok(doc.paths['/tasks/{id}'].get.responses['304'].headers.ETag, 'GET /tasks/{id} 304 has ETag');
  t.equal(doc.paths['/tasks/{id}'].get.responses['304'].content, undefined, '304 has no body');
  t.ok(parameter(doc, doc.paths['/tasks/{id}'].get, 'If-None-Match', 'header'), 'GET /tasks/{id} takes If-None-Match');
  t.ok(doc.paths['/tasks/{id}/human-requests'].post.responses['201'].headers.Location, '201 has Location');
  t.ok(doc.paths['/tasks/{id}'].patch.responses['204'].headers.Warning, 'PATCH 204 may carry Warning');
});

t.test('GET /openapi.json: every operation lists every error status of the Errors table as problem+json Error', async (t) => {
  const { doc } = await servedDocument();
  for (const row of ENDPOINTS) {
    const responses = doc.paths[row.path][row.method].responses;
    const errors = Object.keys(responses).filter((status) => Number(status) >= 400);
    t.strictSame(errors.sort(), ERROR_STATUSES, `${row.method} ${row.path}`);
  }
  const headersOf = (status: string) => Object.keys(resolve(doc, doc.paths['/identity'].get.responses[status]).headers ?? {});
  for (const status of ERROR_STATUSES) {
    const response = resolve(doc, doc.paths['/identity'].get.responses[status]);
    t.strictSame(Object.keys(response.content), ['application/problem+json'], `${status} is problem+json`);
    t.strictSame(response.content['application/problem+json'].schema, { $ref: '#/components/schemas/Error' });
  }
  t.ok(headersOf('401').includes('WWW-Authenticate'), '401 has WWW-Authenticate');
  t.ok(headersOf('405').includes('Allow'), '405 has Allow');
  t.ok(headersOf('429').includes('Retry-After'), '429 has Retry-After');
  t.ok(headersOf('503').includes('Retry-After'), '503 has Retry-After');
  for (const status of ERROR_STATUSES.filter((status) => !['401', '405', '413'].includes(status))) {
    t.ok(headersOf(status).includes('RateLimit') && headersOf(status).includes('RateLimit-Policy'), `${status} may carry the RateLimit fields`);
  }
  t.notOk(headersOf('401').includes('RateLimit'), 'a 401 has no client to count against');
  for (const status of ['405', '413']) t.notOk(headersOf(status).includes('RateLimit'), `${status} is answered before authentication`);
  // Each description ends with every code the service answers with that status.
  for (const status of ERROR_STATUSES) {
    const { description } = resolve(doc, doc.paths['/identity'].get.responses[status]);
    const codes = /Codes: ([a-z_, ]+) \(each operation's x-error-codes say which it answers\)\.$/.exec(String(description))?.[1]?.split(', ');
    t.ok(codes?.length, `${status}: its codes`);
    if (status !== '400') t.notOk(codes?.includes('validation_failed'), `${status}: validation_failed is always a 400`);
  }
  const error = doc.components.schemas.Error;
  t.strictSame(error.required.sort(), ['code', 'status', 'title', 'traceId', 'type']);
  t.equal(error.additionalProperties, false);
  t.strictSame(error.properties.type.enum, ['about:blank']);
  t.match(error.properties.status, { type: 'integer', minimum: 400, maximum: 599 });
});

t.test('GET /openapi.json: PATCH says actualIntervals needs tasks:time, and AssistanceCreate states the contract 8 defaults', async (t) => {
  const { doc } = await servedDocument();
  t.match(doc.paths['/tasks/{id}'].patch.description, /actualIntervals also needs scope tasks:time/);
  t.match(doc.components.schemas.AssistanceCreate.properties, {
    priority: { default: 'normal' }, isBlocking: { default: true }, assistanceKind: { default: 'Question' }, publishExternally: { default: false },
  });
  t.match(doc.components.schemas.TaskPatch.properties.estimatedMinutes.description, /caller's assignment has its own estimate/,
    'a PATCHed estimate also sets the caller\'s own (README, How planning works)');
});

t.test('GET /openapi.json: the security scheme is http bearer, required everywhere but /openapi.json', async (t) => {
  const { doc } = await servedDocument();
  const schemes = doc.components.securitySchemes;
  t.strictSame(Object.keys(schemes), ['bearer']);
  t.match(schemes.bearer, { type: 'http', scheme: 'bearer' });
  t.strictSame(doc.security, [{ bearer: [] }]);
  for (const row of ENDPOINTS) {
    const security = doc.paths[row.path][row.method].security;
    t.strictSame(security, row.path === '/openapi.json' ? [] : [{ bearer: [] }], `${row.method} ${row.path}`);
  }
});

t.test('GET /openapi.json: no type arrays anywhere, and nullable: true for nullable fields', async (t) => {
  const { doc } = await servedDocument();
  const problems: string[] = [];
  for (const [pointer, node] of schemas(doc)) {
    if (Array.isArray(node.type)) problems.push(`${pointer}: type is an array`);
    if (node.type === 'null') problems.push(`${pointer}: type null`);
    if ('const' in node && !pointer.includes('/properties/const')) problems.push(`${pointer}: const`);
    if (node.nullable === true && node.type === undefined && node.allOf === undefined) problems.push(`${pointer}: nullable without type`);
    // nullable does not widen enum in 3.0.3: a nullable enum must list null itself.
    if (node.nullable === true && Array.isArray(node.enum) && !node.enum.includes(null)) problems.push(`${pointer}: nullable enum without null`);
    for (const combinator of ['anyOf', 'oneOf'] as const) {
      if (Array.isArray(node[combinator]) && node[combinator].some((member: Json) => member?.type === 'null')) problems.push(`${pointer}: null inside ${combinator}`);
    }
  }
  t.strictSame(problems, []);
  const schemasOf = doc.components.schemas;
  const nullable = (component: string, property: string) => schemasOf[component].properties[property].nullable === true;
  for (const property of ['description', 'startedAt', 'completedAt', 'earliestStart', 'releaseDate']) {
    t.ok(nullable('Task', property), `Task.${property} is nullable`);
  }
  for (const property of ['id', 'title', 'status', 'etag', 'project', 'notes']) {
    t.notOk(nullable('Task', property), `Task.${property} is not nullable`);
  }
  t.ok(nullable('Identity', 'resource'), 'Identity.resource');
  for (const property of ['targetDate', 'hardDeadline', 'deadlineReason']) t.ok(nullable('Project', property), `Project.${property}`);
  t.ok(nullable('Assignment', 'remainingMinutes'));
  t.ok(nullable('Assignment', 'estimatedMinutes'));
  for (const property of ['incomingId', 'details', 'response', 'completedUtc', 'priorityName', 'actualStartUtc', 'actualEffortMinutes', 'incomingRevision', 'respondedAtUtc']) {
    t.ok(nullable('HumanRequest', property), `HumanRequest.${property}`);
  }
  for (const property of ['incomingId', 'before', 'after', 'response', 'author', 'acknowledgedUtc']) t.ok(nullable('SourceChange', property), `SourceChange.${property}`);
  for (const property of ['assistanceStageId', 'response', 'respondedAtUtc']) t.ok(nullable('AwaitingEvaluation', property), `AwaitingEvaluation.${property}`);
  for (const property of ['details', 'suggestedStart', 'suggestionReason', 'plannedStart', 'response', 'actualStartUtc', 'actualEffortMinutes']) {
    t.ok(nullable('Incoming', property), `Incoming.${property}`);
  }
  t.ok(nullable('SourceContext', 'lastSuccessUtc'));
  t.ok(nullable('SourceFacts', 'description'));
  t.ok(nullable('SourceFacts', 'businessStatus'));
  t.ok(nullable('TaskPatch', 'description') && nullable('TaskPatch', 'startedAt'), 'TaskPatch clearable fields');
  // All response properties are required, nullable ones included.
  for (const name of ['Task', 'Project', 'HumanRequest', 'Incoming', 'SourceChange', 'Identity']) {
    t.strictSame([...schemasOf[name].required].sort(), Object.keys(schemasOf[name].properties).sort(), `${name}: every property required`);
  }
});

t.test('GET /openapi.json: a nullable enum accepts null under a standard validator', async (t) => {
  const { doc } = await servedDocument();
  const humanRequest = doc.components.schemas.HumanRequest;
  t.strictSame(humanRequest.properties.priorityName.enum, ['critical', 'high', 'normal', 'low', null]);
  const validate = new Ajv({ strict: false, validateFormats: false }).compile(humanRequest);
  const request = {
    stageId: 500, requestedForStageId: 1, incomingId: null, requestedByApiClientId: 100, requestedByStaffMemberId: 10,
    assignedHumanId: 11, assignedHumanName: 'H', requestedByName: 'R', originTitle: 'O', title: 'T', details: null,
    estimatedMinutes: 5, remainingMinutes: 5, status: 'Ready', isBlocking: true, isOutstandingBlocker: true, response: null,
    createdUtc: '2026-11-16T09:00:00.000Z', completedUtc: null, lifecycle: 'floating', priorityName: null, responseState: 'open',
    actualStartUtc: null, actualEffortMinutes: null, incomingRevision: null, respondedAtUtc: null, assistanceKind: 'Question',
  };
  t.ok(validate(request), `priorityName null is valid (${JSON.stringify(validate.errors)})`);
  t.ok(validate({ ...request, priorityName: 'low' }), 'a listed value is valid');
  t.notOk(validate({ ...request, priorityName: 'urgent' }), 'an unlisted value is not');
  t.notOk(validate({ ...request, status: null }), 'a non-nullable enum still refuses null');
});

t.test('GET /openapi.json: the document contains no tenant data', async (t) => {
  const { text } = await servedDocument();
  const fixture = baseFixture();
  const strings = new Set<string>();
  for (const row of [...fixture.organisations, ...fixture.staff, ...fixture.clients, ...fixture.projects, ...fixture.tasks]) {
    for (const key of ['name', 'title', 'token']) if (typeof row[key] === 'string') strings.add(row[key] as string);
  }
  for (const token of Object.values(TOKENS)) strings.add(token);
  // A fixture client is named after the spec's own word for a withdrawn credential.
  strings.delete('revoked');
  t.ok(strings.size > 30);
  const escape = (value: string) => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const found = [...strings].filter((value) => new RegExp(`(?<![A-Za-z0-9_-])${escape(value)}(?![A-Za-z0-9_-])`).test(text));
  t.strictSame(found, [], 'no fixture name, title or token');
  // The document does not depend on the database: a differently populated service serves the same bytes.
  const other = harness({ fixture: { ...baseFixture(), organisations: [{ id: 1, name: 'Zzyzx Holdings', isActive: true }, { id: 2, name: 'Globex', isActive: true }, { id: 3, name: 'Dormant', isActive: false }] } });
  const again = await other.call('GET', '/api/v1/openapi.json', { token: null });
  t.equal(again.text, text);
  t.notMatch(text, /Zzyzx/);
});

t.test('GET /openapi.json: the ids and tags an agent passes on say where they go, and a source change\'s facts are SourceFacts', async (t) => {
  const { doc } = await servedDocument();
  const schemas = doc.components.schemas;
  t.match(schemas.HumanRequest.properties.stageId.description, /\/human-requests\/\{id\}/);
  t.match(schemas.HumanRequest.properties.incomingId.description, /\/incoming\/\{id\}/);
  t.match(schemas.HumanRequest.properties.incomingRevision.description, /If-Match/);
  t.match(schemas.AwaitingEvaluation.properties.id.description, /incomingId to evaluate with/);
  t.match(schemas.CreatedRequest.properties.id.description, /assistance-stage id/);
  t.match(schemas.ClaimRelease.properties.releasedUtc.description, /not a future expiry/);
  t.match(schemas.Task.properties.etag.description, /If-Match/);
  // Inline: OpenAPI 3.0.3 has no nullable $ref (`nullable` needs a `type` beside it).
  for (const member of ['before', 'after']) {
    const { nullable, description: _description, ...facts } = schemas.SourceChange.properties[member];
    t.strictSame(facts, schemas.SourceFacts, `${member} is SourceFacts`);
    t.equal(nullable, true, `${member} is null for a reply`);
  }
  for (const name of ['IdempotencyKeyRequired', 'IdempotencyKeyOptional']) {
    t.match(doc.components.parameters[name].description, /24 hours.*Idempotent-Replayed.*409 idempotency_conflict.*422 idempotency_key_required/s, name);
  }
  t.match(doc.components.parameters.TaskClaim.description, /409 task_claimed.*409 claim_expired/s);
});

t.test('OPENAPI: every date-time member says which kind it is, in responses as in requests (date-time for UTC, local-date-time for London wall time)', async (t) => {
  const { doc } = await servedDocument();
  const unformatted: string[] = [];
  const walk = (node: Json, pointer: string): void => {
    if (node === null || typeof node !== 'object') return;
    if (node.type === 'string' && typeof node.pattern === 'string' && node.pattern.includes('T\\d{2}:\\d{2}') && node.format === undefined) {
      unformatted.push(pointer);
    }
    for (const [key, value] of Object.entries(node)) walk(value, `${pointer}/${key}`);
  };
  walk(doc.components.schemas, '/components/schemas');
  t.strictSame(unformatted, [], 'no date-time pattern without its format');
  const task = doc.components.schemas.Task.properties;
  for (const member of ['startedAt', 'completedAt', 'earliestStart', 'releaseDate']) t.equal(task[member].format, 'local-date-time', `Task.${member}`);
  t.equal(doc.components.schemas.ActualInterval.properties.start.format, 'local-date-time', 'ActualInterval.start');
  t.equal(doc.components.schemas.Incoming.properties.plannedStart.format, 'local-date-time', 'Incoming.plannedStart');
});

t.test('GET /openapi.json: each operation names the error codes it answers (x-error-codes, and in its description), all under statuses it documents', async (t) => {
  const { doc } = await servedDocument();
  const codesOf = (path: string, method: string): Record<string, string[]> => doc.paths[path][method]['x-error-codes'];
  t.strictSame(codesOf('/identity', 'get'), {
    400: ['validation_failed'], 401: ['authentication_failed'], 413: ['request_too_large'], 429: ['rate_limited'],
    500: ['internal_error'], 503: ['temporarily_unavailable'],
  }, 'identity: no scope, no target, no body, so no 403, 404, 409, 412, 415, 422 or 428');
  t.strictSame(Object.keys(codesOf('/openapi.json', 'get')), ['400', '413', '500', '503'], 'the anonymous document: no 401 or 429');
  t.strictSame(codesOf('/tasks/{id}/claim', 'post')['503'], ['source_unavailable', 'temporarily_unavailable'], 'a claim reads its sources');
  t.strictSame(codesOf('/tasks/{id}', 'patch')['503'], ['temporarily_unavailable'], 'a PATCH does not');
  t.strictSame(codesOf('/tasks/{id}', 'patch')['409'],
    ['claim_expired', 'dependency_conflict', 'idempotency_conflict', 'task_blocked', 'task_claimed', 'task_completed']);
  for (const action of ['start', 'plan', 'reassign', 'complete']) {
    const codes = codesOf(`/incoming/{id}/${action}`, 'post');
    t.strictSame(codes['404'], ['incoming_not_found'], `${action}: its own not-found`);
    t.strictSame(codes['403'], ['permission_denied'], `${action}: no task ownership`);
  }
  for (const row of ENDPOINTS) {
    const operation = doc.paths[row.path][row.method];
    for (const status of Object.keys(operation['x-error-codes'])) {
      t.ok(operation.responses[status], `${row.method} ${row.path}: ${status} is a documented response`);
    }
    t.match(operation.description, /Errors it answers: 400 validation_failed;/, `${row.method} ${row.path}: said in words too`);
  }
});

t.test('GET /openapi.json: the {id} parameter says which id it is (task, assistance stage or Incoming item)', async (t) => {
  const { doc } = await servedDocument();
  const idParameter = (path: string, method: string): string => {
    const refs = (doc.paths[path][method].parameters as { $ref?: string }[]).map((parameter) => parameter.$ref ?? '');
    return refs.find((ref) => /\/(TaskId|StageId|IncomingId)$/.test(ref))?.split('/').pop() ?? '(none)';
  };
  t.equal(idParameter('/tasks/{id}', 'patch'), 'TaskId');
  t.equal(idParameter('/tasks/{id}/claim', 'post'), 'TaskId');
  t.equal(idParameter('/human-requests/{id}', 'get'), 'StageId');
  t.equal(idParameter('/incoming/{id}/start', 'post'), 'IncomingId');
  t.match(doc.components.parameters.StageId.description, /not its incomingId/);
  t.match(doc.components.parameters.IncomingId.description, /incomingId, not its stage id/);
  t.match(doc.components.schemas.Claim.properties.expiresUtc.description, /replayed claim/);
});
