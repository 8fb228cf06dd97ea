import t from 'tap';
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';
import { ROOT } from '../helpers/build.js';
import * as common from '../../lib/schemas/common.js';
import * as requests from '../../lib/schemas/requests.js';
import * as resources from '../../lib/schemas/resources.js';
import { openApiDocument } from '../../lib/schemas/openapi.js';

/**
 * The TypeBox schemas round-trip through the OpenAPI generator: every titled object becomes a
 * component under its title, and the component says the same as the schema once the documented
 * 3.0.3 mappings are applied (`anyOf [X, null]` is `X` + `nullable: true`, with null in X's `enum`
 * if it has one, `const` is a one-value
 * `enum`, enums get their `type`, titled members are `$ref`s, and a union of titled objects told
 * apart by one member's value is a `oneOf` with a `discriminator`). Annotations are ignored.
 */

type Json = any;
const doc = openApiDocument() as Json;
const components = doc.components.schemas as Record<string, Json>;

const ANNOTATIONS = new Set(['title', 'description', 'deprecated', '$id', '$schema']);
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);

/** A TypeBox schema in OpenAPI 3.0.3 terms, with every nested schema inlined. */
function fromTypeBox(schema: Json): Json {
  if (!isObject(schema)) return schema;
  const anyOf = schema['anyOf'];
  if (Array.isArray(anyOf)) {
    const nonNull = anyOf.filter((member) => !(isObject(member) && member['type'] === 'null'));
    if (nonNull.length === 1 && nonNull.length < anyOf.length) {
      const inner = fromTypeBox(nonNull[0]);
      // A nullable enum lists null itself: `nullable` does not widen `enum` in OpenAPI 3.0.3.
      return Array.isArray(inner.enum) ? { ...inner, enum: [...inner.enum, null], nullable: true } : { ...inner, nullable: true };
    }
    return { anyOf: anyOf.map(fromTypeBox) };
  }
  const result: Record<string, Json> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (ANNOTATIONS.has(key)) continue;
    if (key === 'const') result['enum'] = [value];
    else if (key === 'properties') result[key] = Object.fromEntries(Object.entries(value as object).map(([name, member]) => [name, fromTypeBox(member)]));
    else if (key === 'items') result[key] = fromTypeBox(value);
    else result[key] = value;
  }
  if (result['type'] === undefined && Array.isArray(result['enum'])) {
    result['type'] = result['enum'].every((v: unknown) => typeof v === 'string') ? 'string' : 'integer';
  }
  return result;
}

/** An OpenAPI schema with `$ref`s resolved and annotations dropped. */
function fromOpenApi(schema: Json): Json {
  if (!isObject(schema)) return schema;
  if (typeof schema['$ref'] === 'string') {
    const name = schema['$ref'].replace('#/components/schemas/', '');
    if (components[name] === undefined) throw new Error(`dangling ${schema['$ref']}`);
    return fromOpenApi(components[name]);
  }
  if (Array.isArray(schema['allOf']) && schema['allOf'].length === 1 && schema['nullable'] === true) {
    return { ...fromOpenApi(schema['allOf'][0]), nullable: true };
  }
  const result: Record<string, Json> = {};
  for (const [key, value] of Object.entries(schema)) {
    if (ANNOTATIONS.has(key)) continue;
    if (key === 'properties') result[key] = Object.fromEntries(Object.entries(value as object).map(([name, member]) => [name, fromOpenApi(member)]));
    else if (key === 'items') result[key] = fromOpenApi(value);
    else if (key === 'anyOf' || key === 'oneOf') result['anyOf'] = (value as Json[]).map(fromOpenApi);
    else if (key === 'discriminator') continue;
    else result[key] = value;
  }
  return result;
}

function titled(module: Record<string, unknown>): [string, Json][] {
  return Object.entries(module).filter(([, value]) => isObject(value) && typeof value['title'] === 'string') as [string, Json][];
}

t.test('every titled schema of lib/schemas/resources.ts becomes a component that says the same', async (t) => {
  const schemas = titled(resources);
  t.ok(schemas.length >= 18, `${schemas.length} titled resource schemas`);
  for (const [exportName, schema] of schemas) {
    const component = components[schema.title];
    t.ok(component, `${exportName} is the component ${schema.title}`);
    if (component === undefined) continue;
    t.equal(component.title, schema.title, `${schema.title} keeps its title`);
    t.same(fromOpenApi(component), fromTypeBox(schema), `${schema.title} round-trips`);
  }
  t.ok(components['Error'], 'Problem is published as Error');
  t.ok(components['NamedEntity'], 'nested titled objects become components too');
  t.strictSame(doc.components.schemas.Task.properties.project, { $ref: '#/components/schemas/Project' }, 'titled members are $refs');
});

t.test('every titled request schema of lib/schemas/requests.ts becomes a component that says the same', async (t) => {
  for (const [exportName, schema] of titled(requests)) {
    const component = components[schema.title];
    t.ok(component, `${exportName} is the component ${schema.title}`);
    if (component !== undefined) t.same(fromOpenApi(component), fromTypeBox(schema), `${schema.title} round-trips`);
  }
});

t.test('schema titles are unique, so no component silently stands for another', async (t) => {
  const seen = new Map<string, string>();
  const duplicates: string[] = [];
  for (const [module, exports] of [['common', common], ['requests', requests], ['resources', resources]] as const) {
    for (const [name, schema] of titled(exports as Record<string, unknown>)) {
      const previous = seen.get(schema.title);
      if (previous !== undefined) duplicates.push(`${schema.title}: ${previous} and ${module}.${name}`);
      seen.set(schema.title, `${module}.${name}`);
    }
  }
  t.strictSame(duplicates, []);
  for (const name of Object.keys(components)) t.ok(seen.has(name), `component ${name} comes from an exported schema`);
});

t.test('OPENAPI: the document is the same bytes under any locale (a Czech collation sorts "Ch" after "H")', async (t) => {
  const index = pathToFileURL(join(ROOT, 'dist', 'lib', 'index.js')).href;
  const script = `const { openApiDocument } = await import(${JSON.stringify(index)}); process.stdout.write(JSON.stringify(openApiDocument()));`;
  const czech = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8', env: { ...process.env, LC_ALL: 'cs_CZ.UTF-8', LANG: 'cs_CZ.UTF-8' },
  });
  t.equal(czech.status, 0, czech.stderr);
  t.equal(czech.stdout, JSON.stringify(openApiDocument()));
});
