/**
 * `mail.events`: the account's live events as a tRPC subscription (SSE on /trpc), and through
 * the same procedure GET /api/mail/events (http/events.route.ts). The rate limit counts the
 * stream once, when it opens; the session is checked before anything is sent.
 */
import { tracked } from '@trpc/server';
import { mailEventsInput } from '../../../shared/schemas/events.ts';
import { sessionStreamKey } from '../../domain/events/events.service.ts';
import { authedProcedure } from '../init.ts';

export const eventProcedures = {
  events: authedProcedure
    .meta({ errors: ['AUTH_REQUIRED', 'VALIDATION_FAILED', 'SERVICE_UNAVAILABLE'] })
    .input(mailEventsInput)
    // Not a generator: opening (limits, position) fails as an HTTP error, before the stream.
    .subscription(async ({ ctx, input, signal }) => {
      const events = await ctx.services.events.open({
        accountId: ctx.user.accountId,
        sessionKey: sessionStreamKey(ctx.session.csrfToken()),
        lastEventId: input?.lastEventId,
        signal: signal ?? new AbortController().signal,
      });
      return (async function* () {
        for await (const e of events) yield tracked(e.id, e.data);
      })();
    }),
};
