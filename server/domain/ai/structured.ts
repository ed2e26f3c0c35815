/**
 * One Zod schema per model answer, used twice: turned into the strict JSON schema sent as
 * the response format, and used to validate the answer. The answer is only ever parsed
 * against it; nothing else of the model's output is used. Its strings are cleaned as
 * strings from mail are (no U+0000, no lone surrogate) before the parse: the model may
 * echo whatever a mail held, and PostgreSQL cannot store either.
 */
import { z } from 'zod';
import { cleanMailText } from '../../providers/mail/mail-text.ts';
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
    out[k] =
      k === 'properties' || k === '$defs'
        ? Object.fromEntries(Object.entries(v as Json).map(([p, s]) => [p, clean(s, `${path}/${p}`)]))
        : clean(v, `${path}/${k}`);
  }
  const props = out.properties as Json | undefined;
  if (out.type === 'object' || props) {
    // Strict mode: every property required and no others allowed. Refuse to build otherwise.
    const required = (out.required as string[] | undefined) ?? [];
    const missing = Object.keys(props ?? {}).filter((k) => !required.includes(k));
    if (out.additionalProperties !== false || missing.length) {
      throw new Error(
        `schema at ${path || '/'} is not strict: additionalProperties must be false and every property required (${missing.join(', ')})`,
      );
    }
  }
  return out;
}

/** The strict-mode JSON schema of a Zod object schema (built once, at start-up). */
export function strictJsonSchema(schema: z.ZodType): Json {
  return clean(z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' }), '') as Json;
}

/** Every string of a parsed JSON value (keys included) cleaned; nesting beyond 32 levels is cut off. */
function cleanStrings(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return cleanMailText(value);
  if (!value || typeof value !== 'object' || depth > 32) return depth > 32 ? null : value;
  if (Array.isArray(value)) return value.map((v) => cleanStrings(v, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [cleanMailText(k), cleanStrings(v, depth + 1)]));
}

const limitsBySchema = new WeakMap<z.ZodType, Record<string, number>>();

/**
 * The answer's top-level strings cut to their schema's maxLength (on a code point). Strict
 * mode cannot send maxLength, so the model never learns it: a long answer is kept, shortened,
 * rather than refused after its tokens were charged.
 */
function boundStrings(schema: z.ZodType, value: unknown): unknown {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return value;
  let limits = limitsBySchema.get(schema);
  if (!limits) {
    const props =
      (z.toJSONSchema(schema, { io: 'input' }) as { properties?: Record<string, { maxLength?: number }> }).properties ??
      {};
    limits = Object.fromEntries(
      Object.entries(props).flatMap(([k, p]) => (typeof p.maxLength === 'number' ? [[k, p.maxLength]] : [])),
    );
    limitsBySchema.set(schema, limits);
  }
  const out = { ...(value as Record<string, unknown>) };
  for (const [k, max] of Object.entries(limits)) if (typeof out[k] === 'string') out[k] = cleanMailText(out[k], max);
  return out;
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
  const parsed = schema.safeParse(boundStrings(schema, cleanStrings(value, 0)));
  if (!parsed.success)
    throw new AppError('AI_REQUEST_FAILED', {
      cause: new Error(`answer does not match the schema (${parsed.error.issues.length} issues)`),
    });
  return parsed.data;
}
