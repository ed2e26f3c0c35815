/**
 * Deterministic JSON-schema value generator used by the OpenAI stand-in.
 *
 * `sampleFromSchema(schema, { seed })` returns a value that is valid against the
 * schema for the subset of JSON Schema that structured outputs use (and that
 * zod 4's `z.toJSONSchema` emits): object/properties/required/additionalProperties,
 * enum, const, string (minLength/maxLength/format), number/integer (minimum/maximum,
 * exclusive bounds in both the draft-4 boolean and the numeric form, multipleOf),
 * boolean, null, array (items/prefixItems/minItems/maxItems/uniqueItems),
 * anyOf/oneOf (first non-null branch), allOf (shallow merge), type arrays
 * (nullable), and local `$ref`s (`#`, `#/$defs/...`, `#/definitions/...`).
 * `pattern` is not synthesised: the built-in texts happen to satisfy the patterns
 * zod emits for email/uuid/date-time formats, other patterns are not guaranteed.
 *
 * The same (schema, seed) pair always gives the same value.
 *
 * `corruptSample` turns a valid sample into one that violates the schema, and
 * `strictSchemaProblems` checks the rules OpenAI enforces for `strict: true`.
 */
import { prng } from './gmail-mailbox.ts';

export type JsonSchema = boolean | { [key: string]: unknown };

export interface SampleOptions {
  /** Seed for the deterministic choices (enum member, number, boolean, text variant). */
  seed?: number;
  /** Past this nesting depth optional parts are left out (nullable -> null, arrays -> minItems). */
  softDepth?: number;
}

type Schema = { [key: string]: unknown };

interface Ctx {
  root: unknown;
  rng: () => number;
  softDepth: number;
}

const HARD_DEPTH = 48;

/** FNV-1a 32-bit hash, used to derive a seed from a request. */
export function hashString(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** mulberry32 PRNG: small, deterministic, good enough for picking samples (shared with the mailbox seed). */
export const seededRandom = prng;

export function sampleFromSchema(schema: unknown, opts: SampleOptions = {}): unknown {
  const ctx: Ctx = { root: schema, rng: seededRandom(opts.seed ?? 1), softDepth: opts.softDepth ?? 8 };
  return gen(schema, ctx, undefined, 0);
}

function isObj(v: unknown): v is Schema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function pick<T>(items: readonly T[], rng: () => number): T {
  return items[Math.floor(rng() * items.length) % items.length];
}

// ---------------------------------------------------------------------------
// $ref / allOf handling

function resolvePointer(root: unknown, ref: string): unknown {
  if (ref === '#' || ref === '') return root;
  if (!ref.startsWith('#/')) return undefined;
  let cur: unknown = root;
  for (const raw of ref.slice(2).split('/')) {
    const token = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) cur = cur[Number(token)];
    else if (isObj(cur)) cur = cur[token];
    else return undefined;
  }
  return cur;
}

/** Follows `$ref` chains (siblings of `$ref` are layered over the target) and merges `allOf`. */
export function resolveSchema(schema: unknown, root: unknown, seen: Set<string> = new Set()): unknown {
  if (!isObj(schema)) return schema;
  let s: Schema = schema;
  if (typeof s.$ref === 'string') {
    const ref = s.$ref;
    if (seen.has(ref)) return {};
    const target = resolveSchema(resolvePointer(root, ref), root, new Set([...seen, ref]));
    const { $ref: _ignored, ...siblings } = s;
    s = isObj(target) ? { ...target, ...siblings } : target === false ? { not: {} } : siblings;
  }
  if (Array.isArray(s.allOf)) {
    const { allOf, ...rest } = s;
    let merged: Schema = rest;
    for (const part of allOf) {
      const r = resolveSchema(part, root, seen);
      if (isObj(r)) merged = mergeSchemas(merged, r);
    }
    s = merged;
  }
  return s;
}

function mergeSchemas(a: Schema, b: Schema): Schema {
  const out: Schema = { ...a, ...b };
  if (isObj(a.properties) || isObj(b.properties)) {
    out.properties = { ...(isObj(a.properties) ? a.properties : {}), ...(isObj(b.properties) ? b.properties : {}) };
  }
  if (Array.isArray(a.required) || Array.isArray(b.required)) {
    out.required = [...new Set([...(asArray(a.required) as string[]), ...(asArray(b.required) as string[])])];
  }
  for (const k of ['minimum', 'exclusiveMinimum', 'minLength', 'minItems']) {
    if (typeof a[k] === 'number' && typeof b[k] === 'number') out[k] = Math.max(a[k] as number, b[k] as number);
  }
  for (const k of ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems']) {
    if (typeof a[k] === 'number' && typeof b[k] === 'number') out[k] = Math.min(a[k] as number, b[k] as number);
  }
  if (a.additionalProperties === false || b.additionalProperties === false) out.additionalProperties = false;
  return out;
}

function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

// ---------------------------------------------------------------------------
// generation

function allowsNull(s: Schema): boolean {
  if (s.type === 'null') return true;
  if (Array.isArray(s.type) && s.type.includes('null')) return true;
  if (Array.isArray(s.enum) && s.enum.includes(null)) return true;
  for (const k of ['anyOf', 'oneOf']) {
    if (Array.isArray(s[k]) && (s[k] as unknown[]).some((b) => isObj(b) && b.type === 'null')) return true;
  }
  return false;
}

function isNullBranch(b: unknown): boolean {
  return isObj(b) && (b.type === 'null' || (Array.isArray(b.enum) && b.enum.length === 1 && b.enum[0] === null));
}

function gen(raw: unknown, ctx: Ctx, name: string | undefined, depth: number): unknown {
  if (raw === true || raw === undefined) return textFor(name, {}, ctx.rng);
  if (raw === false) return null; // nothing is valid; best effort
  const s = resolveSchema(raw, ctx.root);
  if (!isObj(s)) return textFor(name, {}, ctx.rng);
  const deep = depth >= ctx.softDepth;
  if (depth >= HARD_DEPTH) return null;
  if (deep && allowsNull(s)) return null;

  if ('const' in s) return s.const;
  if (Array.isArray(s.enum) && s.enum.length > 0) {
    const nonNull = s.enum.filter((v) => v !== null);
    return pick(nonNull.length > 0 ? nonNull : s.enum, ctx.rng);
  }

  for (const k of ['anyOf', 'oneOf'] as const) {
    const branches = s[k];
    if (Array.isArray(branches) && branches.length > 0) {
      const { [k]: _ignored, ...siblings } = s;
      const branch = branches.find((b) => !isNullBranch(b)) ?? branches[0];
      const resolved = resolveSchema(branch, ctx.root);
      return gen(isObj(resolved) ? { ...siblings, ...resolved } : resolved, ctx, name, depth);
    }
  }

  let type: unknown = s.type;
  if (Array.isArray(type)) {
    const nonNull = type.filter((t) => t !== 'null');
    type = nonNull.length > 0 ? nonNull[0] : 'null';
  }
  if (typeof type !== 'string') type = inferType(s);

  switch (type) {
    case 'object':
      return genObject(s, ctx, depth, deep);
    case 'array':
      return genArray(s, ctx, name, depth, deep);
    case 'string':
      return genString(s, name, ctx.rng);
    case 'number':
      return genNumber(s, false, ctx.rng);
    case 'integer':
      return genNumber(s, true, ctx.rng);
    case 'boolean':
      return ctx.rng() < 0.5;
    case 'null':
      return null;
    default:
      return textFor(name, s, ctx.rng);
  }
}

function inferType(s: Schema): string {
  if ('properties' in s || 'required' in s || 'additionalProperties' in s) return 'object';
  if ('items' in s || 'prefixItems' in s || 'minItems' in s || 'maxItems' in s) return 'array';
  if ('minLength' in s || 'maxLength' in s || 'pattern' in s || 'format' in s) return 'string';
  if ('minimum' in s || 'maximum' in s || 'exclusiveMinimum' in s || 'exclusiveMaximum' in s || 'multipleOf' in s)
    return 'number';
  return 'string';
}

function genObject(s: Schema, ctx: Ctx, depth: number, deep: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const props = isObj(s.properties) ? s.properties : {};
  const required = new Set(asArray(s.required).filter((k): k is string => typeof k === 'string'));
  for (const [key, propSchema] of Object.entries(props)) {
    if (deep && !required.has(key)) continue;
    out[key] = gen(propSchema, ctx, key, depth + 1);
  }
  const extraSchema = s.additionalProperties === undefined ? true : s.additionalProperties;
  for (const key of required) {
    if (!(key in out)) out[key] = gen(extraSchema === false ? true : extraSchema, ctx, key, depth + 1);
  }
  const minProps = typeof s.minProperties === 'number' ? s.minProperties : 0;
  for (let i = 1; Object.keys(out).length < minProps && extraSchema !== false && i < 1000; i++) {
    const key = `extra_${i}`;
    if (!(key in out)) out[key] = gen(extraSchema, ctx, key, depth + 1);
  }
  return out;
}

function singular(name: string | undefined): string | undefined {
  if (!name) return undefined;
  if (/ies$/i.test(name)) return name.slice(0, -3) + 'y';
  if (/[^s]s$/i.test(name)) return name.slice(0, -1);
  return name;
}

function genArray(s: Schema, ctx: Ctx, name: string | undefined, depth: number, deep: boolean): unknown[] {
  const prefix = asArray(s.prefixItems);
  const minItems = typeof s.minItems === 'number' ? s.minItems : 0;
  const maxItems = typeof s.maxItems === 'number' ? s.maxItems : Infinity;
  const itemsAllowed = s.items !== false;
  let count = Math.max(minItems, deep ? 0 : Math.max(prefix.length, 1));
  if (!itemsAllowed) count = Math.min(count, prefix.length);
  count = Math.min(count, maxItems);
  const itemName = singular(name);
  const out: unknown[] = [];
  const seen = new Set<string>();
  for (let i = 0; i < count; i++) {
    const itemSchema = i < prefix.length ? prefix[i] : s.items;
    let value = gen(itemSchema, ctx, itemName, depth + 1);
    if (s.uniqueItems === true) {
      for (let attempt = 0; seen.has(JSON.stringify(value)) && attempt < 20; attempt++) {
        value = makeDistinct(itemSchema, ctx, itemName, depth, i, attempt, value);
      }
      seen.add(JSON.stringify(value));
    }
    out.push(value);
  }
  return out;
}

function makeDistinct(
  itemSchema: unknown,
  ctx: Ctx,
  name: string | undefined,
  depth: number,
  index: number,
  attempt: number,
  previous: unknown,
): unknown {
  const r = resolveSchema(itemSchema, ctx.root);
  if (isObj(r) && Array.isArray(r.enum)) return r.enum[(index + attempt) % r.enum.length];
  if (typeof previous === 'string') {
    const max = isObj(r) && typeof r.maxLength === 'number' ? r.maxLength : Infinity;
    const suffix = ` ${index + attempt + 1}`;
    return (previous.length + suffix.length <= max ? previous : previous.slice(0, Math.max(0, max - suffix.length))) + suffix;
  }
  return gen(itemSchema, ctx, name, depth + 1);
}

// ---------------------------------------------------------------------------
// strings

const TEXTS: Record<string, readonly string[]> = {
  subject: ['Re: Quick follow-up', 'Re: Meeting next week', 'Re: Your request'],
  body: [
    'Hi,\n\nThanks for your message. I will look into it and get back to you by Friday.\n\nBest regards',
    'Hello,\n\nThank you for the update. The proposed time works for me.\n\nKind regards',
  ],
  text: ['Thanks for your message.'],
  content: ['Thanks for your message.'],
  message: ['Thanks for your message.'],
  language: ['en'],
  lang: ['en'],
  locale: ['en-US'],
  reason: [
    'The sender asks for a decision before a deadline.',
    'The message is an automated notification with no question.',
    'A colleague requests feedback on a document.',
  ],
  rationale: ['The sender asks for a decision before a deadline.'],
  explanation: ['The sender asks for a decision before a deadline.'],
  suggestedaction: ['Reply to confirm the meeting time.', 'Archive the message.', 'Review the attached document.'],
  action: ['Reply to confirm the meeting time.'],
  summary: ['The sender asks to reschedule the meeting.'],
  name: ['Alex Doe'],
  title: ['Sample title'],
  email: ['alex@example.com'],
  tone: ['friendly'],
  category: ['general'],
};

function humanize(name: string): string {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .replace(/[_-]+/g, ' ')
    .trim()
    .toLowerCase();
}

function textFor(name: string | undefined, _s: Schema, rng: () => number): string {
  const key = (name ?? '').replace(/[_\s-]/g, '').toLowerCase();
  const known = TEXTS[key];
  if (known) return pick(known, rng);
  return name ? `Sample ${humanize(name)}` : 'Sample text';
}

function hex(rng: () => number, n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) out += Math.floor(rng() * 16).toString(16);
  return out;
}

function formatted(format: string, rng: () => number): string | undefined {
  switch (format) {
    case 'email':
    case 'idn-email':
      return 'alex@example.com';
    case 'date-time':
      return '2025-01-15T09:30:00.000Z';
    case 'date':
      return '2025-01-15';
    case 'time':
      return '09:30:00';
    case 'duration':
      return 'P1D';
    case 'uri':
    case 'url':
    case 'iri':
      return 'https://example.com/sample';
    case 'uri-reference':
    case 'iri-reference':
      return '/sample';
    case 'hostname':
    case 'idn-hostname':
      return 'example.com';
    case 'ipv4':
      return '192.0.2.1';
    case 'ipv6':
      return '2001:db8::1';
    case 'uuid':
      return `${hex(rng, 8)}-${hex(rng, 4)}-4${hex(rng, 3)}-${'89ab'[Math.floor(rng() * 4)]}${hex(rng, 3)}-${hex(rng, 12)}`;
    default:
      return undefined;
  }
}

function genString(s: Schema, name: string | undefined, rng: () => number): string {
  let text = (typeof s.format === 'string' ? formatted(s.format, rng) : undefined) ?? textFor(name, s, rng);
  const min = typeof s.minLength === 'number' ? s.minLength : 0;
  const max = typeof s.maxLength === 'number' ? s.maxLength : Infinity;
  if (text.length < min) {
    const filler = ' lorem ipsum dolor sit amet';
    while (text.length < min) text += filler;
  }
  if (text.length > max) text = text.slice(0, max);
  if (text.length < min) text = text.padEnd(min, 'x');
  return text;
}

// ---------------------------------------------------------------------------
// numbers

interface Bounds {
  lo: number;
  hi: number;
  loEx: boolean;
  hiEx: boolean;
}

function bounds(s: Schema): Bounds {
  let lo = -Infinity;
  let hi = Infinity;
  let loEx = false;
  let hiEx = false;
  if (typeof s.minimum === 'number') lo = s.minimum;
  if (typeof s.maximum === 'number') hi = s.maximum;
  if (s.exclusiveMinimum === true) loEx = true; // draft 4 form
  if (s.exclusiveMaximum === true) hiEx = true;
  if (typeof s.exclusiveMinimum === 'number' && s.exclusiveMinimum >= lo) {
    lo = s.exclusiveMinimum;
    loEx = true;
  }
  if (typeof s.exclusiveMaximum === 'number' && s.exclusiveMaximum <= hi) {
    hi = s.exclusiveMaximum;
    hiEx = true;
  }
  return { lo, hi, loEx, hiEx };
}

/** Picks a finite window inside the bounds, preferring [0, 100]. */
function pickWindow(b: Bounds): [number, number] {
  const a = Math.max(b.lo, 0);
  const c = Math.min(b.hi, 100);
  if (a < c || (a === c && !(a === b.lo && b.loEx) && !(c === b.hi && b.hiEx))) return [a, c];
  if (b.hi < 0 || (b.hi === 0 && b.hiEx)) return [Math.max(b.lo, b.hi - 100), b.hi];
  return [b.lo, Math.min(b.hi, b.lo + 100)];
}

function decimals(n: number): number {
  const str = String(n);
  if (str.includes('e-')) return Number(str.split('e-')[1]);
  const dot = str.indexOf('.');
  return dot < 0 ? 0 : str.length - dot - 1;
}

function genNumber(s: Schema, integer: boolean, rng: () => number): number {
  const b = bounds(s);
  let step = typeof s.multipleOf === 'number' && s.multipleOf > 0 ? s.multipleOf : integer ? 1 : 0;
  if (integer && step > 0 && !Number.isInteger(step)) step = Math.ceil(step);
  const f = 0.05 + 0.9 * rng();

  if (step > 0) {
    let kLo = Math.ceil(b.lo / step);
    if (b.loEx && kLo * step <= b.lo) kLo++;
    let kHi = Math.floor(b.hi / step);
    if (b.hiEx && kHi * step >= b.hi) kHi--;
    let a: number;
    let c: number;
    if (Number.isFinite(kLo) || Number.isFinite(kHi)) {
      const [wa, wc] = pickWindow({ lo: kLo * step, hi: kHi * step, loEx: false, hiEx: false });
      a = Math.ceil(wa / step);
      c = Math.floor(wc / step);
    } else {
      a = 0;
      c = Math.floor(100 / step) || 1;
    }
    if (c < a) c = a;
    const k = a + Math.floor(f * (c - a + 1));
    const d = decimals(step);
    const value = Math.min(k, c) * step;
    return d > 0 ? Number(value.toFixed(d)) : value;
  }

  const [a, c] = pickWindow(b);
  if (a === c) return a;
  const ok = (v: number) => (b.loEx ? v > b.lo : v >= b.lo) && (b.hiEx ? v < b.hi : v <= b.hi);
  const raw = a + (c - a) * f;
  const rounded = Math.round(raw * 100) / 100;
  if (ok(rounded)) return rounded;
  if (ok(raw)) return raw;
  return (a + c) / 2;
}

// ---------------------------------------------------------------------------
// schema-invalid samples

/**
 * Returns a copy of `value` (a valid sample of `schema`) that violates the schema:
 * enums become 'BOGUS', bounded numbers are pushed out of range (max + 6, so a
 * 0..1 confidence becomes 7); if the schema has neither, a required property is
 * dropped, else an extra property is added, else the root type is broken.
 */
export function corruptSample(schema: unknown, value: unknown): unknown {
  const s = resolveSchema(schema, schema);
  if (!isObj(s) || !isObj(value)) return isObj(value) ? ['not', 'the', 'expected', 'shape'] : { unexpected: true };
  const out: Record<string, unknown> = { ...value };
  const props = isObj(s.properties) ? s.properties : {};
  let changed = false;
  for (const [key, raw] of Object.entries(props)) {
    if (!(key in out)) continue;
    const p = resolveSchema(raw, schema);
    if (!isObj(p)) continue;
    if (Array.isArray(p.enum) || 'const' in p) {
      const allowed = Array.isArray(p.enum) ? p.enum : [p.const];
      let bogus = 'BOGUS';
      while (allowed.includes(bogus)) bogus += '_X';
      out[key] = bogus;
      changed = true;
    } else if (p.type === 'number' || p.type === 'integer') {
      const b = bounds(p);
      if (Number.isFinite(b.hi)) {
        out[key] = b.hi + 6;
        changed = true;
      } else if (Number.isFinite(b.lo)) {
        out[key] = b.lo - 6;
        changed = true;
      }
    }
  }
  if (changed) return out;
  const required = asArray(s.required).filter((k): k is string => typeof k === 'string' && k in out);
  if (required.length > 0) {
    delete out[required[0]];
    return out;
  }
  if (s.additionalProperties === false) {
    out.unexpectedField = 'BOGUS';
    return out;
  }
  return ['not', 'the', 'expected', 'shape'];
}

// ---------------------------------------------------------------------------
// OpenAI strict-mode rules

/**
 * The rules OpenAI applies to `strict: true` structured-output schemas that a
 * service is most likely to trip over: the root must be `type: "object"`, every
 * object must set `additionalProperties: false` and list every property in
 * `required`. Returns problems in OpenAI's message style (empty when fine).
 */
export function strictSchemaProblems(schema: unknown): string[] {
  const problems: string[] = [];
  if (!isObj(schema) || schema.type !== 'object') {
    problems.push(`schema must be a JSON Schema of 'type: "object"', got 'type: "${isObj(schema) ? String(schema.type) : typeof schema}"'.`);
    return problems;
  }
  const visited = new Set<unknown>();
  const visit = (node: unknown, context: string[]): void => {
    if (!isObj(node) || visited.has(node)) return;
    visited.add(node);
    const ctxText = `In context=(${context.map((c) => `'${c}'`).join(', ')}${context.length === 1 ? ',' : ''})`;
    const isObject = node.type === 'object' || (Array.isArray(node.type) && node.type.includes('object')) || isObj(node.properties);
    if (isObject) {
      if (node.additionalProperties !== false) {
        problems.push(`${ctxText}, 'additionalProperties' is required to be supplied and to be false.`);
      }
      const keys = isObj(node.properties) ? Object.keys(node.properties) : [];
      const req = asArray(node.required);
      const missing = keys.filter((k) => !req.includes(k));
      if (missing.length > 0) {
        problems.push(
          `${ctxText}, 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing[0]}'.`,
        );
      }
    }
    if (isObj(node.properties)) {
      for (const [k, v] of Object.entries(node.properties)) visit(v, [...context, 'properties', k]);
    }
    if (isObj(node.items)) visit(node.items, [...context, 'items']);
    for (const k of ['prefixItems', 'anyOf', 'oneOf', 'allOf']) {
      asArray(node[k]).forEach((v, i) => visit(v, [...context, k, String(i)]));
    }
    for (const k of ['$defs', 'definitions']) {
      if (isObj(node[k])) for (const [name, v] of Object.entries(node[k] as Schema)) visit(v, [...context, k, name]);
    }
  };
  visit(schema, []);
  return problems;
}
