import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { openApiDocument } from '../../lib/schemas/openapi.js';

/**
 * Checks responses, and the request bodies the service accepts, against the generated OpenAPI
 * document with Ajv, a validator independent of TypeBox, so a shape that drifts from the document
 * fails the test that produced it.
 */
const document = openApiDocument() as {
  paths: Record<string, Record<string, {
    responses: Record<string, { $ref?: string; content?: Record<string, { schema: unknown }>; headers?: Record<string, unknown> }>;
    'x-error-codes': Record<string, string[]>;
    requestBody?: unknown;
  }>>;
  components: {
    responses: Record<string, { content: Record<string, { schema: unknown }>; headers?: Record<string, unknown> }>;
    headers: Record<string, { schema: { type?: string } }>;
  };
};
/** A response's headers as [name, the component its $ref names] (a header may use another's component). */
function headerComponents(headers: Record<string, unknown> | undefined): [string, string][] {
  return Object.entries(headers ?? {}).map(([name, header]) => [name, String((header as { $ref: string }).$ref).split('/').pop() as string]);
}
const headerSchemas = Object.fromEntries(Object.entries(document.components.headers).map(([name, header]) => [name, header.schema]));

const ajv = new Ajv({ strict: false, allErrors: false });
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
addFormats(ajv);
ajv.addFormat('int32', { type: 'number', validate: (value: number) => Number.isInteger(value) && value >= -(2 ** 31) && value < 2 ** 31 });
ajv.addFormat('local-date-time', /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})?$/);
ajv.addFormat('int64', { type: 'number', validate: (value: number) => Number.isInteger(value) });
ajv.addSchema(document as object, 'openapi');

const validators = new Map<string, ValidateFunction>();
function validatorAt(pointer: string): ValidateFunction {
  let validate = validators.get(pointer);
  if (validate === undefined) {
    validate = ajv.compile({ $ref: `openapi#${pointer}` });
    validators.set(pointer, validate);
  }
  return validate;
}

const escape = (segment: string) => segment.replaceAll('~', '~0').replaceAll('/', '~1');

function templateFor(path: string): string | undefined {
  for (const template of Object.keys(document.paths)) {
    const pattern = new RegExp(`^${template.replace('{id}', '[^/]+')}$`);
    if (pattern.test(path)) return template;
  }
  return undefined;
}

export interface CheckedResponse {
  status: number;
  headers: Record<string, string>;
  body?: string;
}

function problemCode(body: string | undefined): string {
  try {
    const parsed: unknown = JSON.parse(body ?? '');
    return typeof parsed === 'object' && parsed !== null && 'code' in parsed ? String(parsed.code) : '(no code)';
  } catch {
    return '(no JSON)';
  }
}

/** Returns a list of problems (empty when the response conforms). */
export function openApiProblems(method: string, url: string, response: CheckedResponse): string[] {
  const problems: string[] = [];
  const path = url.split('?')[0]!.replace(/^\/api\/v1/, '');
  const template = templateFor(path);
  const operation = template === undefined ? undefined : document.paths[template]?.[method.toLowerCase()];
  const status = String(response.status);
  let schemaPointer: string | undefined;
  let mediaType: string | undefined;
  let declaredHeaders: [name: string, component: string][] = [];
  if (operation === undefined || response.status >= 400) {
    if (response.status < 400) return [`${method} ${url}: ${status} for an undocumented operation`];
    const named = operation?.responses[status];
    if (operation !== undefined && named === undefined) problems.push(`${method} ${template}: status ${status} not documented`);
    const code = problemCode(response.body);
    // An unknown path or method is answered for the path, before any operation (a known template
    // can still be matched by a path that is not the operation's: a #fragment, /identity unprefixed).
    const pathLevel = code === 'route_not_found' || code === 'method_not_allowed';
    if (operation !== undefined && !pathLevel && !(operation['x-error-codes'][status] ?? []).includes(code)) {
      problems.push(`${method} ${template}: ${status} ${code} is not among its x-error-codes`);
    }
    schemaPointer = '/components/schemas/Error';
    mediaType = 'application/problem+json';
    if (named?.$ref !== undefined) {
      const responseName = named.$ref.split('/').pop()!;
      declaredHeaders = headerComponents(document.components.responses[responseName]?.headers);
    }
  } else {
    const documented = operation.responses[status];
    if (documented === undefined) return [`${method} ${template}: status ${status} not documented`];
    declaredHeaders = headerComponents(documented.headers);
    const content = documented.content;
    if (content !== undefined) {
      mediaType = Object.keys(content)[0];
      schemaPointer = `/paths/${escape(template!)}/${method.toLowerCase()}/responses/${status}/content/${escape(mediaType!)}/schema`;
    } else if (response.body !== undefined && response.body !== '') {
      problems.push(`${method} ${template}: ${status} has a body but documents none`);
    }
  }
  for (const [header, component] of declaredHeaders) {
    const optional = ['Idempotent-Replayed', 'RateLimit', 'RateLimit-Policy', 'Warning', 'ETag', 'Accept-Encoding'].includes(header);
    const value = response.headers[header.toLowerCase()];
    if (value === undefined) {
      if (!optional) problems.push(`${method} ${url}: header ${header} missing`);
      continue;
    }
    // A header's value is text; an integer header (Retry-After) must be digits to be one.
    const validate = validatorAt(`/components/headers/${escape(component)}/schema`);
    const typed = headerSchemas[component]?.type === 'integer' ? (/^\d+$/.test(value) ? Number(value) : value) : value;
    if (!validate(typed)) problems.push(`${method} ${url}: header ${header} ${JSON.stringify(value)}: ${ajv.errorsText(validate.errors)}`);
  }
  if (schemaPointer !== undefined) {
    if (response.headers['content-type'] !== mediaType) problems.push(`${method} ${url}: content-type ${response.headers['content-type']} is not ${mediaType}`);
    let body: unknown;
    try {
      body = JSON.parse(response.body ?? '');
    } catch {
      return [...problems, `${method} ${url}: body is not JSON`];
    }
    const validate = validatorAt(schemaPointer);
    if (!validate(body)) problems.push(`${method} ${url} ${status}: ${ajv.errorsText(validate.errors)}`);
  }
  return problems;
}

/**
 * Returns a list of problems (empty when none) with a request body the service accepted: a body
 * answered 2xx must be valid by the operation's documented request schema, or a client generated
 * from the document could not send it.
 */
export function openApiRequestProblems(method: string, url: string, body: string | Uint8Array | undefined, status: number): string[] {
  if (status < 200 || status >= 300 || body === undefined || body.length === 0) return [];
  const template = templateFor(url.split('?')[0]!.replace(/^\/api\/v1/, ''));
  const operation = template === undefined ? undefined : document.paths[template]?.[method.toLowerCase()];
  if (operation === undefined) return [];
  if (operation.requestBody === undefined) return [`${method} ${template}: a body was accepted, but the operation documents none`];
  let parsed: unknown;
  try {
    parsed = JSON.parse(typeof body === 'string' ? body : new TextDecoder().decode(body));
  } catch {
    return [`${method} ${url}: a body that is not JSON was accepted`];
  }
  const validate = validatorAt(`/paths/${escape(template!)}/${method.toLowerCase()}/requestBody/content/application~1json/schema`);
  return validate(parsed) ? [] : [`${method} ${url} request body: ${ajv.errorsText(validate.errors)}`];
}
