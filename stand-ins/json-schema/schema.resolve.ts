/**
 * JSON Schema plumbing shared by the sampler, the corrupter and the strict-mode check: the
 * object guard, local `$ref` resolution (`#`, `#/$defs/...`) and the shallow `allOf` merge.
 */

export type Schema = { [key: string]: unknown };

export function isObj(v: unknown): v is Schema {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

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

export function asArray(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}
