import type { TSchema } from 'typebox';
import { Compile } from 'typebox/compile';

export interface SchemaValidator {
  check(value: unknown): boolean;
  /** The first failure as `instancePath: message`, for logs only. */
  describeFailure(value: unknown): string;
}

const compiled = new WeakMap<TSchema, SchemaValidator>();

/** Compiles a schema once (createService asks for every request schema) and reuses it. */
export function validatorFor(schema: TSchema): SchemaValidator {
  let validator = compiled.get(schema);
  if (validator === undefined) {
    const check = Compile(schema);
    validator = {
      check: (value) => check.Check(value),
      describeFailure(value) {
        for (const error of check.Errors(value)) return `${error.instancePath || '/'}: ${error.message}`;
        return 'invalid';
      },
    };
    compiled.set(schema, validator);
  }
  return validator;
}
