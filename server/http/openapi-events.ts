/**
 * GET /api/mail/events in the OpenAPI document: a plain route over the `mail.events`
 * subscription (trpc-to-openapi documents queries and mutations only). OpenAPI has no
 * vocabulary for a stream's items: the answer is `text/event-stream`, and each event's
 * `data` is described by the MailEvent schema (in `x-event-schema`).
 */
import { z } from 'zod';
import { mailEvent } from '../../shared/schemas/events.ts';
import { procedureMeta } from '../trpc/routers/index.ts';
import { errorResponses, securityFor, successHeaders } from './openapi-shared.ts';
import { EVENTS_PATH } from './events.route.ts';

type Json = Record<string, any>;

/** The JSON Schema (2020-12, as OpenAPI 3.1 uses) of one event's `data`. */
export function mailEventSchema(): Json {
  const { $schema: _drop, ...schema } = z.toJSONSchema(mailEvent) as Json;
  return schema;
}

export function eventRoutes(): Json {
  const errors = procedureMeta('mail.events')?.errors ?? [];
  return {
    [EVENTS_PATH]: {
      get: {
        operationId: 'mail-events',
        summary: 'Live events of the account (Server-Sent Events)',
        description: [
          "A `text/event-stream` of the signed-in account's events, also served as the tRPC subscription `mail.events`. Each event has an `id:`, an `event:` line naming its type and one `data:` line of JSON (the MailEvent schema):",
          "`sync` (where the account stands: `backfilling` with `progress` {stored, estimatedTotal} and, while the backfill waits for the deployment's daily mail quota, `quotaWaitUntil`; `current`, `catching_up`, `needs_reconnect`; `lastSyncedAt`), sent first and whenever it changes;",
          '`threads` (ids of at most 100 threads whose stored state changed, sent after the commit: read them again);',
          '`reset` (too much changed, or the events since `Last-Event-ID` are no longer known: read the list again).',
          'A comment line (`: ping`) about every 25 seconds keeps the connection open. Send the last `id` back as `Last-Event-ID` to resume without loss.',
          "At most 5 open streams per session and 20 per account, counted over every instance of the service: beyond, RATE_LIMITED with Retry-After (a stream closed frees its place at once; one whose server went away stops counting within about a minute). Logout ends the session's streams; disconnect and account deletion end every stream of the account. No CSRF token: it only reads.",
        ].join(' '),
        tags: ['mail'],
        security: securityFor(errors),
        parameters: [
          {
            name: 'Last-Event-ID',
            in: 'header',
            required: false,
            description: 'The id of the last event received: the stream resumes after it.',
            schema: { type: 'string', maxLength: 40 },
          },
        ],
        responses: {
          200: {
            description: 'The event stream (it stays open)',
            headers: successHeaders,
            content: {
              'text/event-stream': {
                schema: { type: 'string', description: 'Server-Sent Events; each `data:` is a MailEvent.' },
                'x-event-schema': mailEventSchema(),
              },
            },
          },
          ...errorResponses(errors),
        },
      },
    },
  };
}
