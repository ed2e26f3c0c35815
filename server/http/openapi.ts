/**
 * GET /openapi.json: trpc-to-openapi's document of the REST operations, completed from each
 * procedure's route facts (meta: success status, errors) so that a stranger can call every
 * route from it: the envelope and headers of every status the route answers, the session
 * cookie pair and CSRF header where needed, query integers with their bounds and defaults,
 * request bodies required only when they have required fields; plus the plain routes.
 */
import { generateOpenApiDocument } from 'trpc-to-openapi';
import { z } from 'zod';
import type { ErrorCode } from '../../shared/errors.ts';
import { INCIDENT_STATES } from '../../shared/schemas/status.ts';
import { healthReport } from '../../shared/schemas/system.ts';
import type { Meta } from '../trpc/init.ts';
import type { AppRouter } from '../trpc/routers/index.ts';
import { eventRoutes } from './openapi-events.ts';
import { plainRoutes } from './openapi-plain.ts';
import {
  description,
  envelopeSchema,
  errorResponses,
  headers,
  securityFor,
  securitySchemes,
  successHeaders,
  tags,
} from './openapi-shared.ts';

type Doc = ReturnType<typeof generateOpenApiDocument>;
type Json = Record<string, any>;
type Procedure = { _def: { meta?: Meta; inputs?: unknown[] } };

/** An integer query parameter's bounds and default, read from its Zod schema (default -> pipe -> int). */
function integerBounds(schema: unknown): Json | undefined {
  let s = schema as any;
  const out: Json = { type: 'integer' };
  for (let depth = 0; s && depth < 5; depth++) {
    const def = s._zod?.def;
    if (def?.type === 'default')
      out.default = typeof def.defaultValue === 'function' ? def.defaultValue() : def.defaultValue;
    if (def?.type === 'default' || def?.type === 'optional') s = def.innerType;
    else if (def?.type === 'pipe') s = def.out;
    else if (def?.type === 'number' && s.isInt) return { ...out, minimum: s.minValue, maximum: s.maxValue };
    else return undefined;
  }
  return undefined;
}

/** Completes one REST operation from its procedure. */
function completeOperation(op: Json, procedure: Procedure) {
  const meta = procedure._def.meta ?? {};
  const errors: readonly ErrorCode[] = meta.errors ?? [];
  const ok = op.responses?.['200'];
  const success: Json = {};
  if (meta.successStatus === 204) success['204'] = { description: 'No Content', headers: successHeaders };
  else
    success[String(meta.successStatus ?? 200)] = {
      ...ok,
      description: meta.successStatus === 201 ? 'Created' : 'OK',
      headers: successHeaders,
    };
  op.responses = { ...success, ...errorResponses(errors) };
  op.security = securityFor(errors, op.operationId === 'analytics-event');
  op.description ??= op.summary;
  const input = (procedure._def.inputs?.[0] as { shape?: Record<string, unknown> } | undefined)?.shape;
  for (const param of op.parameters ?? []) {
    const bounds = param.in === 'query' ? integerBounds(input?.[param.name]) : undefined;
    if (bounds) param.schema = bounds;
  }
  const body = op.requestBody?.content?.['application/json']?.schema;
  if (body && !body.required?.length) op.requestBody.required = false;
}

/** What the schemas alone cannot say: trimmed texts are not blank, components are listed once, a state belongs to its kind. */
function tightenIncidentBodies(doc: Json) {
  const incidents = doc.paths['/api/status/incidents']?.post;
  const update = doc.paths['/api/status/incidents/{id}']?.patch;
  for (const op of [incidents, update]) {
    const schema = op?.requestBody?.content?.['application/json']?.schema;
    if (!schema) continue;
    for (const field of ['title', 'message'])
      if (schema.properties?.[field]) schema.properties[field].not = { pattern: '^\\s*$' };
    if (schema.properties?.affectedComponents) schema.properties.affectedComponents.uniqueItems = true;
  }
  const create = incidents?.requestBody?.content?.['application/json'];
  if (create) {
    const { properties } = create.schema;
    const byKind = (kind: string) => ({
      required: ['kind', 'state'],
      properties: {
        kind: { enum: [kind] },
        state: { enum: properties.state.enum.filter((s: string) => kindOfState(s) === kind) },
      },
    });
    create.schema = { ...create.schema, oneOf: [byKind('incident'), byKind('maintenance')] };
  }
  if (update)
    update.description =
      "Change an incident. `state` must belong to the incident's kind (VALIDATION_FAILED `invalid_state_for_kind`).";
}
const kindOfState = (state: string) =>
  (INCIDENT_STATES.maintenance as readonly string[]).includes(state) ? 'maintenance' : 'incident';

export function buildOpenApiDocument(router: AppRouter, opts: { baseUrl: string }): Doc {
  const doc = generateOpenApiDocument(router, {
    title: 'Mail Inbox Assistant API',
    version: '1.0.0',
    baseUrl: opts.baseUrl,
    description,
    securitySchemes,
  }) as Json;
  doc.info.license = { name: 'Proprietary', url: `${opts.baseUrl}/docs` };
  doc.info.contact = { name: 'Mail Inbox Assistant operators', url: `${opts.baseUrl}/status` };
  doc.tags = tags;
  // Only the envelope describes errors: trpc-to-openapi's stock error schemas describe another shape.
  doc.components = {
    securitySchemes,
    headers,
    schemas: { ErrorEnvelope: envelopeSchema, HealthReport: z.toJSONSchema(healthReport, { target: 'openapi-3.0' }) },
  };
  const byPath = new Map<string, Procedure>();
  for (const p of Object.values(router._def.procedures as unknown as Record<string, Procedure>)) {
    const o = p._def.meta?.openapi;
    if (o) byPath.set(`${o.method} ${o.path}`, p);
  }
  for (const [path, item] of Object.entries(doc.paths ?? {}) as [string, Json][]) {
    for (const [method, op] of Object.entries(item) as [string, Json][]) {
      const procedure = byPath.get(`${method.toUpperCase()} ${path}`);
      if (procedure) completeOperation(op, procedure);
    }
  }
  tightenIncidentBodies(doc);
  Object.assign(doc.paths, plainRoutes(), eventRoutes());
  return doc as Doc;
}
