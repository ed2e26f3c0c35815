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
 * This module holds the sampler's walk over the schema; strings, numbers, `$ref`s,
 * corruption and the strict-mode rules live in json-schema/.
 */
import { hashString, pick, prng } from './seeded-random.ts';
import { genNumber } from './json-schema/number.sample.ts';
import { asArray, isObj, resolveSchema, type Schema } from './json-schema/schema.resolve.ts';
import { genString, textFor } from './json-schema/string.sample.ts';

export { corruptSample } from './json-schema/schema.corrupt.ts';
export { resolveSchema } from './json-schema/schema.resolve.ts';
export { strictSchemaProblems } from './json-schema/strict-mode.rules.ts';
/** FNV-1a 32-bit hash, used to derive a seed from a request. */
export { hashString };

export type JsonSchema = boolean | { [key: string]: unknown };

export interface SampleOptions {
  /** Seed for the deterministic choices (enum member, number, boolean, text variant). */
  seed?: number;
  /** Past this nesting depth optional parts are left out (nullable -> null, arrays -> minItems). */
  softDepth?: number;
}

interface Ctx {
  root: unknown;
  rng: () => number;
  softDepth: number;
}

const HARD_DEPTH = 48;

/** mulberry32 PRNG: small, deterministic, good enough for picking samples (shared with the mailbox seed). */
export const seededRandom = prng;

export function sampleFromSchema(schema: unknown, opts: SampleOptions = {}): unknown {
  const ctx: Ctx = { root: schema, rng: seededRandom(opts.seed ?? 1), softDepth: opts.softDepth ?? 8 };
  return gen(schema, ctx, undefined, 0);
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
    return (
      (previous.length + suffix.length <= max ? previous : previous.slice(0, Math.max(0, max - suffix.length))) + suffix
    );
  }
  return gen(itemSchema, ctx, name, depth + 1);
}
