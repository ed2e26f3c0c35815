/**
 * The AI routes. They live under the `mail` namespace (`mail.analyze`, `mail.draft`) and
 * are merged into the mail router in index.ts, so this file exports plain procedures.
 */
import { z } from 'zod';
import { analysis, draftOptions, draftResult } from '../../../shared/schemas/ai.ts';
import { uuid } from '../../../shared/schemas/common.ts';
import type { ErrorCode } from '../../../shared/errors.ts';
import { csrfProcedure } from '../init.ts';

/** The spec's AI errors, and those of fetching the thread's missing bodies first (as GET /api/mail/threads/{threadId}). */
const AI_ERRORS: readonly ErrorCode[] = [
  'AUTH_REQUIRED', 'CSRF_FAILED', 'VALIDATION_FAILED', 'NOT_FOUND', 'AI_BUDGET_EXCEEDED', 'AI_RATE_LIMITED', 'AI_REQUEST_FAILED', 'SERVICE_UNAVAILABLE',
  'TOKEN_EXPIRED', 'MAIL_RATE_LIMITED', 'SYNC_FAILED',
];

export const analyzeInput = z.object({ threadId: uuid }).strict();
export const draftInput = draftOptions.extend({ threadId: uuid }).strict();

export const aiProcedures = {
  analyze: csrfProcedure
    .meta({ openapi: { method: 'POST', path: '/api/mail/threads/{threadId}/analyze', tags: ['ai'], summary: "Analysis of the thread's latest message (cached per message)" }, rateLimit: 'mail.analyze', errors: AI_ERRORS })
    .input(analyzeInput)
    .output(analysis)
    .mutation(({ ctx, input }) => ctx.services.ai.analysis.analyze(ctx.em, ctx.user.accountId, input.threadId)),

  draft: csrfProcedure
    .meta({ openapi: { method: 'POST', path: '/api/mail/threads/{threadId}/draft', tags: ['ai'], summary: "Reply draft for the thread's latest message" }, rateLimit: 'mail.draft', errors: AI_ERRORS })
    .input(draftInput)
    .output(draftResult)
    .mutation(({ ctx, input }) => {
      const { threadId, ...options } = input;
      return ctx.services.ai.drafts.draft(ctx.em, ctx.user.accountId, threadId, options);
    }),
};
