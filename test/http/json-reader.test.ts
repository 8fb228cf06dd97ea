import t from 'tap';
import { readJson } from '../../lib/http/json-reader.js';
import type { JsonReadFailure, JsonReadOptions, JsonReadResult, JsonValue } from '../../lib/http/json-reader.js';
import type { TapTest } from '../helpers/api.js';

function bytes(...values: number[]): Uint8Array {
  return Uint8Array.from(values);
}

function utf8(text: string): Uint8Array {
  return new TextEncoder().encode(text);
}

function expectOk(tt: TapTest, input: Uint8Array | string, options?: JsonReadOptions): { value: JsonValue; canonical: string } {
  const result = readJson(input, options);
  if (!result.ok) {
    tt.fail(`expected ${describe(input)} to parse, got ${result.failure} at ${result.offset}`);
    return { value: null, canonical: '' };
  }
  tt.pass(`${describe(input)} parses`);
  return result;
}

function expectFailure(
  tt: TapTest,
  input: Uint8Array | string,
  failure: JsonReadFailure,
  offset?: number,
  options?: JsonReadOptions,
): void {
  const result = readJson(input, options);
  if (result.ok) {
    tt.fail(`expected ${describe(input)} to fail with ${failure}, it parsed as ${result.canonical}`);
    return;
  }
  tt.equal(result.failure, failure, `${describe(input)} fails with ${failure}`);
  if (offset !== undefined) tt.equal(result.offset, offset, `${describe(input)} fails at offset ${offset}`);
}

function describe(input: Uint8Array | string): string {
  if (typeof input !== 'string') return `bytes [${Array.from(input, (b) => b.toString(16)).join(' ')}]`;
  const shown = input.length > 60 ? input.slice(0, 60) + '...' : input;
  // Assertion names travel through TAP, whose parser splits lines on U+2028/U+2029 too, so keep
  // them ASCII.
  return JSON.stringify(shown).replace(/[^\x20-\x7e]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

function canonicalOf(input: string): string {
  const result = readJson(input);
  if (!result.ok) throw new Error(`${input} did not parse: ${result.failure}@${result.offset}`);
  return result.canonical;
}

function isRecord(value: JsonValue): value is { [member: string]: JsonValue } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Structural equality for JSON values. tcompare's strictSame is not used here because it treats a
 * member named `constructor` as the object's constructor and compares it by identity.
 */
function jsonEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (Array.isArray(a)) return Array.isArray(b) && a.length === b.length && a.every((v, i) => jsonEqual(v, b[i]));
  if (typeof a !== 'object' || a === null || typeof b !== 'object' || b === null || Array.isArray(b)) return false;
  if (Object.getPrototypeOf(a) !== Object.prototype || Object.getPrototypeOf(b) !== Object.prototype) return false;
  const aNames = Object.keys(a).sort();
  const bNames = Object.keys(b).sort();
  if (aNames.length !== bNames.length || aNames.some((n, i) => n !== bNames[i])) return false;
  return aNames.every((n) =>
    jsonEqual(Object.getOwnPropertyDescriptor(a, n)?.value, Object.getOwnPropertyDescriptor(b, n)?.value),
  );
}

/** Independent reference for the canonical text, built from JSON.parse's value. */
function referenceCanonical(value: unknown): string {
  if (Array.isArray(value)) return '[' + value.map(referenceCanonical).join(',') + ']';
  if (typeof value === 'object' && value !== null) {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return '{' + entries.map(([k, v]) => JSON.stringify(k) + ':' + referenceCanonical(v)).join(',') + '}';
  }
  // JSON.stringify of a number is the shortest round-trip text, i.e. exactly the lexeme it sent.
  return JSON.stringify(value);
}

// ---------------------------------------------------------------------------------------------
// Seeded generator for the property checks (mulberry32: small, deterministic, no dependencies).

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let r = Math.imul(a ^ (a >>> 15), 1 | a);
    r = (r + Math.imul(r ^ (r >>> 7), 61 | r)) ^ r;
    return ((r ^ (r >>> 14)) >>> 0) / 4294967296;
  };
}

class Generator {
  constructor(private readonly random: () => number) {}

  int(max: number): number {
    return Math.floor(this.random() * max);
  }

  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)]!;
  }

  string(): string {
    const pool = [
      'a', 'b', 'Z', ' ', '"', '\\', '/', '\b', '\f', '\n', '\r', '\t', '\u0001', '\u001f', '\u007f',
      'é', 'É', 'ß', 'İ', '\u2028', '\u2029', '\ufeff', '😀', '\u{10FFFF}', '中', 'K',
    ];
    let out = '';
    const length = this.int(8);
    for (let i = 0; i < length; i++) out += this.pick(pool);
    return out;
  }

  number(): number {
    switch (this.int(6)) {
      case 0: return this.int(1000);
      case 1: return -this.int(1_000_000);
      case 2: return (this.random() - 0.5) * 1e6;
      case 3: return this.random() * Math.pow(10, this.int(600) - 300);
      case 4: return this.pick([0, -0, Number.MAX_SAFE_INTEGER, Number.MIN_VALUE, Number.MAX_VALUE, 5e-324, 1e21]);
      default: return -this.random() * Math.pow(10, this.int(40) - 20);
    }
  }

  value(depth: number): JsonValue {
    const kind = depth <= 0 ? this.int(4) : this.int(6);
    switch (kind) {
      case 0: return this.pick([null, true, false]);
      case 1: return this.number();
      case 2:
      case 3: return this.string();
      case 4: {
        const items: JsonValue[] = [];
        const length = this.int(5);
        for (let i = 0; i < length; i++) items.push(this.value(depth - 1));
        return items;
      }
      default: {
        const object: { [member: string]: JsonValue } = {};
        const folded = new Set<string>();
        const length = this.int(5);
        for (let i = 0; i < length; i++) {
          const name = this.pick(['__proto__', 'constructor', 'toString', '0', '10', '']) + this.string();
          if (folded.has(name.toLowerCase())) continue;
          folded.add(name.toLowerCase());
          Object.defineProperty(object, name, {
            value: this.value(depth - 1),
            writable: true,
            enumerable: true,
            configurable: true,
          });
        }
        return object;
      }
    }
  }
}

/** Serialises with members in a random order and random legal whitespace. */
function shuffledText(value: JsonValue, gen: Generator): string {
  const ws = (): string => gen.pick(['', '', ' ', '\n', '\t', '\r\n  ']);
  if (Array.isArray(value)) return ws() + '[' + value.map((v) => shuffledText(v, gen)).join(',') + ws() + ']' + ws();
  if (isRecord(value)) {
    const names = Object.keys(value);
    for (let i = names.length - 1; i > 0; i--) {
      const j = gen.int(i + 1);
      [names[i], names[j]] = [names[j]!, names[i]!];
    }
    const members = names.map((n) => ws() + JSON.stringify(n) + ws() + ':' + shuffledText(value[n]!, gen));
    return ws() + '{' + members.join(',') + ws() + '}' + ws();
  }
  return ws() + JSON.stringify(value) + ws();
}

// ---------------------------------------------------------------------------------------------

t.test('top-level scalars are complete JSON texts', async (tt) => {
  tt.equal(expectOk(tt, 'null').value, null);
  tt.equal(expectOk(tt, 'true').value, true);
  tt.equal(expectOk(tt, 'false').value, false);
  tt.equal(expectOk(tt, '"x"').value, 'x');
  tt.equal(expectOk(tt, '3').value, 3);
  tt.equal(expectOk(tt, ' \t\r\n3 \t\r\n').canonical, '3');
  tt.equal(expectOk(tt, utf8('"x"')).value, 'x');
});

t.test('empty and whitespace-only input is a syntax error', async (tt) => {
  expectFailure(tt, '', 'syntax', 0);
  expectFailure(tt, new Uint8Array(0), 'syntax', 0);
  expectFailure(tt, ' \n\t\r', 'syntax', 4);
});

t.test('only space, tab, line feed and carriage return count as whitespace', async (tt) => {
  expectOk(tt, ' \t\n\r[ \t\n\r1 \t\n\r, \t\n\r{ \t\n\r"a" \t\n\r: \t\n\r2 \t\n\r} \t\n\r] \t\n\r');
  for (const ws of ['\u00a0', '\f', '\v', '\u2028', '\u2029', '\u3000', '\u0000']) {
    expectFailure(tt, `${ws}1`, 'syntax', 0);
    expectFailure(tt, `[1,${ws}2]`, 'syntax', 3);
  }
});

t.test('a leading byte order mark is a syntax error', async (tt) => {
  expectFailure(tt, bytes(0xef, 0xbb, 0xbf, 0x7b, 0x7d), 'syntax', 0);
  expectFailure(tt, '\ufeff{}', 'syntax', 0);
  // A BOM inside a string is just a character.
  tt.equal(expectOk(tt, '"\ufeff"').value, '\ufeff');
});

t.test('trailing garbage after the document is a syntax error', async (tt) => {
  expectFailure(tt, '{} {}', 'syntax', 3);
  expectFailure(tt, '[]]', 'syntax', 2);
  expectFailure(tt, '1 2', 'syntax', 2);
  expectFailure(tt, '"a""b"', 'syntax', 3);
  expectFailure(tt, 'nulll', 'syntax', 4);
  expectFailure(tt, 'true,', 'syntax', 4);
  expectFailure(tt, '{}\u0000', 'syntax', 2);
  expectOk(tt, '{} \n');
});

t.test('trailing commas are syntax errors', async (tt) => {
  expectFailure(tt, '[1,]', 'syntax', 3);
  expectFailure(tt, '{"a":1,}', 'syntax', 7);
  expectFailure(tt, '[1,2,] ', 'syntax', 5);
  expectFailure(tt, '[,1]', 'syntax', 1);
  expectFailure(tt, '[1,,2]', 'syntax', 3);
  expectFailure(tt, '{,}', 'syntax', 1);
  expectFailure(tt, '{"a":1,,"b":2}', 'syntax', 7);
});

t.test('comments are syntax errors', async (tt) => {
  expectFailure(tt, '{"a":1 /* c */}', 'syntax', 7);
  expectFailure(tt, '// x\n{}', 'syntax', 0);
  expectFailure(tt, '[1]//', 'syntax', 3);
  expectFailure(tt, '[1,# hash\n2]', 'syntax', 3);
});

t.test('non-JSON spellings of values are syntax errors', async (tt) => {
  for (const text of ["'a'", "{'a':1}", '{a:1}', '{1:2}', 'NaN', 'Infinity', '-Infinity', 'True', 'NULL', 'undefined', 'tru', 'nul', 'fals', '+1', '0x10', '.5', '[.5]']) {
    expectFailure(tt, text, 'syntax');
  }
  expectFailure(tt, '-Infinity', 'syntax', 1);
  expectFailure(tt, '[NaN]', 'syntax', 1);
});

t.test('malformed number lexemes are syntax errors', async (tt) => {
  expectFailure(tt, '-', 'syntax', 1);
  expectFailure(tt, '1.', 'syntax', 2);
  expectFailure(tt, '[1.]', 'syntax', 3);
  expectFailure(tt, '.5', 'syntax', 0);
  expectFailure(tt, '1e', 'syntax', 2);
  expectFailure(tt, '1e+', 'syntax', 3);
  expectFailure(tt, '1E-x', 'syntax', 3);
  expectFailure(tt, '1.e5', 'syntax', 2);
  expectFailure(tt, '- 1', 'syntax', 1);
  expectFailure(tt, '--1', 'syntax', 1);
  expectFailure(tt, '1x', 'syntax', 1);
});

t.test('leading zeros are syntax errors', async (tt) => {
  expectFailure(tt, '01', 'syntax', 1);
  expectFailure(tt, '-01', 'syntax', 2);
  expectFailure(tt, '00', 'syntax', 1);
  expectFailure(tt, '[00]', 'syntax', 2);
  expectFailure(tt, '{"a":007}', 'syntax', 6);
  tt.equal(expectOk(tt, '0').value, 0);
  tt.equal(expectOk(tt, '0.01').value, 0.01);
  tt.equal(expectOk(tt, '0e5').canonical, '0e5');
  tt.equal(expectOk(tt, '10').value, 10);
});

t.test('a number that is not finite as a JS number is out of range', async (tt) => {
  expectFailure(tt, '1e400', 'number_out_of_range', 0);
  expectFailure(tt, '-1e400', 'number_out_of_range', 0);
  expectFailure(tt, '[1, 2e308]', 'number_out_of_range', 4);
  expectFailure(tt, '{"a":' + '9'.repeat(400) + '}', 'number_out_of_range', 5);
  // Past 2^53 every double is an integer: no request member takes one, and the schema refuses it.
  tt.equal(expectOk(tt, '1.7976931348623157e308').value, Number.MAX_VALUE);
  tt.equal(expectOk(tt, '123456789012345678901234567890').canonical, '123456789012345678901234567890');
});

t.test('a number that reads as an integer it does not denote is inexact_integer', async (tt) => {
  expectFailure(tt, '1e-400', 'inexact_integer', 0);
  expectFailure(tt, '-1e-400', 'inexact_integer', 0);
  expectFailure(tt, '[4.9999999999999999]', 'inexact_integer', 1);
  expectFailure(tt, '{"a":9007199254740993}', 'inexact_integer', 5);
  expectFailure(tt, '-9007199254740992.4', 'inexact_integer', 0);
  expectFailure(tt, '0.9999999999999999999e1', 'inexact_integer', 0);
  // Integers written any way that names them exactly are read.
  for (const [text, value] of [
    ['0', 0], ['-0', -0], ['0.000', 0], ['0e999999999999999999999', 0], ['5.0', 5], ['1E2', 100], ['1.5e1', 15],
    ['10e-1', 1], ['1000e-3', 1], ['-12.500e1', -125], ['9007199254740992', 2 ** 53], ['9007199254740993e-1', 900719925474099.3],
    ['-999999999999999', -999999999999999], ['9.007199254740992e15', 2 ** 53], ['-90071992547409920e-1', -(2 ** 53)],
    [`0.${'0'.repeat(5000)}1e5001`, 1],
  ] as const) {
    tt.equal(expectOk(tt, text).value, value, `${text.length > 40 ? `${text.slice(0, 20)}...` : text} reads exactly`);
  }
  // As long as a request body allows: the digits are looked at once each.
  expectFailure(tt, `1.${'0'.repeat(131_000)}1`, 'inexact_integer', 0);
  tt.equal(expectOk(tt, `1.${'0'.repeat(131_000)}`).value, 1, '1.000... names 1 exactly');
  tt.equal(expectOk(tt, `${'0'.repeat(1)}.${'0'.repeat(131_000)}e999`).value, 0);
  // Numbers that are not integers are read as JSON.parse reads them (no integer member takes them).
  tt.equal(expectOk(tt, '0.1').value, 0.1);
  tt.equal(expectOk(tt, '4.99999999999999').value, 4.99999999999999);
});

t.test('negative zero parses to -0 and keeps its lexeme', async (tt) => {
  const result = expectOk(tt, '-0');
  tt.ok(Object.is(result.value, -0), 'value is -0');
  tt.equal(result.canonical, '-0');
  tt.not(canonicalOf('-0'), canonicalOf('0'));
  tt.equal(canonicalOf('-0.0e0'), '-0.0e0');
});

t.test('raw control characters inside strings are syntax errors', async (tt) => {
  for (let c = 0; c < 0x20; c++) {
    expectFailure(tt, `"a${String.fromCharCode(c)}b"`, 'syntax', 2);
  }
  expectFailure(tt, '{"a\nb":1}', 'syntax', 3);
  // DEL and the Unicode line separators are not control characters in JSON's sense.
  tt.equal(expectOk(tt, '"\u007f\u2028\u2029\u0085"').value, '\u007f\u2028\u2029\u0085');
});

t.test('all RFC 8259 escapes decode', async (tt) => {
  const result = expectOk(tt, String.raw`"\"\\\/\b\f\n\r\t\u0041\u00e9\u00E9\uABcd"`);
  tt.equal(result.value, '"\\/\b\f\n\r\t\u0041éé\uabcd');
  tt.equal(result.canonical, JSON.stringify('"\\/\b\f\n\r\t\u0041éé\uabcd'));
});

t.test('unknown or malformed escapes are syntax errors', async (tt) => {
  for (const text of [String.raw`"\x41"`, String.raw`"\'"`, String.raw`"\a"`, String.raw`"\U0041"`, String.raw`"\0"`, String.raw`"\u12"`, String.raw`"\u12G4"`, String.raw`"\u 123"`, String.raw`"\u{41}"`, '"\\\n"']) {
    expectFailure(tt, text, 'syntax', 1);
  }
  expectFailure(tt, '"\\', 'syntax', 2);
  expectFailure(tt, '"\\u00', 'syntax', 1);
});

t.test('an escaped U+0000 fails as nul_character at its escape (SQLite ends text at a NUL); a raw one is a syntax error', async (tt) => {
  expectFailure(tt, String.raw`"\u0000"`, 'nul_character', 1);
  expectFailure(tt, String.raw`["ok", "ab\u0000"]`, 'nul_character', 10);
  expectFailure(tt, String.raw`{"\u0000": 1}`, 'nul_character', 2);
  expectFailure(tt, '"a\u0000"', 'syntax', 2);
  tt.equal(expectOk(tt, String.raw`"\u0001"`).value, '\u0001', 'other control characters are fine escaped');
});

t.test('a lone surrogate or U+0000 in a value is located by pointer too; in a member name, by offset only', async (tt) => {
  const pointerOf = (text: string) => {
    const result = readJson(text);
    return result.ok ? 'parsed' : result.pointer;
  };
  tt.equal(pointerOf(String.raw`{"a": [1, {"b/c": "x\u0000"}]}`), '/a/1/b~1c');
  tt.equal(pointerOf(String.raw`["\ud800"]`), '/0');
  tt.equal(pointerOf(String.raw`"\u0000"`), '', 'the whole document');
  tt.equal(pointerOf(String.raw`{"ok": 1, "\u0000": 2}`), undefined, 'a member name');
});

t.test('a lone surrogate, escaped or raw, fails as lone_surrogate at its string (its stored value would differ)', async (tt) => {
  expectFailure(tt, String.raw`"\ud800"`, 'lone_surrogate', 0);
  expectFailure(tt, String.raw`["ok", "x\udc00y"]`, 'lone_surrogate', 7);
  expectFailure(tt, String.raw`{"\uDFFF": 1}`, 'lone_surrogate', 1);
  expectFailure(tt, String.raw`"\ude00\ud83d"`, 'lone_surrogate', 0);
  expectFailure(tt, '["\ud800"]', 'lone_surrogate', 1);
  const pair = expectOk(tt, String.raw`["\ud83d\ude00", "\uD83D\uDE00x", "😀"]`);
  tt.strictSame(pair.value, ['😀', '😀x', '😀'], 'escaped and raw pairs are characters');
});

t.test('unicode member names and escapes round-trip', async (tt) => {
  const result = expectOk(tt, String.raw`{"\ud83d\ude00":"😀","é":"\u00e9","中文":"\u4e2D\u6587","k":"\u2028"}`);
  const value = result.value;
  if (!isRecord(value)) return tt.fail('not an object');
  tt.equal(value['😀'], '😀');
  tt.equal(value['é'], 'é');
  tt.equal(value['中文'], '中文');
  tt.equal(value['k'], '\u2028');
  tt.equal(result.canonical, '{"k":"\u2028","é":"é","中文":"中文","😀":"😀"}');
  // The same document sent as UTF-8 bytes gives the same answer.
  const fromBytes = expectOk(tt, utf8('{"😀":"😀","é":"é","中文":"中文","k":"\u2028"}'));
  tt.equal(fromBytes.canonical, result.canonical);
  tt.strictSame(fromBytes.value, value);
});

t.test('unterminated strings, arrays and objects are syntax errors at the end of input', async (tt) => {
  for (const text of ['"abc', '"', '[', '[1', '[1,2', '[1,', '{', '{"a"', '{"a":', '{"a":1', '{"a":1,', '[{"a":[1']) {
    expectFailure(tt, text, 'syntax', text.length);
  }
});

t.test('the first problem in text order is the one reported', async (tt) => {
  expectFailure(tt, '[1e400,]', 'number_out_of_range', 1);
  expectFailure(tt, '[1,]1e400', 'syntax', 3);
  expectFailure(tt, '{"a":1,"a":2', 'duplicate_member', 7);
  expectFailure(tt, '{"a":1 "a":2}', 'syntax', 7);
  expectFailure(tt, '[[[' + ']', 'too_deep', 2, { maxDepth: 2 });
});

t.test('structural mistakes are syntax errors at the offending character', async (tt) => {
  expectFailure(tt, '{"a" 1}', 'syntax', 5);
  expectFailure(tt, '{"a":1 "b":2}', 'syntax', 7);
  expectFailure(tt, '[1 2]', 'syntax', 3);
  expectFailure(tt, '{"a"=1}', 'syntax', 4);
  expectFailure(tt, '[}', 'syntax', 1);
  expectFailure(tt, '{]', 'syntax', 1);
  expectFailure(tt, '{"a":1]', 'syntax', 6);
  expectFailure(tt, '[1}', 'syntax', 2);
  expectFailure(tt, ']', 'syntax', 0);
});

t.test('invalid UTF-8 bytes are rejected as invalid_utf8', async (tt) => {
  expectFailure(tt, bytes(0x7b, 0xff, 0x7d), 'invalid_utf8', 1);
  // Lone continuation byte.
  expectFailure(tt, bytes(0x22, 0x80, 0x22), 'invalid_utf8', 1);
  expectFailure(tt, bytes(0x80), 'invalid_utf8', 0);
  // Overlong encodings of "/" (2 and 3 bytes) and of NUL.
  expectFailure(tt, bytes(0x22, 0xc0, 0xaf, 0x22), 'invalid_utf8', 1);
  expectFailure(tt, bytes(0x22, 0xe0, 0x80, 0xaf, 0x22), 'invalid_utf8', 1);
  expectFailure(tt, bytes(0x22, 0xc0, 0x80, 0x22), 'invalid_utf8', 1);
  expectFailure(tt, bytes(0x22, 0xf0, 0x80, 0x80, 0xaf, 0x22), 'invalid_utf8', 1);
  // UTF-8-encoded surrogate, and a code point above U+10FFFF.
  expectFailure(tt, bytes(0x22, 0xed, 0xa0, 0x80, 0x22), 'invalid_utf8', 1);
  expectFailure(tt, bytes(0x22, 0xf4, 0x90, 0x80, 0x80, 0x22), 'invalid_utf8', 1);
  expectFailure(tt, bytes(0x22, 0xf8, 0x88, 0x80, 0x80, 0x80, 0x22), 'invalid_utf8', 1);
  // Truncated sequences, in the middle and at the end.
  expectFailure(tt, bytes(0x22, 0xe2, 0x82, 0x22), 'invalid_utf8', 1);
  expectFailure(tt, bytes(0x22, 0xe2, 0x82), 'invalid_utf8', 1);
  // Offsets count decoded characters, not bytes: `["é",` is 5 characters but 6 bytes.
  expectFailure(tt, bytes(0x5b, 0x22, 0xc3, 0xa9, 0x22, 0x2c, 0xff, 0x5d), 'invalid_utf8', 5);
  // A four-byte character counts as two UTF-16 code units before the bad byte.
  expectFailure(tt, Uint8Array.from([...utf8('["😀"'), 0xfe]), 'invalid_utf8', 5);
  // Valid multi-byte input is fine.
  tt.equal(expectOk(tt, utf8('"€😀"')).value, '€😀');
});

t.test('an exact duplicate member is rejected', async (tt) => {
  expectFailure(tt, '{"a":1,"a":2}', 'duplicate_member', 7);
  expectFailure(tt, '{"a":1,"b":2,"a":1}', 'duplicate_member', 13);
  expectFailure(tt, '{"":1,"":2}', 'duplicate_member', 6);
});

t.test('a duplicate member differing only in case is rejected', async (tt) => {
  expectFailure(tt, '{"Title":1,"title":2}', 'duplicate_member', 11);
  expectFailure(tt, '{"ID":1,"iD":2}', 'duplicate_member', 8);
  expectFailure(tt, '{"É":1,"é":2}', 'duplicate_member', 7);
  // KELVIN SIGN lower-cases to a plain "k".
  expectFailure(tt, '{"k":1,"\u212a":2}', 'duplicate_member', 7);
  expectFailure(tt, '{"__proto__":1,"__PROTO__":2}', 'duplicate_member', 15);
  // Names that only collide under full case folding, not toLowerCase, are distinct.
  expectOk(tt, '{"ß":1,"SS":2}');
});

t.test('a duplicate member differing only in case is rejected at depth 3', async (tt) => {
  expectFailure(tt, '{"a":{"b":{"c":1,"C":2}}}', 'duplicate_member', 17);
});

t.test('a duplicate member failure points at the repeated member (RFC 6901)', async (tt) => {
  const cases: [string, string][] = [
    ['{"a": 1, "A": 2}', '/A'],
    ['[0, {"x": {"b": 1, "b": 2}}]', '/1/x/b'],
    ['{"a/b": [{"~": 1, "~": 2}]}', '/a~1b/0/~0'],
  ];
  for (const [text, pointer] of cases) {
    const result = readJson(text);
    tt.equal(result.ok ? undefined : result.pointer, pointer, `${text} points at ${pointer}`);
  }
  const syntax = readJson('{"a": }');
  tt.equal(syntax.ok ? 'parsed' : syntax.pointer, undefined, 'other failures have no pointer');
});

t.test('a member name spelled with escapes is a duplicate of its plain spelling', async (tt) => {
  expectFailure(tt, String.raw`{"a":1,"\u0061":2}`, 'duplicate_member', 7);
  expectFailure(tt, String.raw`{"A":1,"\u0061":2}`, 'duplicate_member', 7);
  expectFailure(tt, String.raw`{"\/":1,"/":2}`, 'duplicate_member', 8);
  expectFailure(tt, String.raw`{"😀":1,"\ud83d\ude00":2}`, 'duplicate_member', 8);
});

t.test('duplicates nested in arrays of objects are rejected, but sibling objects may share names', async (tt) => {
  expectOk(tt, '[{"a":1},{"a":2},{"A":3}]');
  expectOk(tt, '{"a":{"a":{"a":1}}}');
  expectFailure(tt, '[{"a":1},{"b":{"x":1,"X":2}}]', 'duplicate_member', 21);
  expectFailure(tt, '[[[{"id":1,"id":2}]]]', 'duplicate_member', 11);
  // The member after a nested object is still checked against the outer object's names.
  expectFailure(tt, '{"a":{"b":1},"A":{}}', 'duplicate_member', 13);
});

t.test('nesting exactly at maxDepth passes and one level more is too_deep', async (tt) => {
  const arrays = (n: number): string => '['.repeat(n) + ']'.repeat(n);
  const objects = (n: number): string => '{"a":'.repeat(n - 1) + '{}' + '}'.repeat(n - 1);
  expectOk(tt, arrays(64));
  expectFailure(tt, arrays(65), 'too_deep', 64);
  expectOk(tt, objects(64));
  expectFailure(tt, objects(65), 'too_deep', 64 * 5);
  expectOk(tt, arrays(3), { maxDepth: 3 });
  expectFailure(tt, arrays(4), 'too_deep', 3, { maxDepth: 3 });
  expectOk(tt, '[{"a":[]}]', { maxDepth: 3 });
  expectFailure(tt, '[{"a":[{}]}]', 'too_deep', 7, { maxDepth: 3 });
  // Depth counts containers only, so scalars are allowed with maxDepth 0.
  expectOk(tt, '"x"', { maxDepth: 0 });
  expectFailure(tt, '[]', 'too_deep', 0, { maxDepth: 0 });
  // Nonsensical limits fall back to the default rather than throwing.
  expectOk(tt, arrays(64), { maxDepth: Number.NaN });
  expectFailure(tt, arrays(65), 'too_deep', 64, { maxDepth: -1 });
});

t.test('hostile deep nesting never throws and fails fast', async (tt) => {
  expectFailure(tt, '['.repeat(100_000), 'too_deep', 64);
  expectFailure(tt, '{"a":'.repeat(100_000), 'too_deep', 64 * 5);
  expectFailure(tt, '[{"a":'.repeat(50_000), 'too_deep', 32 * 6);
  // With the limit lifted the reader is iterative, so depth is bounded by input, not the call stack.
  expectFailure(tt, '['.repeat(100_000), 'syntax', 100_000, { maxDepth: Infinity });
  const deep = '['.repeat(100_000) + ']'.repeat(100_000);
  const result = expectOk(tt, deep, { maxDepth: Infinity });
  tt.equal(result.canonical, deep);
});

t.test('a 131072-byte array of numbers parses', async (tt) => {
  const numbers: string[] = [];
  let length = 2;
  for (let i = 0; ; i++) {
    const lexeme = String((i * 7919) % 100_000) + (i % 3 === 0 ? '.5' : i % 3 === 1 ? 'e-3' : '');
    if (length + lexeme.length + 1 > 131_072) break;
    numbers.push(lexeme);
    length += lexeme.length + 1;
  }
  let text = '[' + numbers.join(',') + ']';
  text = text.slice(0, -1) + ' '.repeat(131_072 - text.length) + ']';
  tt.equal(utf8(text).length, 131_072);
  const result = expectOk(tt, utf8(text));
  tt.strictSame(result.value, JSON.parse(text));
  tt.equal(result.canonical, '[' + numbers.join(',') + ']');
});

t.test('a wide object of 5000 members parses', async (tt) => {
  const members: string[] = [];
  for (let i = 0; i < 5000; i++) members.push(`"member${String(4999 - i).padStart(4, '0')}":${i}`);
  const text = '{' + members.join(',') + '}';
  const result = expectOk(tt, text);
  const value = result.value;
  if (!isRecord(value)) return tt.fail('not an object');
  tt.equal(Object.keys(value).length, 5000);
  tt.equal(value['member0000'], 4999);
  tt.ok(result.canonical.startsWith('{"member0000":4999,"member0001":4998,'), 'canonical is sorted');
  expectFailure(tt, text.slice(0, -1) + ',"MEMBER0000":1}', 'duplicate_member', text.length);
});

t.test('a member named __proto__ is an own member and does not touch any prototype', async (tt) => {
  const result = expectOk(tt, '{"__proto__":{"x":1},"y":[{"__proto__":null}]}');
  const value = result.value;
  if (!isRecord(value)) return tt.fail('not an object');
  tt.ok(Object.hasOwn(value, '__proto__'), '__proto__ is an own member');
  tt.equal(Object.getPrototypeOf(value), Object.prototype, 'prototype unchanged');
  tt.strictSame(Object.getOwnPropertyDescriptor(value, '__proto__')?.value, { x: 1 });
  tt.equal((value as { x?: unknown }).x, undefined, 'x is not inherited');
  tt.equal(({} as { x?: unknown }).x, undefined, 'Object.prototype is not polluted');
  tt.same(Object.keys(value), ['__proto__', 'y']);
  const inner = (value['y'] as JsonValue[])[0]!;
  if (!isRecord(inner)) return tt.fail('not an object');
  tt.equal(Object.getPrototypeOf(inner), Object.prototype);
  tt.equal(Object.getOwnPropertyDescriptor(inner, '__proto__')?.value, null);
  tt.equal(result.canonical, '{"__proto__":{"x":1},"y":[{"__proto__":null}]}');
  // Same shape as JSON.parse, which also defines rather than assigns.
  tt.strictSame(value, JSON.parse('{"__proto__":{"x":1},"y":[{"__proto__":null}]}'));
});

t.test('constructor, toString and other prototype names are ordinary members', async (tt) => {
  const result = expectOk(tt, '{"constructor":1,"toString":"s","hasOwnProperty":null,"valueOf":[]}');
  const value = result.value;
  if (!isRecord(value)) return tt.fail('not an object');
  tt.equal(value['constructor'], 1);
  tt.equal(value['toString'], 's');
  tt.equal(value['hasOwnProperty'], null);
  tt.strictSame(value['valueOf'], []);
  tt.equal(result.canonical, '{"constructor":1,"hasOwnProperty":null,"toString":"s","valueOf":[]}');
});

t.test('canonical form sorts members at every depth and drops whitespace', async (tt) => {
  const a = canonicalOf('{"b":1,"a":[2,{"d":1,"c":2}]}');
  const b = canonicalOf('{ "a" : [2, {"c":2,"d":1}], "b":1 }');
  tt.equal(a, b);
  tt.equal(a, '{"a":[2,{"c":2,"d":1}],"b":1}');
  tt.not(canonicalOf('[1,2]'), canonicalOf('[2,1]'), 'array order is kept');
});

t.test('canonical form keeps number lexemes exactly as sent', async (tt) => {
  const forms = ['1', '1.0', '1e0', '1E0', '1e+0', '10e-1', '1.00'];
  const canonicals = forms.map((f) => canonicalOf(`{"n":${f}}`));
  tt.same(canonicals, forms.map((f) => `{"n":${f}}`));
  tt.equal(new Set(canonicals).size, forms.length, 'all distinct');
  const values = forms.map((f) => {
    const r = readJson(f);
    return r.ok ? r.value : undefined;
  });
  tt.same(values, forms.map(() => 1), 'but all the same value');
});

t.test('canonical form sorts member names by UTF-16 code unit', async (tt) => {
  const text = '{"\uffff":5,"😀":4,"é":3,"b":2,"Z":1,"":0}';
  // Code point order would put U+FFFF before U+1F600; code unit order (0xD83D) puts it after.
  tt.equal(canonicalOf(text), '{"":0,"Z":1,"b":2,"é":3,"😀":4,"\uffff":5}');
});

t.test('canonical form re-encodes strings with JSON.stringify', async (tt) => {
  tt.equal(canonicalOf(String.raw`"\u0041\/\u00e9"`), '"A/é"');
  tt.equal(canonicalOf(String.raw`{"\u0061":"\u001f"}`), String.raw`{"a":"\u001f"}`);
  tt.equal(canonicalOf(String.raw`"\uD83D\uDE00"`), '"😀"');
});

t.test('random JSON.stringify output parses to the same value as JSON.parse', async (tt) => {
  const gen = new Generator(mulberry32(0x5eed));
  let checked = 0;
  for (let i = 0; i < 400; i++) {
    const original = gen.value(4);
    const text = JSON.stringify(original);
    const expected: unknown = JSON.parse(text);
    const result = readJson(text);
    if (!result.ok) {
      tt.fail(`case ${i}: ${describe(text)} failed with ${result.failure} at ${result.offset}`);
      continue;
    }
    tt.ok(jsonEqual(result.value, expected), `case ${i}: value matches JSON.parse`, { found: describe(text) });
    tt.equal(result.canonical, referenceCanonical(expected), `case ${i}: canonical matches reference`);
    const reordered = readJson(shuffledText(original, gen));
    tt.ok(reordered.ok && reordered.canonical === result.canonical, `case ${i}: reordered text has the same canonical`);
    const fromBytes = readJson(utf8(text));
    tt.ok(fromBytes.ok && fromBytes.canonical === result.canonical, `case ${i}: UTF-8 bytes give the same canonical`);
    checked++;
  }
  tt.equal(checked, 400);
});

t.test('mutated documents are accepted only when JSON.parse accepts them, with equal values', async (tt) => {
  const gen = new Generator(mulberry32(42));
  const noise = ['', ',', ':', '"', '\\', '[', ']', '{', '}', '0', '-', '.', 'e', ' ', '\u0000', 'n', '\ufeff', '/'];
  for (let i = 0; i < 400; i++) {
    let text = JSON.stringify(gen.value(3));
    for (let edits = 1 + gen.int(3); edits > 0; edits--) {
      const at = gen.int(text.length + 1);
      text = text.slice(0, at) + gen.pick(noise) + text.slice(at + gen.int(2));
    }
    let parsed: { value: unknown } | undefined;
    try {
      parsed = { value: JSON.parse(text) };
    } catch {
      parsed = undefined;
    }
    let result: JsonReadResult;
    try {
      result = readJson(text);
    } catch (error) {
      tt.fail(`case ${i}: readJson threw ${String(error)} for ${describe(text)}`);
      continue;
    }
    if (parsed === undefined) {
      // Not necessarily `syntax`: a problem earlier in the text (say `1e400` before the stray
      // character) is reported first.
      tt.ok(!result.ok && result.failure !== 'invalid_utf8', `case ${i}: JSON.parse rejects ${describe(text)}, so readJson does too`);
    } else if (result.ok) {
      tt.ok(jsonEqual(result.value, parsed.value), `case ${i}: both accept ${describe(text)} with equal values`);
    } else {
      tt.not(result.failure, 'syntax', `case ${i}: JSON.parse accepts ${describe(text)}, so not a syntax error`);
    }
  }
});
