/**
 * Schema-invalid samples: turns a valid value into one its schema rejects, for the OpenAI
 * stand-in's `schema-invalid` fault.
 */
import { bounds } from './number.sample.ts';
import { asArray, isObj, resolveSchema } from './schema.resolve.ts';

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
