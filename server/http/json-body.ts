/**
 * Reading a request's JSON body, once for every route that takes one (the REST mount and
 * DELETE /auth/account): bounded in size, an object (the API's bodies all are; trpc-to-
 * openapi would spread `[]`, `5` or `null` into an empty input), and bounded in depth.
 */
import type { IncomingMessage } from 'node:http';
import parse from 'co-body';
import { invalidInput } from '../domain/errors.ts';

export const BODY_LIMIT_BYTES = 64 * 1024;

/**
 * The input a route passes on when the request's body could not be read: an object with a
 * key no input has, so every procedure refuses it at input validation — after its rate
 * limit, session and CSRF checks. The route then reports the body's own problem in place of
 * that refusal, so an unauthenticated caller gets 401 whatever its body.
 */
export const UNREADABLE_BODY: Readonly<Record<string, unknown>> = Object.freeze({ '(unreadable body)': true });

/** Deepest nesting a body may have: the API's bodies are a few levels deep at most. */
export const MAX_BODY_DEPTH = 32;

/** Nesting depth of a parsed JSON value, without recursion (the value may be thousands deep). */
export function jsonDepth(value: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (!v || typeof v !== 'object') continue;
    if (d > max) max = d;
    if (max > MAX_BODY_DEPTH) return max;
    for (const child of Object.values(v)) stack.push([child, d + 1]);
  }
  return max;
}

/** The body as a JSON object; VALIDATION_FAILED (too_big, invalid_json, invalid_type, too_deep) otherwise. */
export async function readJsonObject(req: IncomingMessage): Promise<Record<string, unknown>> {
  let value: unknown;
  try {
    value = await parse.json(req, { limit: BODY_LIMIT_BYTES, strict: false });
  } catch (err) {
    throw invalidInput((err as { type?: string }).type === 'entity.too.large' ? 'too_big' : 'invalid_json');
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalidInput('invalid_type');
  // trpc-to-openapi serialises the body again (JSON.stringify, recursive): thousands of
  // levels overflowed the stack (500). No input of the API nests anywhere near this deep.
  if (jsonDepth(value) > MAX_BODY_DEPTH) throw invalidInput('too_deep');
  return value as Record<string, unknown>;
}
