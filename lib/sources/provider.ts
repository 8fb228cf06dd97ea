import type { AssistanceKind, PriorityName } from '../domain/enumerations.js';
import { MAX_TEXT_LENGTH, MAX_TITLE_LENGTH } from '../domain/limits.js';

/**
 * The linked-source provider interface (contract 9). An embedder passes providers to
 * `createService({ sources: { [providerKey]: provider } })`; the service calls them before work is
 * offered or claimed and to publish assistance requests. Providers return plain data; anything
 * beyond the documented members is ignored, and nothing but the business facts ever reaches a
 * response.
 */
export interface SourceReply {
  /** Stable id of the reply in the external system (a reply is recorded once). */
  readonly id: string;
  /** The `ref` returned by `publish` for the request this reply answers. */
  readonly inReplyTo: string | null;
  readonly author: string | null;
  readonly text: string;
  /** When it was written (utc-date-time); the receipt time is used when absent or invalid. */
  readonly createdUtc: string | null;
}

export interface SourceSnapshot {
  readonly title: string;
  readonly description: string | null;
  readonly businessStatus: string | null;
  readonly replies: readonly SourceReply[];
}

export interface PublishRequest {
  readonly title: string;
  readonly details: string | null;
  readonly assistanceKind: AssistanceKind;
  readonly priority: PriorityName;
}

/**
 * What a provider's `refresh` gives: the item's facts and any new replies. Members beyond these
 * are ignored; the service checks every value again at run time (a provider's data is untrusted),
 * so this type is the provider author's guide, not the service's only guard.
 */
export interface ProviderItem {
  readonly title: string;
  readonly description?: string | null;
  readonly businessStatus?: string | null;
  readonly replies?: readonly ProviderReply[] | null;
}

/** A reply on the item; one whose `inReplyTo` is the `ref` of a published request answers it. */
export interface ProviderReply {
  readonly id: string | number;
  readonly inReplyTo?: string | number | null;
  readonly author?: string | null;
  readonly text: string;
  /** utc-date-time with `Z` or an offset; the time of receipt when absent or unreadable. */
  readonly createdUtc?: string | null;
}

/** What a provider's `publish` gives: an opaque reference its replies will name in `inReplyTo`. */
export interface ProviderPublication {
  readonly ref: string | number;
}

export interface SourceProvider {
  /** The item's current facts and replies; reject (or throw) when it cannot be read. */
  refresh(itemId: string, signal: AbortSignal): Promise<ProviderItem> | ProviderItem;
  /** Posts an assistance request to the item; resolves to `{ ref }`, an opaque reference. */
  publish(itemId: string, request: PublishRequest, signal: AbortSignal): Promise<ProviderPublication> | ProviderPublication;
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * Provider strings as they will read back from SQLite, which stores lone UTF-16 surrogates as
 * U+FFFD: compared raw, such a title would differ from its stored self on every refresh and
 * record a change that never happened.
 */
const text = (value: string): string => value.toWellFormed();

const optionalText = (value: unknown): string | null => (typeof value === 'string' ? text(value) : null);

/**
 * The first `max` characters (code points, as every text bound of the API counts them), never
 * cutting a surrogate pair.
 */
function firstCharacters(value: string, max: number): string {
  if (value.length <= max) return value;
  let units = 0;
  let count = 0;
  for (const character of value) {
    if (count === max) break;
    units += character.length;
    count += 1;
  }
  return value.slice(0, units);
}

/**
 * What one answer may put into the database, and so into every view of the tasks linked to the
 * item: the API's own bounds on titles and texts. A source is outside the service's control, and
 * its facts and replies are kept in each task's history; without a bound, one item answering
 * megabytes could make every read of its tasks too large to send.
 */
export const SOURCE_BOUNDS = {
  title: MAX_TITLE_LENGTH,
  description: MAX_TEXT_LENGTH,
  businessStatus: MAX_TITLE_LENGTH,
  replyText: MAX_TEXT_LENGTH,
  author: MAX_TITLE_LENGTH,
  /** A reply's id and the ref it answers are identifiers: a longer one is not a reply this service made or can keep. */
  identifier: 1000,
} as const;

const bounded = (value: string | null, max: number): string | null => (value === null ? null : firstCharacters(value, max));

/** Absent, null or a string; anything else makes the answer malformed. */
const isOptionalText = (value: unknown): boolean => value === undefined || value === null || typeof value === 'string';

/**
 * Reads a provider's refresh result; null when it is not a usable snapshot (a failure). Facts of
 * the wrong type fail the refresh rather than read as null, which would record a change that
 * never happened. A malformed reply is skipped: it cannot be recorded, and the facts still hold.
 * Texts are cut to SOURCE_BOUNDS.
 */
export function parseSnapshot(value: unknown): SourceSnapshot | null {
  if (!isRecord(value) || typeof value['title'] !== 'string') return null;
  if (!isOptionalText(value['description']) || !isOptionalText(value['businessStatus'])) return null;
  const replies: SourceReply[] = [];
  const rawReplies = value['replies'];
  if (rawReplies !== undefined && rawReplies !== null) {
    if (!Array.isArray(rawReplies)) return null;
    for (const reply of rawReplies as readonly unknown[]) {
      if (!isRecord(reply) || (typeof reply['id'] !== 'string' && typeof reply['id'] !== 'number') || typeof reply['text'] !== 'string') {
        continue; // one malformed reply does not hide the item's facts
      }
      const id = text(String(reply['id']));
      const inReplyTo = typeof reply['inReplyTo'] === 'number' ? String(reply['inReplyTo']) : optionalText(reply['inReplyTo']);
      if (id.length > SOURCE_BOUNDS.identifier || (inReplyTo?.length ?? 0) > SOURCE_BOUNDS.identifier) continue;
      const createdUtc = optionalText(reply['createdUtc']);
      replies.push({
        id,
        inReplyTo,
        author: bounded(optionalText(reply['author']), SOURCE_BOUNDS.author),
        text: firstCharacters(text(reply['text']), SOURCE_BOUNDS.replyText),
        // Longer than any date-time: unreadable, so the time of receipt (as for any unreadable one).
        createdUtc: createdUtc !== null && createdUtc.length > 64 ? null : createdUtc,
      });
    }
  }
  return {
    title: firstCharacters(text(value['title']), SOURCE_BOUNDS.title),
    description: bounded(optionalText(value['description']), SOURCE_BOUNDS.description),
    businessStatus: bounded(optionalText(value['businessStatus']), SOURCE_BOUNDS.businessStatus),
    replies,
  };
}

/** Reads a provider's publish result: the opaque reference, or null when there is none. */
export function parsePublished(value: unknown): string | null {
  if (!isRecord(value)) return null;
  const ref = value['ref'];
  if (typeof ref === 'string' && ref.length > 0) return text(ref);
  if (typeof ref === 'number') return String(ref);
  return null;
}

/**
 * An error's own words. Connecting to a host with several addresses fails with an AggregateError
 * whose message is empty: the attempts' messages say what happened.
 */
function errorText(error: Error): string {
  if (error.message !== '') return String(error.message);
  if (error instanceof AggregateError) {
    return error.errors.map((each: unknown) => (each instanceof Error ? each.message : String(each))).join('; ');
  }
  const code: unknown = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : error.name;
}

/**
 * A provider's failure as text for the log. Provider code may reject with anything, including
 * values that refuse to become strings (an object without a prototype, an Error whose message
 * getter throws): describing the failure must not become a failure of its own.
 */
export function describeFailure(error: unknown): string {
  try {
    if (!(error instanceof Error)) return String(error);
    // fetch rejects with "fetch failed" alone: what went wrong (refused, DNS, TLS) is its cause.
    const cause: unknown = error.cause;
    return cause instanceof Error ? `${String(error.message)}: ${errorText(cause)}` : String(error.message);
  } catch {
    return 'a failure that cannot be described';
  }
}
