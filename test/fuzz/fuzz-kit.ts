/**
 * Building blocks of the hostile-input fuzzing: fast-check arbitraries derived from the
 * procedures' own Zod input schemas (through `z.toJSONSchema`), hand-made hostile values,
 * and the response checker every fuzzed request goes through.
 *
 * Every generated string value carries a marker (`zqx` + 8 characters, at both ends so a
 * truncated echo is caught too); an error response, a response header or a log line that
 * contains a marker echoed an input value.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { z } from 'zod';
import { ERROR_CODES, ERROR_TABLE, type ErrorCode } from '../../shared/errors.ts';

// ------------------------------------------------------------------ markers

export const MARKER_RE = /zqx[0-9a-z]{8}/g;
export const markerArb: fc.Arbitrary<string> = fc
  .integer({ min: 0, max: 36 ** 8 - 1 })
  .map((n) => `zqx${n.toString(36).padStart(8, '0')}`);
export const markersIn = (text: string): string[] => [...new Set(text.match(MARKER_RE) ?? [])];
const marked = (inner: fc.Arbitrary<string>) =>
  fc.tuple(markerArb, inner, markerArb).map(([a, s, b]) => `${a}${s}${b}`);

// ------------------------------------------------------------------ raw JSON

/** A piece of JSON text inserted verbatim by `toJson` (deep nesting, duplicate keys, escapes). */
export class RawJson {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** JSON.stringify that keeps own `__proto__` keys (from JSON.parse) and splices RawJson in. */
export function toJson(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (value === undefined) return 'null';
  if (Array.isArray(value)) return `[${value.map(toJson).join(',')}]`;
  if (value && typeof value === 'object') {
    return `{${Object.keys(value)
      .map((k) => `${JSON.stringify(k)}:${toJson((value as Record<string, unknown>)[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** An object with an own key named `key` (so `__proto__` stays a key, not the prototype). */
export function withOwnKey(base: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(base))
    Object.defineProperty(out, k, { value: base[k], enumerable: true, writable: true, configurable: true });
  Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  return out;
}

/** encodeURIComponent that also sends lone surrogates (as their CESU-8 bytes, which no decoder accepts). */
export function pctEncode(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    // A lone surrogate: encoded by hand below.
  }
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    const next = text.charCodeAt(i + 1);
    if (c >= 0xd800 && c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
      out += encodeURIComponent(text.slice(i, i + 2));
      i += 1;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      out += [0xe0 | (c >> 12), 0x80 | ((c >> 6) & 0x3f), 0x80 | (c & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join('');
    } else out += encodeURIComponent(text[i]);
  }
  return out;
}

// ------------------------------------------------------------------ hostile values

const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n));

export const HOSTILE_TEXTS = [
  '',
  ' ',
  '\t',
  '\u0000',
  'a\u0000b',
  '\ud800',
  '\udc00',
  'x\udbffy',
  '\udfff\ud800',
  '\u202e\u2066',
  '\ufeff',
  '😀',
  'e\u0301',
  '\u2028\u2029',
  '<script>alert(1)</script>',
  "' OR '1'='1",
  '"; DROP TABLE accounts; --',
  '${7*7}',
  '{{7*7}}',
  '../../../etc/passwd',
  '%00',
  '%s%n%x',
  '\r\nSet-Cookie: x=y',
  'null',
  'undefined',
  'NaN',
  'Infinity',
  '-1',
  '1e1',
  '0x10',
  '１２',
  '٣',
  'true',
  '[]',
  '{}',
  '__proto__',
  'constructor',
  'URGENT',
  'professional',
  'page_view',
  'javascript:alert(1)',
  'https://evil.example/',
  '//evil.example',
];

/** A hostile string that carries markers. */
export const hostileString: fc.Arbitrary<string> = marked(
  fc.oneof(
    fc.constantFrom(...HOSTILE_TEXTS),
    fc.string({ unit: 'binary', maxLength: 30 }),
    fc.string({ unit: 'grapheme', maxLength: 30 }),
    fc.string({ unit: codeUnit, maxLength: 30 }),
  ),
);

/** Strings around and far past every length limit of the API (60, 64, 200, 512, 2,000, 2,048, 5,000, 64 KiB). */
export const hugeString: fc.Arbitrary<string> = fc
  .tuple(
    markerArb,
    fc.constantFrom(39, 40, 41, 44, 45, 178, 179, 490, 491, 1978, 1979, 2026, 2027, 4978, 4979, 9_000, 66_000),
    fc.constantFrom('a', 'é', '😀', ' ', '\u0000'),
  )
  .map(([m, n, c]) => m + c.repeat(n) + m);

/** Numbers at and past every bound: limits 1..100, offsets 0..1e9, safe-integer edges, floats. */
export const hostileNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(
    0,
    -0,
    1,
    -1,
    1.5,
    0.1,
    19,
    20,
    21,
    99,
    100,
    101,
    59,
    60,
    61,
    63,
    64,
    65,
    1_000_000_000,
    1_000_000_001,
    2 ** 31,
    2 ** 53 - 1,
    2 ** 53 + 2,
    -(2 ** 53),
    1e308,
    -1e308,
    5e-324,
  ),
  fc.integer(),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

/** Nested arrays/objects `depth` deep, as JSON text (the client never recurses on it). */
export const deepJson = (depth: number, kind: 'array' | 'object', marker: string) =>
  new RawJson(
    kind === 'array'
      ? `${'['.repeat(depth)}${JSON.stringify(marker)}${']'.repeat(depth)}`
      : `${'{"a":'.repeat(depth)}${JSON.stringify(marker)}${'}'.repeat(depth)}`,
  );

export const PROTO_KEYS = [
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'valueOf',
  'hasOwnProperty',
  '__defineGetter__',
  'isPrototypeOf',
];

/** Objects keyed by prototype names (own keys), e.g. `{"__proto__":{"admin":true}}`. */
export const protoObject: fc.Arbitrary<unknown> = fc
  .tuple(fc.constantFrom(...PROTO_KEYS), hostileString)
  .map(([key, s]) =>
    withOwnKey(
      {},
      key,
      JSON.parse(`{"__proto__":{"admin":true,"v":${JSON.stringify(s)}},"prototype":{"polluted":${JSON.stringify(s)}}}`),
    ),
  );

/** Any hostile JSON value. */
export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 5, arbitrary: hostileString },
  { weight: 2, arbitrary: hugeString },
  { weight: 3, arbitrary: hostileNumber },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
  { weight: 2, arbitrary: fc.array(fc.oneof(hostileString, hostileNumber, fc.constant(null)), { maxLength: 5 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(hostileString, fc.constantFrom(100, 5_000, 20_000))
      .map(([s, n]) => new Array<string>(n).fill(s.slice(0, 11))),
  },
  {
    weight: 2,
    arbitrary: fc.dictionary(fc.constantFrom('a', 'b', '', 'x.y', '0', 'tone', 'threadId'), hostileString, {
      maxKeys: 3,
    }),
  },
  {
    weight: 1,
    arbitrary: fc
      .tuple(
        fc.constantFrom(10, 100, 1_000, 4_000, 12_000),
        fc.constantFrom('array' as const, 'object' as const),
        markerArb,
      )
      .map(([d, k, m]) => deepJson(d, k, m)),
  },
  { weight: 1, arbitrary: protoObject },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

/** Malformed JSON texts (and valid JSON that is no object). */
export const malformedJson: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '{',
    '{"a":',
    '[1,2',
    "{'a':1}",
    '{"a":1,}',
    'undefined',
    'NaN',
    '\ufeff{}',
    '{} trailing',
    '{"a":1}{"b":2}',
    '',
    ' ',
    '\u0000',
    '{"a":"\\ud800"}',
    '{"a":"\\u0000"}',
    'null',
    'true',
    '5',
    '"text"',
    '[]',
    '[{}]',
    '{"__proto__":{"admin":true}}',
    '{"constructor":{"prototype":{"x":1}}}',
    '{"a":1,"a":2}',
    '1'.repeat(70_000),
    '{"confirm":true,"confirm":false}',
    '{"signature":"a"}\u0000',
    '\u00ff\u00fe{',
    '{"a":1e999999}',
    '{"a":-}',
    '{"\\u0000":1}',
  ),
  markerArb.map((m) => `{"${m}":`),
  markerArb.map((m) => `["${m}"`),
  markerArb.map((m) => `${m}`),
);

// ------------------------------------------------------------------ schema -> arbitrary

type Schema = Record<string, any>;

export interface SchemaPools {
  /** UUIDs the generator should use often (own thread ids, other accounts' ids, incident ids). */
  uuids(): string[];
}

const BAD_UUIDS = [
  'not-a-uuid',
  '',
  '00000000-0000-0000-0000-00000000000',
  '7b0f7a4e-1111-4222-8333-44445555666g',
  '{7b0f7a4e-1111-4222-8333-444455556666}',
  '7b0f7a4e111142228333444455556666',
  ' 7b0f7a4e-1111-4222-8333-444455556666',
  '7b0f7a4e-1111-4222-8333-444455556666\n',
  '7b0f7a4e-1111-9222-8333-444455556666',
  '7b0f7a4e-1111-4222-c333-444455556666',
  '..',
  '%2e%2e',
  '%00',
];

/** A UUID-ish value: pooled ids, fresh random ones, the nil/max ones, upper-cased, and broken ones. */
export function uuidArb(pools: SchemaPools): fc.Arbitrary<string> {
  return fc.oneof(
    {
      weight: 4,
      arbitrary: fc.nat().map((i) => {
        const p = pools.uuids();
        return p.length ? p[i % p.length] : '7b0f7a4e-1111-4222-8333-444455556666';
      }),
    },
    { weight: 2, arbitrary: fc.uuid() },
    {
      weight: 1,
      arbitrary: fc.constantFrom('00000000-0000-0000-0000-000000000000', 'ffffffff-ffff-ffff-ffff-ffffffffffff'),
    },
    {
      weight: 1,
      arbitrary: fc.nat().map((i) => {
        const p = pools.uuids();
        return (p[i % Math.max(1, p.length)] ?? '7b0f7a4e-1111-4222-8333-444455556666').toUpperCase();
      }),
    },
    { weight: 1, arbitrary: fc.constantFrom(...BAD_UUIDS) },
    { weight: 1, arbitrary: hostileString },
  );
}

/** A string of exactly `n` code units (markers inside once it is long enough to hold them). */
function stringOfLength(n: number): fc.Arbitrary<string> {
  if (n <= 0) return fc.constant('');
  if (n < 26) return fc.string({ unit: 'grapheme-ascii', minLength: n, maxLength: n });
  return fc
    .tuple(markerArb, markerArb, fc.constantFrom('a', 'é', ' ', 'Z'))
    .map(([a, b, c]) => a + c.repeat(n - 22) + b);
}

function stringArb(s: Schema, pools: SchemaPools): fc.Arbitrary<string> {
  if (s.format === 'uuid') return uuidArb(pools);
  if (s.format === 'date-time') {
    return fc.oneof(
      fc
        .date({
          min: new Date('1970-01-01T00:00:00.000Z'),
          max: new Date('2100-01-01T00:00:00.000Z'),
          noInvalidDate: true,
        })
        .map((d) => d.toISOString()),
      fc.constantFrom(
        '2024-02-30T00:00:00.000Z',
        '2024-01-01T00:00:00Z',
        '2024-01-01',
        '0000-01-01T00:00:00.000Z',
        '9999-12-31T23:59:59.999Z',
        '2024-01-01T00:00:00.000+02:00',
      ),
      hostileString,
    );
  }
  const min = s.minLength ?? 0;
  const max = s.maxLength ?? 80;
  const lengths = [...new Set([min, Math.max(0, min - 1), max, max + 1, Math.min(max, 30)])];
  return fc.oneof(
    {
      weight: 3,
      arbitrary: fc
        .string({ unit: 'grapheme', minLength: min, maxLength: Math.min(max, 40) })
        .chain((core) =>
          core.length + 22 <= max ? markerArb.map((m) => `${m}${core}`.slice(0, max)) : fc.constant(core),
        ),
    },
    { weight: 2, arbitrary: fc.constantFrom(...lengths).chain(stringOfLength) },
    { weight: 1, arbitrary: fc.constantFrom('  x  ', ' ', '\t\n', 'en', 'fr-CA', 'Deutsch', 'zh-Hant') },
  );
}

function intArb(s: Schema, bounds?: { min?: number; max?: number }): fc.Arbitrary<number> {
  const min = bounds?.min ?? s.minimum ?? -1_000;
  const max = bounds?.max ?? s.maximum ?? 1_000;
  const edges = [min - 1, min, min + 1, max - 1, max, max + 1].filter(Number.isSafeInteger);
  return fc.oneof(
    fc.constantFrom(...edges),
    fc.integer({ min: Math.max(min, -(2 ** 31)), max: Math.min(max, 2 ** 31) }),
  );
}

/**
 * A value that is valid or nearly valid for `schema` (input side of `z.toJSONSchema`);
 * `output` is the output side, which carries the bounds of piped query integers.
 */
export function arbFromSchema(schema: Schema, pools: SchemaPools, output?: Schema, depth = 0): fc.Arbitrary<unknown> {
  if (depth > 6) return fc.constant(null);
  if ('const' in schema) return fc.constant(schema.const);
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum);
  if (Array.isArray(schema.anyOf) || Array.isArray(schema.oneOf)) {
    const branches = (schema.anyOf ?? schema.oneOf) as Schema[];
    // Query integers: an integer or its decimal text, bounded on the output side.
    if (output && (output.type === 'integer' || output.type === 'number')) {
      const ints = intArb(output, { min: output.minimum, max: output.maximum });
      return fc.oneof(
        ints,
        ints.map(String),
        fc.constantFrom('1e1', '0x10', ' 5', '5 ', '05', '+5', '1.0', '-0', '', 'abc'),
      );
    }
    return fc.oneof(...branches.map((b) => arbFromSchema(b, pools, undefined, depth + 1)));
  }
  switch (schema.type) {
    case 'object': {
      const props = (schema.properties ?? {}) as Record<string, Schema>;
      const outProps = (output?.properties ?? {}) as Record<string, Schema>;
      const required = new Set<string>(schema.required ?? []);
      const keys = Object.keys(props);
      if (!keys.length) {
        if (schema.additionalProperties && schema.additionalProperties !== false)
          return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 });
        return fc.constant({});
      }
      const model = Object.fromEntries(keys.map((k) => [k, arbFromSchema(props[k], pools, outProps[k], depth + 1)]));
      return fc.record(model, { requiredKeys: keys.filter((k) => required.has(k)) });
    }
    case 'array':
      return fc.array(
        schema.items ? arbFromSchema(schema.items, pools, undefined, depth + 1) : fc.jsonValue({ maxDepth: 1 }),
        { maxLength: (schema.maxItems ?? 4) + 1 },
      );
    case 'string':
      return stringArb(schema, pools);
    case 'integer':
      return intArb(schema);
    case 'number':
      return fc.oneof(
        fc.double({ noNaN: true, noDefaultInfinity: true, min: schema.minimum, max: schema.maximum }),
        hostileNumber,
      );
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

export interface InputSchemas {
  input: Schema;
  output: Schema;
}

/** The JSON schemas of a Zod input (both sides). */
export function inputSchemas(zodInput: z.ZodType | undefined): InputSchemas {
  if (!zodInput) return { input: {}, output: {} };
  return {
    input: z.toJSONSchema(zodInput, { io: 'input', unrepresentable: 'any' }) as Schema,
    output: z.toJSONSchema(zodInput, { io: 'output', unrepresentable: 'any' }) as Schema,
  };
}

// ------------------------------------------------------------------ mutation

/** Paths to every node of a JSON-ish value (objects and arrays), root first. */
function nodePaths(
  v: unknown,
  prefix: (string | number)[] = [],
  out: (string | number)[][] = [],
): (string | number)[][] {
  out.push(prefix);
  if (prefix.length > 4 || v instanceof RawJson) return out;
  if (Array.isArray(v)) v.slice(0, 5).forEach((x, i) => nodePaths(x, [...prefix, i], out));
  else if (v && typeof v === 'object')
    for (const k of Object.keys(v)) nodePaths((v as Record<string, unknown>)[k], [...prefix, k], out);
  return out;
}

function setAt(root: unknown, path: (string | number)[], value: unknown): unknown {
  if (!path.length) return value;
  const [head, ...rest] = path;
  if (Array.isArray(root)) {
    const copy = [...root];
    copy[head as number] = setAt(copy[head as number], rest, value);
    return copy;
  }
  const obj = root as Record<string, unknown>;
  return withOwnKey(
    Object.fromEntries(Object.entries(obj).filter(([k]) => k !== head)),
    String(head),
    setAt(obj[head as string], rest, value),
  );
}

const UNKNOWN_KEYS = [
  'unknownField',
  'extra',
  '__proto__',
  'constructor',
  'prototype',
  '',
  ' ',
  'a.b',
  'threadId ',
  'Signature',
  'id',
  'accountId',
  'userId',
  'k'.repeat(300),
];

/** Valid-ish values, and the same with a node replaced, a key added or a key removed. */
export function mutated(valid: fc.Arbitrary<unknown>): fc.Arbitrary<unknown> {
  return fc.oneof(
    { weight: 4, arbitrary: valid },
    {
      weight: 4,
      arbitrary: fc.tuple(valid, fc.nat(), hostileValue).map(([v, i, h]) => {
        const paths = nodePaths(v);
        return setAt(v, paths[i % paths.length], h);
      }),
    },
    {
      weight: 1,
      arbitrary: fc
        .tuple(valid, fc.constantFrom(...UNKNOWN_KEYS), hostileValue)
        .map(([v, k, h]) =>
          v && typeof v === 'object' && !Array.isArray(v) && !(v instanceof RawJson)
            ? withOwnKey(v as Record<string, unknown>, k, h)
            : v,
        ),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(valid, fc.nat()).map(([v, i]) => {
        if (!v || typeof v !== 'object' || Array.isArray(v) || v instanceof RawJson) return v;
        const keys = Object.keys(v);
        if (!keys.length) return v;
        const drop = keys[i % keys.length];
        return Object.fromEntries(Object.entries(v).filter(([k]) => k !== drop));
      }),
    },
    { weight: 1, arbitrary: hostileValue },
  );
}

// ------------------------------------------------------------------ headers

export const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/json;charset=UTF-16LE',
  'text/plain',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=zzz',
  'application/xml',
  'application/json, text/html',
  'application/vnd.api+json',
  'application/jsonx',
  '*/*',
  'application/json;;;',
  'json',
];

export const FORGED_COOKIES = [
  'mia_session=abc',
  'mia_session=abc; mia_session.sig=def',
  'mia_session=; mia_session.sig=',
  'mia_session=%%%; mia_session.sig=%zz',
  `mia_session=${'a'.repeat(4000)}; mia_session.sig=${'b'.repeat(27)}`,
  'mia_session',
  '=;;=;',
  'mia_session=a=b=c',
  'mia_session="quoted"; mia_session.sig="x"',
  'mia_session=x; mia_session=y',
  'mia_oauth=forged; mia_oauth.sig=forged',
  'mia_session=..%2F..%2F; mia_session.sig=AAAAAAAAAAAAAAAAAAAAAAAAAAA',
  '__proto__=x; constructor=y',
  'mia_session=\u00e9',
];

// ------------------------------------------------------------------ response checks

export interface SentRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  /** Markers carried by the request (value markers only). */
  markers: string[];
  /** A short description for failure messages. */
  label: string;
}

export interface Received {
  status: number;
  headers: Headers;
  text: string;
}

const NO_STACK = (text: string, where: string) => {
  assert.ok(!/"stack"\s*:/.test(text), `${where}: a "stack" key in ${text.slice(0, 500)}`);
  assert.ok(
    !/\bat [^\s()]+ \((?:file:|\/|node:)/.test(text) && !/\.(?:ts|js|mjs|cjs):\d+:\d+/.test(text),
    `${where}: stack frames in ${text.slice(0, 500)}`,
  );
  assert.ok(
    !/node_modules|file:\/\//.test(text) && !text.includes(process.cwd()),
    `${where}: internal paths in ${text.slice(0, 500)}`,
  );
};

function checkIssues(issues: unknown, where: string) {
  assert.ok(Array.isArray(issues), `${where}: details.issues is an array`);
  for (const issue of issues as unknown[]) {
    assert.ok(issue && typeof issue === 'object', `${where}: issue is an object`);
    assert.deepEqual(Object.keys(issue).sort(), ['code', 'path'], `${where}: issue shape ${JSON.stringify(issue)}`);
    assert.equal(typeof (issue as { path: unknown }).path, 'string', where);
    assert.equal(typeof (issue as { code: unknown }).code, 'string', where);
  }
}

function checkTrpcError(error: any, where: string, requestId: string | null): ErrorCode {
  assert.ok(error && typeof error === 'object', `${where}: tRPC error object`);
  const code = error.data?.appCode;
  assert.ok(ERROR_CODES.includes(code), `${where}: appCode ${String(code)} in the closed set`);
  assert.equal(error.message, ERROR_TABLE[code as ErrorCode].message, `${where}: fixed message`);
  assert.equal(error.data.httpStatus, ERROR_TABLE[code as ErrorCode].status, `${where}: httpStatus`);
  assert.equal(error.data.requestId, requestId, `${where}: requestId is the X-Request-Id`);
  for (const k of Object.keys(error))
    assert.ok(['code', 'message', 'data'].includes(k), `${where}: unexpected error key ${k}`);
  for (const k of Object.keys(error.data))
    assert.ok(
      ['appCode', 'requestId', 'httpStatus', 'issues', 'path'].includes(k),
      `${where}: unexpected data key ${k}`,
    );
  if (code === 'VALIDATION_FAILED') checkIssues(error.data.issues, where);
  else assert.equal(error.data.issues, undefined, `${where}: issues only for VALIDATION_FAILED`);
  return code;
}

/** Every `{"error":{...}}` object in a tRPC answer (single, batch or JSONL stream), as text. */
export function trpcErrorObjects(text: string): string[] {
  const out: string[] = [];
  let from = 0;
  for (;;) {
    const at = text.indexOf('{"error":', from);
    if (at < 0) return out;
    let depth = 0;
    let inString = false;
    let end = -1;
    for (let i = at; i < text.length; i++) {
      const ch = text[i];
      if (inString) {
        if (ch === '\\') i++;
        else if (ch === '"') inString = false;
      } else if (ch === '"') inString = true;
      else if (ch === '{' || ch === '[') depth++;
      else if (ch === '}' || ch === ']') {
        depth--;
        if (depth === 0) {
          end = i + 1;
          break;
        }
      }
    }
    if (end < 0) return out;
    out.push(text.slice(at, end));
    from = end;
  }
}

export interface CheckOptions {
  /** Exact redirect targets allowed, or prefixes ending in `?`. */
  redirects: string[];
}

export interface Outcome {
  status: number;
  /** The spec code of an error answer (REST code or tRPC appCode; for a batch, the first). */
  code?: ErrorCode;
  ok: boolean;
}

/**
 * The contract every fuzzed response must meet: success, an allowed redirect, or the spec's
 * envelope with a code of the closed set and its status; never a 500, a stack trace or an
 * echoed marker; the request id everywhere; Retry-After on 429 and 503.
 */
export function checkResponse(req: SentRequest, res: Received, opts: CheckOptions): Outcome {
  const where = `${req.label} -> ${res.status}`;
  const requestId = res.headers.get('x-request-id');
  assert.ok(requestId && requestId.length >= 8, `${where}: X-Request-Id`);
  assert.equal(res.headers.get('x-content-type-options'), 'nosniff', `${where}: nosniff`);
  assert.notEqual(
    res.status,
    500,
    `${where}: never a 500 (${res.text.slice(0, 300)}) for ${typeof req.body === 'string' ? req.body.slice(0, 300) : '(binary body)'}`,
  );
  assert.ok(res.status < 500 || [502, 503].includes(res.status), `${where}: unexpected 5xx`);
  const headerLines: string[] = [];
  res.headers.forEach((v, k) => {
    if (k !== 'set-cookie') headerLines.push(`${k}: ${v}`);
  });
  const headerText = headerLines.join('\n');
  for (const m of req.markers)
    assert.ok(!headerText.includes(m), `${where}: marker ${m} echoed in a header:\n${headerText}`);
  if (res.status === 429 || res.status === 503)
    assert.match(res.headers.get('retry-after') ?? '', /^[1-9]\d*$/, `${where}: Retry-After`);

  if (res.status >= 300 && res.status < 400) {
    assert.equal(res.status, 302, `${where}: redirects are 302`);
    const location = res.headers.get('location') ?? '';
    assert.ok(
      opts.redirects.some((r) => (r.endsWith('?') ? location.startsWith(r) : location === r)),
      `${where}: redirect target ${location}`,
    );
    return { status: res.status, ok: true };
  }
  const isTrpc = new URL(req.url).pathname.startsWith('/trpc/');
  if (isTrpc) {
    // Errors inside a batch or a JSONL stream (whatever the HTTP status): each one checked.
    for (const errText of trpcErrorObjects(res.text)) {
      for (const m of req.markers)
        assert.ok(!errText.includes(m), `${where}: marker ${m} echoed in a tRPC error ${errText.slice(0, 500)}`);
      NO_STACK(errText, where);
      checkTrpcError(JSON.parse(errText).error, where, requestId);
    }
  }
  if (res.status < 300) {
    const type = res.headers.get('content-type') ?? '';
    if (/json/.test(type) && res.text) NO_STACK(res.text, where);
    return { status: res.status, ok: true };
  }

  // An error: the envelope (REST) or the tRPC error shape (/trpc), nothing echoed.
  if (!(isTrpc && res.status === 207)) {
    for (const m of req.markers)
      assert.ok(!res.text.includes(m), `${where}: marker ${m} echoed in the error body ${res.text.slice(0, 500)}`);
  }
  NO_STACK(res.text, where);
  if (req.method === 'HEAD') return { status: res.status, ok: false };
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/, `${where}: JSON error`);
  let body: any;
  assert.doesNotThrow(() => (body = JSON.parse(res.text)), `${where}: error body is JSON: ${res.text.slice(0, 300)}`);
  if (isTrpc) {
    if (Array.isArray(body)) {
      let first: ErrorCode | undefined;
      for (const item of body) {
        assert.ok(
          item && typeof item === 'object' && ('result' in item || 'error' in item),
          `${where}: batch item shape`,
        );
        if ('error' in item) first ??= checkTrpcError(item.error, where, requestId);
      }
      return { status: res.status, code: first, ok: false };
    }
    const code = checkTrpcError(body.error, where, requestId);
    assert.equal(res.status, ERROR_TABLE[code].status, `${where}: status of ${code}`);
    return { status: res.status, code, ok: false };
  }
  assert.deepEqual(Object.keys(body), ['error'], `${where}: only "error" at the top: ${res.text.slice(0, 300)}`);
  const { error } = body;
  for (const k of Object.keys(error))
    assert.ok(['code', 'message', 'requestId', 'details'].includes(k), `${where}: unexpected key ${k}`);
  assert.ok(ERROR_CODES.includes(error.code), `${where}: code ${String(error.code)} in the closed set`);
  const code = error.code as ErrorCode;
  assert.equal(res.status, ERROR_TABLE[code].status, `${where}: status of ${code}`);
  assert.equal(error.message, ERROR_TABLE[code].message, `${where}: fixed message`);
  assert.equal(error.requestId, requestId, `${where}: requestId is the X-Request-Id`);
  if (code === 'VALIDATION_FAILED') checkIssues(error.details?.issues, where);
  else assert.equal(error.details, undefined, `${where}: details only for VALIDATION_FAILED`);
  return { status: res.status, code, ok: false };
}
