import { DateTime } from 'luxon';

/** The IANA zone every local-date-time is expressed in. */
export const LONDON = 'Europe/London';

/**
 * Strict syntax of a local-date-time input: `YYYY-MM-DDTHH:mm:ss`, optionally followed by a
 * `.fraction` of any number of digits (as RFC 3339 allows), optionally followed by `Z` or
 * `±HH:MM`. Anchored, flag-free and lookbehind-free so it can also serve as a JSON-schema
 * `pattern`. Day-of-month is only checked against 01-31; `parseLocalDateTime` rejects dates such
 * as Feb 30.
 */
export const LOCAL_DATE_TIME_INPUT_PATTERN =
  '^[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]' +
  '(?:\\.[0-9]+)?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?$';

/**
 * Result of `parseLocalDateTime`: the canonical wall time, or why the input was refused. `instant`
 * is the moment it names: the one sent for a `Z` or offset input (in the autumn repeated hour the
 * wall time alone could not tell which pass), otherwise the wall time's first occurrence, as
 * `localToEpochMs` gives it.
 */
export type LocalParse = { ok: true; local: string; instant: number } | { ok: false; reason: 'syntax' | 'nonexistent' };

// Capturing twin of LOCAL_DATE_TIME_INPUT_PATTERN; the exported one stays group-free for schemas.
const INPUT_RE =
  /^([0-9]{4})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])(?:\.[0-9]+)?(?:(Z)|([+-])([01][0-9]|2[0-3]):([0-5][0-9]))?$/;
const CANONICAL_RE =
  /^([0-9]{4})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])$/;
const UTC_RE =
  /^([0-9]{4})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])T([01][0-9]|2[0-3]):([0-5][0-9]):([0-5][0-9])(?:\.([0-9]+))?Z$/;

const MS_PER_MINUTE = 60_000;
const MS_PER_DAY = 86_400_000;

function isLeapYear(y: number): boolean {
  return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return isLeapYear(y) ? 29 : 28;
  return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;
}

// Own civil-date arithmetic (Hinnant's days_from_civil) because Date.UTC maps years 0-99 to 19xx.
function daysFromCivil(y: number, m: number, d: number): number {
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const mp = (m + 9) % 12;
  const doy = Math.floor((153 * mp + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  return era * 146097 + doe - 719468;
}

/** Field values of a matched date-time as a "wall clock read as UTC" millisecond count, or NaN for e.g. Feb 30. */
function wallMs(m: RegExpExecArray): number {
  const y = Number(m[1]);
  const mo = Number(m[2]);
  const d = Number(m[3]);
  if (d > daysInMonth(y, mo)) return NaN;
  return (
    daysFromCivil(y, mo, d) * MS_PER_DAY +
    Number(m[4]) * 3_600_000 +
    Number(m[5]) * MS_PER_MINUTE +
    Number(m[6]) * 1000
  );
}

interface DayOffsets {
  /** London offset in minutes at the start of the UTC day. */
  readonly start: number;
  /** London offset in minutes from `change` to the end of the UTC day. */
  readonly end: number;
  /** First instant carrying `end`; +Infinity when the offset is constant all day. */
  readonly change: number;
}

// Luxon (via Intl) is slow enough that a per-call DateTime would dominate list formatting, so offsets
// are resolved once per UTC day. London never changes offset twice in one day.
const dayCache = new Map<number, DayOffsets>();
const DAY_CACHE_LIMIT = 20_000;

function luxonOffset(ms: number): number {
  return DateTime.fromMillis(ms, { zone: LONDON }).offset;
}

function dayOffsets(day: number): DayOffsets {
  const cached = dayCache.get(day);
  if (cached !== undefined) return cached;
  const first = day * MS_PER_DAY;
  const last = first + MS_PER_DAY - 1;
  const start = luxonOffset(first);
  const end = luxonOffset(last);
  let change = Number.POSITIVE_INFINITY;
  if (start !== end) {
    let lo = first;
    let hi = last;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (luxonOffset(mid) === start) lo = mid;
      else hi = mid;
    }
    change = hi;
  }
  const info: DayOffsets = { start, end, change };
  // Arbitrary user dates could otherwise grow the cache without bound.
  if (dayCache.size >= DAY_CACHE_LIMIT) dayCache.clear();
  dayCache.set(day, info);
  return info;
}

/** London UTC offset in milliseconds at an instant (any finite one, even outside years 0000-9999). */
export function offsetMsAt(ms: number): number {
  const info = dayOffsets(Math.floor(ms / MS_PER_DAY));
  return (ms < info.change ? info.start : info.end) * MS_PER_MINUTE;
}

/** First instant whose London wall time is `wall`, or NaN when the wall time falls in a gap. */
function wallToInstant(wall: number): number {
  // Offsets valid within a day of the wall reading cover both sides of any transition that could
  // produce it; each is accepted only if it really is London's offset at the resulting instant.
  let best = Number.NaN;
  for (const probe of [wall - MS_PER_DAY, wall, wall + MS_PER_DAY]) {
    const candidate = wall - offsetMsAt(probe);
    if (offsetMsAt(candidate) === wall - candidate && !(candidate >= best)) best = candidate;
  }
  return best;
}

/** Canonical `YYYY-MM-DDTHH:mm:ss` of a wall reading held as UTC-field milliseconds; null outside years 0000-9999. */
function formatWall(wall: number): string | null {
  if (!(wall >= -62_167_219_200_000 && wall < 253_402_300_800_000)) return null;
  // Floor, not truncate, so instants before 1970 with a fraction still land on their own second.
  return new Date(Math.floor(wall / 1000) * 1000).toISOString().slice(0, 19);
}

/**
 * Parses a local-date-time input and returns the canonical London wall time `YYYY-MM-DDTHH:mm:ss`.
 * Any fraction is truncated. A `Z`/`±HH:MM` suffix makes the input an instant, which is converted
 * to London wall time (an instant in the autumn repeated hour yields that repeated wall time).
 * A bare wall time skipped by the spring clock change is `nonexistent`; everything else that is
 * malformed (including impossible dates such as Feb 30, or an instant whose London wall time is
 * outside years 0000-9999) is `syntax`.
 */
export function parseLocalDateTime(input: string): LocalParse {
  const m = INPUT_RE.exec(input);
  if (m === null) return { ok: false, reason: 'syntax' };
  const wall = wallMs(m);
  if (Number.isNaN(wall)) return { ok: false, reason: 'syntax' };
  if (m[7] === undefined && m[8] === undefined) {
    const first = wallToInstant(wall);
    if (Number.isNaN(first)) return { ok: false, reason: 'nonexistent' };
    return { ok: true, local: input.slice(0, 19), instant: first };
  }
  let instant = wall;
  if (m[8] !== undefined) {
    const offsetMs = (Number(m[9]) * 60 + Number(m[10])) * MS_PER_MINUTE;
    instant = m[8] === '+' ? wall - offsetMs : wall + offsetMs;
  }
  const local = formatWall(instant + offsetMsAt(instant));
  return local === null ? { ok: false, reason: 'syntax' } : { ok: true, local, instant };
}

/**
 * The instant (epoch ms) of a canonical London wall time. An ambiguous autumn wall time maps to
 * its first occurrence (the BST one). Throws RangeError for a non-canonical or nonexistent one.
 */
export function localToEpochMs(local: string): number {
  const m = CANONICAL_RE.exec(local);
  const wall = m === null ? Number.NaN : wallMs(m);
  if (Number.isNaN(wall)) throw new RangeError(`not a canonical local date-time: ${JSON.stringify(local)}`);
  const instant = wallToInstant(wall);
  if (Number.isNaN(instant)) throw new RangeError(`nonexistent London wall time: ${local}`);
  return instant;
}

/**
 * The London wall time of an instant (epoch ms), canonical form `YYYY-MM-DDTHH:mm:ss`, with any
 * sub-second part dropped. Throws RangeError for a non-finite instant or one outside years 0000-9999.
 */
export function epochMsToLocal(ms: number): string {
  const local = Number.isFinite(ms) ? formatWall(ms + offsetMsAt(ms)) : null;
  if (local === null) throw new RangeError(`instant out of range: ${ms}`);
  return local;
}

/** utc-date-time output `YYYY-MM-DDTHH:mm:ss.sssZ` (as `Date#toISOString`); throws RangeError for an invalid instant. */
export function formatUtc(ms: number): string {
  return new Date(ms).toISOString();
}

/** `formatUtc`, with null for no instant. */
export const formatUtcOrNull = (ms: number | null): string | null => (ms === null ? null : formatUtc(ms));

/**
 * Parses a strict utc-date-time (`YYYY-MM-DDTHH:mm:ss(.fraction)?Z`, a fraction of any length
 * truncated to milliseconds) to epoch ms, or null when invalid (including offsets other than `Z`).
 */
export function parseUtc(input: string): number | null {
  const m = UTC_RE.exec(input);
  if (m === null) return null;
  const wall = wallMs(m);
  if (Number.isNaN(wall)) return null;
  const fraction = m[7];
  return fraction === undefined ? wall : wall + Number(fraction.padEnd(3, '0').slice(0, 3));
}

/** 0000-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z. */
const FIRST_INSTANT = -62_167_219_200_000;
const LAST_INSTANT = 253_402_300_799_999;
const INSTANT_RE = /^([0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?)(?:Z|([+-])([01][0-9]|2[0-3]):([0-5][0-9]))$/;

/**
 * Parses an ISO 8601 instant with `Z` or a `±HH:MM` offset (what other systems send: a source's
 * reply times, a test clock) to epoch ms, or null when it is invalid or has no offset.
 */
export function parseInstant(input: string): number | null {
  const m = INSTANT_RE.exec(input);
  // parseUtc does the field validation (Feb 30, hour 24, ...) on the offset-free part.
  const wall = m === null ? null : parseUtc(`${m[1]}Z`);
  if (m === null || wall === null) return null;
  if (m[2] === undefined) return wall;
  const offsetMs = (Number(m[3]) * 60 + Number(m[4])) * MS_PER_MINUTE;
  const instant = m[2] === '+' ? wall - offsetMs : wall + offsetMs;
  // An offset may carry it past year 0000 or 9999, which utc-date-time output cannot write.
  return instant >= FIRST_INSTANT && instant <= LAST_INSTANT ? instant : null;
}
