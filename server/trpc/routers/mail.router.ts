/** The mail routes: thin procedures over the sync service and the thread reads (spec part 4, "Mail and sync routes"). */
import { z } from 'zod';
import { syncResult, syncState, threadDetail, threadIdInput, threadList, threadListInput } from '../../../shared/schemas/mail.ts';
import { listThreads, threadDetail as readThreadDetail } from '../../domain/mail/thread.service.ts';
import { authedProcedure, csrfProcedure, router } from '../init.ts';

/** The mail procedures; spread next to the AI procedures under `mail` in the app router. */
export const mailProcedures = {
  sync: csrfProcedure
    .meta({ openapi: { method: 'POST', path: '/api/mail/sync', tags: ['mail'], summary: 'Run one bounded inbox sync (at most 50 new messages)' }, rateLimit: 'mail.sync' })
    .input(z.object({}).strict().optional())
    .output(syncResult)
    .mutation(({ ctx }) => ctx.container.sync.syncAccount(ctx.user.accountId)),

  syncState: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/mail/sync-state', tags: ['mail'], summary: 'Last successful sync time (no provider call)' } })
    .input(z.object({}).strict().optional())
    .output(syncState)
    .query(({ ctx }) => ctx.container.sync.syncState(ctx.em, ctx.user.accountId)),

  threads: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/mail/threads', tags: ['mail'], summary: 'Inbox threads, newest first' } })
    .input(threadListInput)
    .output(threadList)
    .query(({ ctx, input }) => listThreads(ctx.container.prepared, ctx.user.accountId, input)),

  thread: authedProcedure
    .meta({ openapi: { method: 'GET', path: '/api/mail/threads/{threadId}', tags: ['mail'], summary: 'A thread with every message; bodies fetched on first open and cached' } })
    .input(threadIdInput)
    .output(threadDetail)
    .query(({ ctx, input }) => readThreadDetail(ctx.em, ctx.container.threadBodies, ctx.user.accountId, input.threadId)),
};

export const mailRouter = router(mailProcedures);
