/**
 * A strict JSON reader for request bodies.
 *
 * `JSON.parse` silently accepts documents whose meaning depends on the consumer (duplicate or
 * case-variant member names, numbers that overflow to Infinity), so the API reads bodies with this
 * instead. It also yields a canonical text of the document, used as the idempotency fingerprint.
 *
 * The parser is iterative with an explicit stack: a caller may raise `maxDepth` arbitrarily, and
 * the call stack must never be what limits nesting (a RangeError would escape as a 500).
 */

export type JsonValue = null | boolean | number | string | JsonValue[] | { [member: string]: JsonValue };

export type JsonReadFailure =
  | 'invalid_utf8'
  | 'syntax'
  | 'duplicate_member'
  | 'too_deep'
  | 'number_out_of_range'
  | 'inexact_integer'
  | 'lone_surrogate'
  | 'nul_character';

export type JsonReadResult =
  | { ok: true; value: JsonValue; canonical: string }
  /**
   * `pointer` (RFC 6901) names the repeated member of a `duplicate_member` failure, and the value
   * of a `lone_surrogate` or `nul_character` failure (absent when the string is a member name).
   */
  | { ok: false; failure: JsonReadFailure; offset: number; pointer?: string };

export interface JsonReadOptions {
  maxDepth?: number;
}

const DEFAULT_MAX_DEPTH = 64;

// With the u flag a well-formed pair is one code point, so only an unpaired half matches.
const LONE_SURROGATE = /\p{Surrogate}/u;

// ignoreBOM keeps a leading U+FEFF in the text so that it is rejected as syntax (RFC 8259 §8.1
// forbids senders from adding one) rather than silently dropped.
const utf8Decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

type JsonObject = { [member: string]: JsonValue };

interface ArrayFrame {
  readonly isObject: false;
  readonly value: JsonValue[];
  canonical: string;
}

interface Member {
  readonly name: string;
  readonly canonical: string;
}

interface ObjectFrame {
  readonly isObject: true;
  readonly value: JsonObject;
  /** Lower-cased names seen so far; one Set catches exact and case-variant duplicates alike. */
  readonly names: Set<string>;
  readonly members: Member[];
  /** The name whose value is being read. */
  pendingName: string;
}

type Frame = ArrayFrame | ObjectFrame;

// A plain object rather than an Error: failures are ordinary outcomes (any client can send a bad
// body), so capturing a stack trace for each would be wasted work. Never escapes this module.
class ReadFailure {
  constructor(
    readonly failure: JsonReadFailure,
    readonly offset: number,
    readonly pointer?: string,
  ) {}
}

const pointerSegment = (name: string | number): string => `/${String(name).replaceAll('~', '~0').replaceAll('/', '~1')}`;

const CH_TAB = 0x09;
const CH_LF = 0x0a;
const CH_CR = 0x0d;
const CH_SPACE = 0x20;
const CH_QUOTE = 0x22;
const CH_PLUS = 0x2b;
const CH_COMMA = 0x2c;
const CH_MINUS = 0x2d;
const CH_DOT = 0x2e;
const CH_ZERO = 0x30;
const CH_ONE = 0x31;
const CH_NINE = 0x39;
const CH_COLON = 0x3a;
const CH_UPPER_E = 0x45;
const CH_OPEN_BRACKET = 0x5b;
const CH_BACKSLASH = 0x5c;
const CH_CLOSE_BRACKET = 0x5d;
const CH_LOWER_E = 0x65;
const CH_OPEN_BRACE = 0x7b;
const CH_CLOSE_BRACE = 0x7d;

function isDigit(c: number): boolean {
  return c >= CH_ZERO && c <= CH_NINE;
}

const SHORT_INTEGER = /^-?\d{1,15}$/;
const NUMBER_PARTS = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/**
 * Whether a number `lexeme` (valid JSON) stands for exactly the integer `value` (at most 2^53 in
 * magnitude) it was read as. Reading rounds to the nearest double, so `4.9999999999999999` and
 * `1e-400`, which are not integers, read as 5 and 0, and `9007199254740993` as 2^53: an integer
 * member would take a value the client never sent, so such a number is refused rather than read.
 * Past 2^53 every double is an integer and no member takes one, so those are left to the schema
 * (JSON.stringify's text of any double passes).
 */
function denotesExactly(lexeme: string, value: number): boolean {
  if (SHORT_INTEGER.test(lexeme)) return true;
  const [, whole = '', fraction = '', exponentText = '0'] = NUMBER_PARTS.exec(lexeme) ?? [];
  const written = `${whole}${fraction}`;
  // Loops, not /^0+/ and /0+$/: the second backtracks quadratically over a long run of zeros
  // followed by another digit, seconds for one 128 KiB number.
  let first = 0;
  while (first < written.length && written.charCodeAt(first) === CH_ZERO) first++;
  if (first === written.length) return true;
  let end = written.length;
  while (written.charCodeAt(end - 1) === CH_ZERO) end--;
  const digits = written.slice(first, end);
  // A huge exponent text reads inexactly, but only its sign matters then.
  const exponent = Number(exponentText) - fraction.length + (written.length - end);
  // Past 16 digits the text names more than 2^53.
  if (exponent < 0 || digits.length + exponent > 16) return false;
  return BigInt(`${digits}${'0'.repeat(exponent)}`) === BigInt(Math.abs(value));
}

function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  return -1;
}

function compareNames(a: Member, b: Member): number {
  // Names within one object are unique, so equality never needs a tie-break.
  return a.name < b.name ? -1 : 1;
}

function defineMember(target: JsonObject, name: string, value: JsonValue): void {
  // Plain assignment would invoke the inherited `__proto__` setter and swap the prototype
  // instead of creating a member; defining the property never consults the prototype chain.
  Object.defineProperty(target, name, { value, writable: true, enumerable: true, configurable: true });
}

class Reader {
  private pos = 0;
  private readonly length: number;

  constructor(
    private readonly text: string,
    private readonly maxDepth: number,
  ) {
    this.length = text.length;
  }

  private readonly stack: Frame[] = [];

  read(): { value: JsonValue; canonical: string } {
    const text = this.text;
    const stack = this.stack;
    this.skipWhitespace();

    for (;;) {
      // Read one value at this.pos. Containers that are not empty push a frame and go back to the
      // top of the loop for their first element.
      let value: JsonValue;
      let canonical: string;
      const start = this.pos;
      const c = start < this.length ? text.charCodeAt(start) : -1;

      if (c === CH_OPEN_BRACKET || c === CH_OPEN_BRACE) {
        // Checked before descending so that hostile nesting is refused at the first bracket too many.
        if (stack.length >= this.maxDepth) throw new ReadFailure('too_deep', start);
        this.pos = start + 1;
        this.skipWhitespace();
        if (c === CH_OPEN_BRACKET) {
          if (text.charCodeAt(this.pos) === CH_CLOSE_BRACKET) {
            this.pos++;
            value = [];
            canonical = '[]';
          } else {
            stack.push({ isObject: false, value: [], canonical: '[' });
            continue;
          }
        } else if (text.charCodeAt(this.pos) === CH_CLOSE_BRACE) {
          this.pos++;
          value = {};
          canonical = '{}';
        } else {
          const frame: ObjectFrame = {
            isObject: true,
            value: {},
            names: new Set(),
            members: [],
            pendingName: '',
          };
          stack.push(frame);
          this.readMemberName(frame);
          continue;
        }
      } else if (c === CH_QUOTE) {
        value = this.readValueString();
        canonical = JSON.stringify(value);
      } else if (c === CH_MINUS || isDigit(c)) {
        const lexeme = this.readNumberLexeme();
        value = Number(lexeme);
        if (!Number.isFinite(value)) throw new ReadFailure('number_out_of_range', start);
        if (Number.isInteger(value) && Math.abs(value) <= 2 ** 53 && !denotesExactly(lexeme, value)) {
          throw new ReadFailure('inexact_integer', start);
        }
        canonical = lexeme;
      } else if (text.startsWith('true', start)) {
        this.pos = start + 4;
        value = true;
        canonical = 'true';
      } else if (text.startsWith('false', start)) {
        this.pos = start + 5;
        value = false;
        canonical = 'false';
      } else if (text.startsWith('null', start)) {
        this.pos = start + 4;
        value = null;
        canonical = 'null';
      } else {
        throw new ReadFailure('syntax', start);
      }

      // Hand the finished value to its container; when that container closes too, it becomes the
      // finished value for the next one up.
      for (;;) {
        const top = stack[stack.length - 1];
        this.skipWhitespace();
        if (top === undefined) {
          if (this.pos !== this.length) throw new ReadFailure('syntax', this.pos);
          return { value, canonical };
        }
        const next = this.pos < this.length ? text.charCodeAt(this.pos) : -1;
        if (top.isObject) {
          defineMember(top.value, top.pendingName, value);
          top.members.push({ name: top.pendingName, canonical });
          if (next === CH_COMMA) {
            this.pos++;
            this.skipWhitespace();
            this.readMemberName(top);
            break;
          }
          if (next !== CH_CLOSE_BRACE) throw new ReadFailure('syntax', this.pos);
          this.pos++;
          stack.pop();
          value = top.value;
          canonical = canonicalObject(top.members);
        } else {
          top.value.push(value);
          // `+=` builds a rope in V8, so nesting does not copy each level's text again.
          top.canonical += top.value.length === 1 ? canonical : ',' + canonical;
          if (next === CH_COMMA) {
            this.pos++;
            this.skipWhitespace();
            break;
          }
          if (next !== CH_CLOSE_BRACKET) throw new ReadFailure('syntax', this.pos);
          this.pos++;
          stack.pop();
          value = top.value;
          canonical = top.canonical + ']';
        }
      }
    }
  }

  /** A string in value position: a failure of its text names where the value is. */
  private readValueString(): string {
    try {
      return this.readString();
    } catch (failure) {
      if (failure instanceof ReadFailure && failure.failure !== 'syntax') {
        let pointer = '';
        for (const frame of this.stack) pointer += pointerSegment(frame.isObject ? frame.pendingName : frame.value.length);
        throw new ReadFailure(failure.failure, failure.offset, pointer);
      }
      throw failure;
    }
  }

  /** The pointer of member `name` of the innermost object being read. */
  private pointerTo(name: string): string {
    let pointer = '';
    for (const frame of this.stack.slice(0, -1)) {
      pointer += pointerSegment(frame.isObject ? frame.pendingName : frame.value.length);
    }
    return pointer + pointerSegment(name);
  }

  /** Reads `"name"` `:` and leaves pos at the member's value. */
  private readMemberName(frame: ObjectFrame): void {
    const start = this.pos;
    if (start >= this.length || this.text.charCodeAt(start) !== CH_QUOTE) {
      throw new ReadFailure('syntax', start);
    }
    const name = this.readString();
    // Compared after decoding, so `"a"` and `"\u0061"` collide, and after lower-casing, because
    // downstream lookups may be case-insensitive and must not see two candidates.
    const folded = name.toLowerCase();
    if (frame.names.has(folded)) throw new ReadFailure('duplicate_member', start, this.pointerTo(name));
    frame.names.add(folded);
    frame.pendingName = name;
    this.skipWhitespace();
    if (this.pos >= this.length || this.text.charCodeAt(this.pos) !== CH_COLON) {
      throw new ReadFailure('syntax', this.pos);
    }
    this.pos++;
    this.skipWhitespace();
  }

  /**
   * pos is at the opening quote. A string holding a surrogate that is not half of a pair fails:
   * RFC 8259 leaves its meaning to the consumer, and SQLite would store it as U+FFFD, so the
   * value read back would not be the value written. So does one holding U+0000: SQLite's text
   * functions, and so the schema's length checks, end a string at its first NUL.
   */
  private readString(): string {
    const text = this.text;
    const length = this.length;
    const start = this.pos;
    let i = start + 1;
    let runStart = i;
    let out = '';
    let surrogates = false;
    for (;;) {
      if (i >= length) throw new ReadFailure('syntax', length);
      const c = text.charCodeAt(i);
      if (c === CH_QUOTE) {
        this.pos = i + 1;
        const value = runStart === i ? out : out + text.slice(runStart, i);
        if (surrogates && LONE_SURROGATE.test(value)) throw new ReadFailure('lone_surrogate', start);
        return value;
      }
      if ((c & 0xf800) === 0xd800) surrogates = true;
      if (c === CH_BACKSLASH) {
        if (runStart !== i) out += text.slice(runStart, i);
        const escapeAt = i;
        i++;
        if (i >= length) throw new ReadFailure('syntax', length);
        switch (text.charCodeAt(i)) {
          case 0x22: out += '"'; break;
          case 0x5c: out += '\\'; break;
          case 0x2f: out += '/'; break;
          case 0x62: out += '\b'; break;
          case 0x66: out += '\f'; break;
          case 0x6e: out += '\n'; break;
          case 0x72: out += '\r'; break;
          case 0x74: out += '\t'; break;
          case 0x75: {
            if (i + 4 >= length) throw new ReadFailure('syntax', escapeAt);
            const a = hexValue(text.charCodeAt(i + 1));
            const b = hexValue(text.charCodeAt(i + 2));
            const d = hexValue(text.charCodeAt(i + 3));
            const e = hexValue(text.charCodeAt(i + 4));
            if ((a | b | d | e) < 0) throw new ReadFailure('syntax', escapeAt);
            const unit = (a << 12) | (b << 8) | (d << 4) | e;
            if (unit === 0) throw new ReadFailure('nul_character', escapeAt);
            if ((unit & 0xf800) === 0xd800) surrogates = true;
            out += String.fromCharCode(unit);
            i += 4;
            break;
          }
          default:
            throw new ReadFailure('syntax', escapeAt);
        }
        i++;
        runStart = i;
        continue;
      }
      if (c < CH_SPACE) throw new ReadFailure('syntax', i);
      i++;
    }
  }

  /** pos is at `-` or a digit. Returns the lexeme exactly as sent. */
  private readNumberLexeme(): string {
    const text = this.text;
    const start = this.pos;
    let i = start;
    if (text.charCodeAt(i) === CH_MINUS) i++;
    const first = text.charCodeAt(i);
    if (first === CH_ZERO) {
      i++;
    } else if (first >= CH_ONE && first <= CH_NINE) {
      i++;
      while (isDigit(text.charCodeAt(i))) i++;
    } else {
      throw new ReadFailure('syntax', i);
    }
    if (text.charCodeAt(i) === CH_DOT) {
      i++;
      if (!isDigit(text.charCodeAt(i))) throw new ReadFailure('syntax', i);
      while (isDigit(text.charCodeAt(i))) i++;
    }
    const e = text.charCodeAt(i);
    if (e === CH_LOWER_E || e === CH_UPPER_E) {
      i++;
      const sign = text.charCodeAt(i);
      if (sign === CH_PLUS || sign === CH_MINUS) i++;
      if (!isDigit(text.charCodeAt(i))) throw new ReadFailure('syntax', i);
      while (isDigit(text.charCodeAt(i))) i++;
    }
    // charCodeAt past the end is NaN, which fails every comparison above, so no bounds checks.
    this.pos = i;
    return text.slice(start, i);
  }

  private skipWhitespace(): void {
    const text = this.text;
    let i = this.pos;
    for (;;) {
      const c = text.charCodeAt(i);
      if (c !== CH_SPACE && c !== CH_LF && c !== CH_CR && c !== CH_TAB) break;
      i++;
    }
    this.pos = i;
  }
}

function canonicalObject(members: Member[]): string {
  members.sort(compareNames);
  let out = '{';
  for (let i = 0; i < members.length; i++) {
    const member = members[i]!;
    if (i > 0) out += ',';
    out += JSON.stringify(member.name) + ':' + member.canonical;
  }
  return out + '}';
}

/**
 * Index of the first byte that starts an ill-formed sequence, by the WHATWG decoder's rules (no
 * overlongs, no surrogates, nothing above U+10FFFF), or -1. Only run once the decoder has already
 * refused the input, to say where.
 */
function firstInvalidUtf8Byte(bytes: Uint8Array): number {
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let lower = 0x80;
    let upper = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) {
      need = 1;
    } else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) lower = 0xa0;
      if (b === 0xed) upper = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) lower = 0x90;
      if (b === 0xf4) upper = 0x8f;
    } else {
      return i;
    }
    for (let k = 1; k <= need; k++) {
      if (i + k >= n) return i;
      const c = bytes[i + k]!;
      if (c < lower || c > upper) return i;
      lower = 0x80;
      upper = 0xbf;
    }
    i += need + 1;
  }
  return -1;
}

function decode(bytes: Uint8Array): string | ReadFailure {
  try {
    return utf8Decoder.decode(bytes);
  } catch {
    const bad = firstInvalidUtf8Byte(bytes);
    // Offsets are in decoded characters, so report how much text precedes the bad byte.
    const offset = bad <= 0 ? 0 : utf8Decoder.decode(bytes.subarray(0, bad)).length;
    return new ReadFailure('invalid_utf8', offset);
  }
}

function resolveMaxDepth(options: JsonReadOptions | undefined): number {
  const requested = options?.maxDepth;
  if (typeof requested !== 'number' || Number.isNaN(requested) || requested < 0) return DEFAULT_MAX_DEPTH;
  return Math.floor(requested);
}

/**
 * Reads one JSON text (RFC 8259) strictly. Never throws: every problem, including hostile nesting,
 * comes back as a failure with the offending offset in characters of the decoded text.
 */
export function readJson(input: Uint8Array | string, options?: JsonReadOptions): JsonReadResult {
  let text: string;
  if (typeof input === 'string') {
    text = input;
  } else if (input instanceof Uint8Array) {
    const decoded = decode(input);
    if (decoded instanceof ReadFailure) return { ok: false, failure: decoded.failure, offset: decoded.offset };
    text = decoded;
  } else {
    // Unreachable for typed callers; plain-JS callers still get an answer instead of an exception.
    return { ok: false, failure: 'syntax', offset: 0 };
  }

  try {
    const { value, canonical } = new Reader(text, resolveMaxDepth(options)).read();
    return { ok: true, value, canonical };
  } catch (error) {
    if (error instanceof ReadFailure) {
      return error.pointer === undefined
        ? { ok: false, failure: error.failure, offset: error.offset }
        : { ok: false, failure: error.failure, offset: error.offset, pointer: error.pointer };
    }
    throw error;
  }
}
