/**
 * One Zod schema per model answer, used twice: turned into the strict JSON schema sent as
 * the response format, and used to validate the answer. The answer is only ever parsed
 * against it; nothing else of the model's output is used.
 */
import { z } from 'zod';
import { AppError } from '../errors.ts';

/** Keywords OpenAI's strict mode does not accept; the Zod parse still enforces them. */
const UNSUPPORTED = new Set(['$schema', 'minLength', 'maxLength']);

type Json = Record<string, unknown>;

function clean(node: unknown, path: string): unknown {
  if (Array.isArray(node)) return node.map((n, i) => clean(n, `${path}/${i}`));
  if (!node || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    if (UNSUPPORTED.has(k)) continue;
    out[k] = k === 'properties' || k === '$defs' ? Object.fromEntries(Object.entries(v as Json).map(([p, s]) => [p, clean(s, `${path}/${p}`)])) : clean(v, `${path}/${k}`);
  }
  const props = out.properties as Json | undefined;
  if (out.type === 'object' || props) {
    // Strict mode: every property required and no others allowed. Refuse to build otherwise.
    const required = (out.required as string[] | undefined) ?? [];
    const missing = Object.keys(props ?? {}).filter((k) => !required.includes(k));
    if (out.additionalProperties !== false || missing.length) {
      throw new Error(`schema at ${path || '/'} is not strict: additionalProperties must be false and every property required (${missing.join(', ')})`);
    }
  }
  return out;
}

/** The strict-mode JSON schema of a Zod object schema (built once, at start-up). */
export function strictJsonSchema(schema: z.ZodType): Json {
  return clean(z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' }), '') as Json;
}

/** Parses the model's text against the schema; anything else is AI_REQUEST_FAILED. */
export function parseAnswer<T extends z.ZodType>(schema: T, text: string | null): z.infer<T> {
  if (text === null) throw new AppError('AI_REQUEST_FAILED');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new AppError('AI_REQUEST_FAILED', { cause: err });
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new AppError('AI_REQUEST_FAILED', { cause: new Error(`answer does not match the schema (${parsed.error.issues.length} issues)`) });
  return parsed.data;
}
