/** The mail routes: thin procedures over the sync service and the thread reads (spec part 4, "Mail and sync routes"). */
import { z } from 'zod';
import {
  messageBody,
  messageBodyInput,
  syncResult,
  syncState,
  threadDetail,
  threadIdInput,
  threadList,
  threadListInput,
} from '../../../shared/schemas/mail.ts';
import { authedProcedure, csrfProcedure, trustedOutput } from '../init.ts';

/** The mail procedures; spread next to the AI procedures under `mail` in the app router. */
export const mailProcedures = {
  sync: csrfProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/api/mail/sync',
        tags: ['mail'],
        summary: 'Run one bounded inbox sync (at most 50 new messages)',
      },
      rateLimit: 'mail.sync',
      errors: [
        'AUTH_REQUIRED',
        'CSRF_FAILED',
        'VALIDATION_FAILED',
        'MAIL_RATE_LIMITED',
        'SYNC_FAILED',
        'TOKEN_EXPIRED',
        'SERVICE_UNAVAILABLE',
      ],
    })
    .input(z.object({}).strict().optional())
    .output(syncResult)
    .mutation(({ ctx }) => ctx.services.sync.syncAccount(ctx.user.accountId, { caller: 'user' })),

  syncState: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/api/mail/sync-state',
        tags: ['mail'],
        summary: 'Last successful sync time (no provider call)',
      },
      errors: ['AUTH_REQUIRED', 'VALIDATION_FAILED', 'SERVICE_UNAVAILABLE'],
    })
    .input(z.object({}).strict().optional())
    .output(syncState)
    .query(({ ctx }) => ctx.services.sync.syncState(ctx.em, ctx.user.accountId)),

  threads: authedProcedure
    .meta({
      openapi: { method: 'GET', path: '/api/mail/threads', tags: ['mail'], summary: 'Inbox threads, newest first' },
      errors: ['AUTH_REQUIRED', 'VALIDATION_FAILED', 'SERVICE_UNAVAILABLE'],
    })
    .input(threadListInput)
    .output(trustedOutput(threadList))
    .query(({ ctx, input }) => ctx.services.threads.list(ctx.user.accountId, input)),

  thread: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/api/mail/threads/{threadId}',
        tags: ['mail'],
        summary: 'A thread with every message; bodies fetched on first open and cached',
        description:
          "One account's thread answers are built one at a time, and they and its message bodies are paced by the body bytes they carry: 32 MiB at once, " +
          'then 8 MiB a second (per instance). Past that an answer waits until the bytes are paid; ordinary use never meets the pace.',
      },
      // Opening fetches missing bodies from the provider: its failures are the sync route's codes.
      errors: [
        'AUTH_REQUIRED',
        'VALIDATION_FAILED',
        'NOT_FOUND',
        'TOKEN_EXPIRED',
        'MAIL_RATE_LIMITED',
        'SYNC_FAILED',
        'SERVICE_UNAVAILABLE',
      ],
    })
    .input(threadIdInput)
    .output(trustedOutput(threadDetail))
    .query(({ ctx, input }) => ctx.services.threads.detail(ctx.em, ctx.user.accountId, input.threadId)),

  messageBody: authedProcedure
    .meta({
      openapi: {
        method: 'GET',
        path: '/api/mail/threads/{threadId}/messages/{messageId}/body',
        tags: ['mail'],
        summary: "One message's bodies, for a message the thread answer left them out of (bodyOmitted)",
        description:
          "The bodies and attachment list of one message of the thread, fetched from the provider with the thread's on first open, as the thread route does. NOT_FOUND unless the message belongs to this thread of the signed-in account. Paced with the account's thread answers (see the thread route).",
      },
      errors: [
        'AUTH_REQUIRED',
        'VALIDATION_FAILED',
        'NOT_FOUND',
        'TOKEN_EXPIRED',
        'MAIL_RATE_LIMITED',
        'SYNC_FAILED',
        'SERVICE_UNAVAILABLE',
      ],
    })
    .input(messageBodyInput)
    .output(messageBody)
    .query(({ ctx, input }) =>
      ctx.services.threads.messageBody(ctx.em, ctx.user.accountId, input.threadId, input.messageId),
    ),
};
