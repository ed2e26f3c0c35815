/**
 * The OpenAPI conformance check: an answer the server gives to a documented
 * operation (method + path template of /openapi.json) must be documented there: its status
 * listed for the operation (or covered by `2XX`-style ranges or `default`), the headers the
 * document marks required present, every documented header it sends valid, its body of a
 * documented media type and, for JSON, valid against the response's schema ($refs resolved).
 * The document is dereferenced once and each schema compiled once (ajv, JSON Schema 2020-12:
 * the dialect of OpenAPI 3.1).
 */
import SwaggerParser from '@apidevtools/swagger-parser';
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import formats from 'ajv-formats';
import type { ObservedAnswer } from '../../server/http/observe.ts';

type Json = Record<string, any>;

/** How one answer fared: the operation it was on, and what does not match (empty: it conforms). */
export interface Verdict {
  /** `METHOD /template`, as the document names the operation. */
  operation: string;
  status: number;
  problems: string[];
}

export interface ConformanceChecker {
  /** Every documented operation, `METHOD /template`. */
  readonly operations: readonly string[];
  /** The verdict on one answer; undefined when it is not to a documented operation (/trpc, OPTIONS, static assets, unknown paths). */
  check(answer: ObservedAnswer): Verdict | undefined;
}

interface Operation {
  name: string;
  method: string;
  pattern: RegExp;
  literalSegments: number;
  responses: Record<string, Json>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

/**
 * A template as a pattern matching paths the way the server routes them: letter case
 * ignored and one trailing slash allowed (koa-router and trpc-to-openapi alike), a
 * parameter one whole segment.
 */
function templatePattern(template: string): RegExp {
  const source = template
    .split(/(\{[^}]+\})/)
    .map((part) => (part.startsWith('{') ? '[^/]+' : part.replace(/[.*+?^$()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${source}/?$`, 'i');
}

function documentedOperations(doc: Json): Operation[] {
  const ops: Operation[] = [];
  for (const [template, item] of Object.entries(doc.paths ?? {}) as [string, Json][]) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const literalSegments = template.split('/').filter((s) => s && !s.startsWith('{')).length;
      ops.push({
        name: `${method.toUpperCase()} ${template}`,
        method: method.toUpperCase(),
        pattern: templatePattern(template),
        literalSegments,
        responses: op.responses ?? {},
      });
    }
  }
  // A literal segment wins over a parameter (`/a/b` before `/a/{id}`).
  return ops.sort((a, b) => b.literalSegments - a.literalSegments);
}

/** The response object that documents `status`: the exact code, its `4XX` range, else `default`. */
function responseFor(responses: Record<string, Json>, status: number): Json | undefined {
  return responses[String(status)] ?? responses[`${String(status)[0]}XX`] ?? responses.default;
}

const mediaType = (value: unknown) =>
  String(value ?? '')
    .split(';')[0]!
    .trim()
    .toLowerCase();
const isJson = (media: string) => media === 'application/json' || media.endsWith('+json');

/** ajv's errors, one short line each (paths and keywords; values only as ajv names its limits). */
export function describeErrors(errors: readonly ErrorObject[] | null | undefined, max = 5): string {
  const lines = (errors ?? [])
    .slice(0, max)
    .map(
      (e) =>
        `${e.instancePath || '(root)'} ${e.message ?? e.keyword}${e.keyword === 'additionalProperties' ? ` (${String(e.params.additionalProperty)})` : ''}`,
    );
  const more = (errors?.length ?? 0) - lines.length;
  return lines.join('; ') + (more > 0 ? `; and ${more} more` : '');
}

/** A header's text as the schema sees it: numbers for numeric schemas. */
function headerValue(raw: unknown, schema: Json | undefined): unknown {
  const text = Array.isArray(raw) ? raw.join(', ') : String(raw);
  const numeric = schema?.type === 'integer' || schema?.type === 'number';
  return numeric && /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text;
}

export async function conformanceChecker(document: Json): Promise<ConformanceChecker> {
  const doc = (await SwaggerParser.dereference(structuredClone(document) as never)) as Json;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  formats.default(ajv);
  const compiled = new WeakMap<object, ValidateFunction>();
  const validator = (schema: Json) => {
    let fn = compiled.get(schema);
    if (!fn) compiled.set(schema, (fn = ajv.compile(schema)));
    return fn;
  };
  const operations = documentedOperations(doc);

  const checkHeaders = (documented: Json, headers: ObservedAnswer['headers'], problems: string[]) => {
    for (const [name, header] of Object.entries(documented) as [string, Json][]) {
      const raw = headers[name.toLowerCase()];
      if (raw === undefined) {
        if (header.required) problems.push(`required header ${name} is missing`);
        continue;
      }
      const validate = header.schema && validator(header.schema);
      if (validate && !validate(headerValue(raw, header.schema)))
        problems.push(`header ${name}: ${describeErrors(validate.errors)}`);
    }
  };

  /** What is wrong with the body, if anything. */
  const bodyProblem = (response: Json, answer: ObservedAnswer): string | undefined => {
    const content: Json | undefined = response.content;
    if (!content) return undefined; // 204, 302: nothing documented to hold a body to
    const documentedTypes = Object.keys(content).join(', ');
    // An event stream (GET /api/mail/events) is streamed, never captured: its frames are checked by its own tests.
    if (answer.body === undefined)
      return content['text/event-stream'] ? undefined : `no body was sent (documented: ${documentedTypes})`;
    const media = mediaType(answer.headers['content-type']);
    const documented = Object.keys(content).find((m) => m.toLowerCase() === media);
    if (!documented) return `content type ${media || '(none)'} is not documented (documented: ${documentedTypes})`;
    const schema = content[documented].schema as Json | undefined;
    if (!schema) return undefined;
    let value: unknown = answer.body;
    if (isJson(media)) {
      try {
        value = JSON.parse(answer.body);
      } catch {
        return 'the body is not JSON';
      }
    }
    const validate = validator(schema);
    return validate(value) ? undefined : `body: ${describeErrors(validate.errors)}`;
  };

  return {
    operations: operations.map((o) => o.name),
    check(answer) {
      const op = operations.find((o) => o.method === answer.method && o.pattern.test(answer.path));
      if (!op) return undefined;
      const problems: string[] = [];
      const response = responseFor(op.responses, answer.status);
      if (!response) {
        problems.push(
          `status ${answer.status} is not documented (documented: ${Object.keys(op.responses).join(', ')})`,
        );
      } else {
        checkHeaders(response.headers ?? {}, answer.headers, problems);
        const body = bodyProblem(response, answer);
        if (body) problems.push(body);
      }
      return { operation: op.name, status: answer.status, problems };
    },
  };
}
