/**
 * GET /openapi.json: trpc-to-openapi's document, post-processed so every operation
 * documents the spec's error envelope (not the stock error body), 201/204 successes are
 * right, and the plain routes (/health, /, OAuth redirects) are listed too.
 */
import { generateOpenApiDocument } from 'trpc-to-openapi';
import type { Meta } from '../trpc/init.ts';
import { procedureMeta, type AppRouter } from '../trpc/routers/index.ts';
import { z } from 'zod';
import { ERROR_CODES, ERROR_TABLE, type ErrorCode } from '../../shared/errors.ts';
import { healthReport } from '../../shared/schemas/system.ts';

type Doc = ReturnType<typeof generateOpenApiDocument>;
type Json = Record<string, any>;

const envelopeSchema = {
  type: 'object',
  required: ['error'],
  properties: {
    error: {
      type: 'object',
      required: ['code', 'message', 'requestId'],
      properties: {
        code: { type: 'string', enum: ERROR_CODES },
        message: { type: 'string' },
        requestId: { type: 'string' },
        details: {
          type: 'object',
          properties: {
            issues: {
              type: 'array',
              items: { type: 'object', required: ['path', 'code'], properties: { path: { type: 'string' }, code: { type: 'string' } } },
            },
          },
        },
      },
    },
  },
};

/** The route facts of each REST operation (`METHOD /path`), from its procedure's meta. */
function operationFacts(router: AppRouter): Map<string, Meta> {
  const facts = new Map<string, Meta>();
  const procedures = router._def.procedures as unknown as Record<string, { _def: { meta?: Meta } }>;
  for (const { _def } of Object.values(procedures)) {
    const op = _def.meta?.openapi;
    if (op) facts.set(`${op.method} ${op.path}`, _def.meta!);
  }
  return facts;
}

export function buildOpenApiDocument(router: AppRouter, opts: { baseUrl: string }): Doc {
  const facts = operationFacts(router);
  const doc = generateOpenApiDocument(router, {
    title: 'Mail Inbox Assistant API',
    version: '1.0.0',
    baseUrl: opts.baseUrl,
    description: 'Read-only inbox sync with AI triage and reply drafts. Every error uses the envelope ErrorEnvelope.',
    securitySchemes: {
      session: { type: 'apiKey', in: 'cookie', name: 'mia_session' },
      statusAdmin: { type: 'http', scheme: 'bearer' },
    },
  }) as Json;
  doc.components ??= {};
  doc.components.schemas = { ...(doc.components.schemas ?? {}), ErrorEnvelope: envelopeSchema, HealthReport: z.toJSONSchema(healthReport, { target: 'openapi-3.0' }) };
  delete doc.components.responses;
  const ref = { $ref: '#/components/schemas/ErrorEnvelope' };
  // DELETE /auth/account is a plain route over the auth.deleteAccount procedure.
  const errorsOf = (key: string): readonly ErrorCode[] =>
    (key === 'DELETE /auth/account' ? procedureMeta('auth.deleteAccount') : facts.get(key))?.errors ?? [];
  const errorResponses = (key: string, responses: Json): Json => {
    const codes = new Set<ErrorCode>(['RATE_LIMITED', 'INTERNAL_ERROR', ...errorsOf(key)]);
    const byStatus = new Map<number, string[]>();
    for (const code of codes) {
      const { status } = ERROR_TABLE[code];
      byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
    }
    for (const [status, list] of [...byStatus].sort((a, b) => a[0] - b[0])) {
      responses[String(status)] = { description: list.join(', '), content: { 'application/json': { schema: ref } } };
    }
    return responses;
  };
  for (const [path, item] of Object.entries(doc.paths ?? {}) as [string, Json][]) {
    for (const [method, op] of Object.entries(item) as [string, Json][]) {
      const key = `${method.toUpperCase()} ${path}`;
      const ok = op.responses?.['200'];
      const responses: Json = {};
      const success = facts.get(key)?.successStatus;
      if (success === 204) responses['204'] = { description: 'No Content' };
      else if (success === 201) responses['201'] = { ...ok, description: 'Created' };
      else responses['200'] = ok;
      op.responses = errorResponses(key, responses);
      const codes = errorsOf(key);
      op.security = codes.includes('AUTH_REQUIRED') ? [{ session: [] }] : codes.includes('FORBIDDEN') ? [{ statusAdmin: [] }] : [];
    }
  }
  const plain = (summary: string, responses: Json) => ({ summary, tags: ['system'], responses });
  doc.paths['/health'] = {
    get: plain('Health probe (any origin)', {
      200: { description: 'Health report', content: { 'application/json': { schema: { $ref: '#/components/schemas/HealthReport' } } } },
      503: { description: 'Database unreachable; the body is still the health report', content: { 'application/json': { schema: { $ref: '#/components/schemas/HealthReport' } } } },
    }),
  };
  doc.paths['/auth/account'] = {
    delete: {
      operationId: 'auth-deleteAccount',
      summary: 'Delete the account and all its data',
      tags: ['auth'],
      security: [{ session: [] }],
      requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', required: ['confirm'], additionalProperties: false, properties: { confirm: { type: 'boolean', enum: [true] } } } } } },
      responses: errorResponses('DELETE /auth/account', { 204: { description: 'No Content' } }),
    },
  };
  doc.paths['/'] = { get: plain('Human-facing status page (HTML)', { 200: { description: 'HTML', content: { 'text/html': { schema: { type: 'string' } } } } }) };
  doc.paths['/auth/provider'] = {
    get: { ...plain('Start sign-in: redirect to the identity provider', { 302: { description: 'Redirect to the consent screen' }, 503: { description: 'SERVICE_UNAVAILABLE', content: { 'application/json': { schema: ref } } } }), tags: ['auth'] },
  };
  doc.paths['/auth/provider/callback'] = {
    get: {
      ...plain('OAuth redirect target', { 302: { description: 'Redirect to the web app with connected=1 or error=oauth_failed' }, 503: { description: 'SERVICE_UNAVAILABLE', content: { 'application/json': { schema: ref } } } }),
      tags: ['auth'],
      parameters: ['code', 'state', 'error'].map((name) => ({ name, in: 'query', required: false, schema: { type: 'string' } })),
    },
  };
  return doc as Doc;
}
