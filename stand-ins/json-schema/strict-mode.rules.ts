/**
 * The rules OpenAI enforces on `strict: true` structured-output schemas, so the stand-in refuses
 * what the real API would (and unit tests can check the service's schemas).
 */
import { asArray, isObj, resolveSchema, type Schema } from './schema.resolve.ts';

/**
 * The rules OpenAI applies to `strict: true` structured-output schemas that a
 * service is most likely to trip over: the root must be `type: "object"`, every
 * object must set `additionalProperties: false` and list every property in
 * `required`. Returns problems in OpenAI's message style (empty when fine).
 */
export function strictSchemaProblems(schema: unknown): string[] {
  const problems: string[] = [];
  if (!isObj(schema) || schema.type !== 'object') {
    problems.push(
      `schema must be a JSON Schema of 'type: "object"', got 'type: "${isObj(schema) ? String(schema.type) : typeof schema}"'.`,
    );
    return problems;
  }
  const visited = new Set<unknown>();
  const visit = (node: unknown, context: string[]): void => {
    if (!isObj(node) || visited.has(node)) return;
    visited.add(node);
    const ctxText = `In context=(${context.map((c) => `'${c}'`).join(', ')}${context.length === 1 ? ',' : ''})`;
    const isObject =
      node.type === 'object' || (Array.isArray(node.type) && node.type.includes('object')) || isObj(node.properties);
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
