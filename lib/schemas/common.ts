import { Type, type Static, type TSchema } from 'typebox';
import { Format } from 'typebox/format';
import {
  ASSISTANCE_KINDS,
  BLOCKING_REASONS,
  LIFECYCLES,
  PRIORITY_NAMES,
  RESOURCE_MODES,
  RESPONSE_STATES,
  TASK_STATUSES,
} from '../domain/enumerations.js';
import type * as Enumerations from '../domain/enumerations.js';
import { INT32_MAX } from '../domain/limits.js';
import { LOCAL_DATE_TIME_INPUT_PATTERN, parseLocalDateTime } from '../time/london.js';

/**
 * A regular expression cannot see that 2026-02-30 does not exist, so the input format is checked
 * by the parser too: a malformed date is then a 400 at request validation (contract 1 step 6),
 * before preconditions and business rules. A nonexistent spring wall time is well formed; the use
 * case answers it with 422.
 */
const LOCAL_DATE_TIME_FORMAT = 'local-date-time';
Format.Set(LOCAL_DATE_TIME_FORMAT, (value) => {
  const parsed = parseLocalDateTime(value);
  return parsed.ok || parsed.reason === 'nonexistent';
});

/**
 * Building blocks shared by every schema. Schemas are written once here and in the sibling
 * modules: the same objects validate requests, type the code (`Static`) and generate the
 * OpenAPI 3.0.3 document (see `openapi.ts`, which turns `anyOf [X, null]` into `nullable`).
 */

export { INT32_MAX, MAX_MINUTES, MAX_SEQUENCE, MAX_TEXT_LENGTH, MAX_TITLE_LENGTH } from '../domain/limits.js';

/** A value or null; rendered as `nullable: true` in OpenAPI. */
export function Nullable<T extends TSchema>(schema: T, options: { description?: string } = {}) {
  return Type.Union([schema, Type.Null()], options);
}

export function Int32(options: { minimum?: number; maximum?: number; description?: string } = {}) {
  return Type.Integer({ format: 'int32', minimum: -INT32_MAX - 1, maximum: INT32_MAX, ...options });
}

export function Int64(options: { description?: string } = {}) {
  return Type.Integer({ format: 'int64', ...options });
}

export const Id = Int32({ minimum: 1 });

/** An id with what it names: which path takes it matters to a client (stage, Incoming, task). */
export const IdOf = (description: string) => Int32({ minimum: 1, description });

/**
 * London wall time as the service writes it: the spec's local-date-time type, so the same format
 * name as inputs carry (whose format also takes the forms a client may send).
 */
export const LocalDateTime = Type.String({
  format: LOCAL_DATE_TIME_FORMAT,
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}$',
  description: 'Europe/London wall time, YYYY-MM-DDTHH:mm:ss, no offset.',
});

/** London wall time as a client may send it (an offset or Z instant is converted). */
export const LocalDateTimeInput = Type.String({
  format: LOCAL_DATE_TIME_FORMAT,
  pattern: LOCAL_DATE_TIME_INPUT_PATTERN,
  description:
    'Europe/London wall time YYYY-MM-DDTHH:mm:ss with an optional fraction, or an instant with Z or ±HH:MM ' +
    'that is converted to London time. A nonexistent spring wall time is rejected with 422 invalid_field.',
});

/** A UTC instant, YYYY-MM-DDTHH:mm:ss.sssZ, with what it is when that needs saying. */
export const UtcDateTimeOf = (description = 'UTC instant, YYYY-MM-DDTHH:mm:ss.sssZ.') => Type.String({
  format: 'date-time',
  pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$',
  description,
});

export const UtcDateTime = UtcDateTimeOf();

export const Uuid = Type.String({ format: 'uuid' });

/** A UUID with what it is for. */
export const UuidOf = (description: string) => Type.String({ format: 'uuid', description });

// Each enumeration once: its list in domain/enumerations.ts, its schema here under the same name
// as the type of its values.
export const TaskStatus = Type.Enum([...TASK_STATUSES]);
export type TaskStatus = Enumerations.TaskStatus;
export const Lifecycle = Type.Enum([...LIFECYCLES]);
export type Lifecycle = Enumerations.Lifecycle;
export const ResponseState = Type.Enum([...RESPONSE_STATES]);
export type ResponseState = Enumerations.ResponseState;
export const PriorityName = Type.Enum([...PRIORITY_NAMES]);
export type PriorityName = Enumerations.PriorityName;
export const AssistanceKind = Type.Enum([...ASSISTANCE_KINDS]);
export type AssistanceKind = Enumerations.AssistanceKind;
export const ResourceMode = Type.Enum([...RESOURCE_MODES]);
export type ResourceMode = Enumerations.ResourceMode;
export const BlockingReason = Type.Enum([...BLOCKING_REASONS]);
export type BlockingReason = Enumerations.BlockingReason;

export const NamedEntity = Type.Object(
  { id: Id, name: Type.String() },
  { title: 'NamedEntity', additionalProperties: false },
);
