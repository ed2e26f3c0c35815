/**
 * The routes of the OpenAPI document that are not procedures' REST operations: the health
 * probe, the metrics and the status page, the browser legs of sign-in, and DELETE /auth/account (a plain
 * route over the auth.deleteAccount procedure, whose route facts it uses).
 */
import { procedureMeta } from '../trpc/routers/index.ts';
import { errorResponses, securityFor, successHeaders } from './openapi-shared.ts';

type Json = Record<string, any>;

const json = (schema: Json) => ({ 'application/json': { schema } });
const envelope = json({ $ref: '#/components/schemas/ErrorEnvelope' });

export function plainRoutes(): Json {
  const deletion = procedureMeta('auth.deleteAccount')!;
  const health = json({ $ref: '#/components/schemas/HealthReport' });
  const redirect = (description: string) => ({
    description,
    headers: {
      Location: {
        description: 'Where the browser goes next',
        required: true,
        schema: { type: 'string', format: 'uri' },
      },
      ...successHeaders,
    },
  });
  const unavailable = {
    ...errorResponses(['SERVICE_UNAVAILABLE'])['503'],
    description: 'SERVICE_UNAVAILABLE: sign-in is not configured',
  };
  const healthDown = {
    ...errorResponses(['SERVICE_UNAVAILABLE'])['503'],
    description: 'Database unreachable',
    content: health,
  };
  return {
    '/health': {
      get: {
        operationId: 'system-healthProbe',
        summary: 'Health probe (any origin)',
        description:
          'The state of the database and the providers. 503 when the database is unreachable; the body is still the report.',
        tags: ['system'],
        security: [],
        responses: {
          200: { description: 'Health report', headers: successHeaders, content: health },
          503: healthDown,
          ...errorResponses([]),
        },
      },
    },
    '/': {
      get: {
        operationId: 'system-statusPage',
        summary: 'Human-facing status page (HTML)',
        description: 'The same live state as /health, as a page.',
        tags: ['system'],
        security: [],
        responses: {
          200: {
            description: 'HTML',
            headers: successHeaders,
            content: { 'text/html': { schema: { type: 'string' } } },
          },
          ...errorResponses([]),
        },
      },
    },
    '/metrics': {
      get: {
        operationId: 'system-metrics',
        summary: 'Operational metrics (Prometheus text format)',
        description:
          "For operators' scrapers, with the metrics credential (`Authorization: Bearer <METRICS_TOKEN>`, not the status-admin one). Requests by route and status (count and duration), provider errors and quota answers by code, background sync jobs by outcome, AI tokens by operation (this instance); job queue depths, the longest sync lag and the sync backlog (the cluster, read from the database); Node process metrics (event-loop delay, memory).",
        tags: ['system'],
        security: [{ metricsScraper: [] }],
        responses: {
          200: {
            description: 'Prometheus exposition format 0.0.4',
            headers: successHeaders,
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          ...errorResponses(['FORBIDDEN']),
        },
      },
    },
    '/auth/provider': {
      get: {
        operationId: 'auth-provider',
        summary: 'Start sign-in: redirect to the identity provider',
        description: 'For a browser: answers 302 to the consent screen and sets a short-lived pre-auth cookie.',
        tags: ['auth'],
        security: [],
        responses: { 302: redirect('Redirect to the consent screen'), 503: unavailable, ...errorResponses([]) },
      },
    },
    '/auth/provider/callback': {
      get: {
        operationId: 'auth-providerCallback',
        summary: 'OAuth redirect target',
        description:
          "For the identity provider's redirect: signs in and redirects to the web app with `connected=1`, or with `error=oauth_failed`.",
        tags: ['auth'],
        security: [],
        parameters: ['code', 'state', 'error'].map((name) => ({
          name,
          in: 'query',
          required: false,
          schema: { type: 'string' },
        })),
        responses: { 302: redirect('Redirect to the web app'), 503: unavailable, ...errorResponses([]) },
      },
    },
    '/auth/account': {
      delete: {
        operationId: 'auth-deleteAccount',
        summary: 'Delete the account and all its data',
        description:
          'Stops the mail watch, revokes the grant and deletes every row of the account, then ends its sessions.',
        tags: ['auth'],
        security: securityFor(deletion.errors ?? []),
        requestBody: {
          required: true,
          content: json({
            type: 'object',
            required: ['confirm'],
            additionalProperties: false,
            properties: { confirm: { type: 'boolean', enum: [true] } },
          }),
        },
        responses: {
          204: { description: 'No Content', headers: successHeaders },
          ...errorResponses(deletion.errors ?? []),
        },
      },
    },
  };
}
