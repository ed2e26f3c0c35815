/**
 * The AI routes. They live under the `mail` namespace (`mail.analyze`, `mail.draft`) and
 * are merged into the mail router in index.ts, so this file exports plain procedures.
 */
import { z } from 'zod';
import { analysis, analysisCorrection, draftOptions, draftResult } from '../../../shared/schemas/ai.ts';
import { uuid } from '../../../shared/schemas/common.ts';
import type { ErrorCode } from '../../../shared/errors.ts';
import { csrfProcedure } from '../init.ts';

/** The spec's AI errors, and those of fetching the thread's missing bodies first (as GET /api/mail/threads/{threadId}). */
const AI_ERRORS: readonly ErrorCode[] = [
  'AUTH_REQUIRED',
  'CSRF_FAILED',
  'VALIDATION_FAILED',
  'NOT_FOUND',
  'AI_BUDGET_EXCEEDED',
  'AI_RATE_LIMITED',
  'AI_REQUEST_FAILED',
  'SERVICE_UNAVAILABLE',
  'TOKEN_EXPIRED',
  'MAIL_RATE_LIMITED',
  'SYNC_FAILED',
];

/**
 * What the model sees and what a mail can make it do, stated in the document: a mail is
 * untrusted input that the model reads, so its author steers what the model says about it.
 */
const MODEL_SEES =
  "The model sees the thread's subject and its latest message (sender name, date, body reduced to text: quoted history, the sender's signature, email addresses and link paths removed, bounded in length)";
const MAIL_CAN =
  "A mail is data, never instructions to the service, but the model reads it: a mail written to do so can steer what the model answers about it (its priority, reason and suggested action, or the wording of a draft), and can make a draft restate what the model was given. It cannot reach anything the model was not given: other threads, other accounts, tokens, the owner's signature and settings never reach the model; the answer is only ever parsed against a fixed schema (no tool, no link, no action is taken from it), and a draft is only ever returned to the caller, never sent. Treat its content as a suggestion written under the mail's influence.";

export const analyzeInput = z.object({ threadId: uuid }).strict();
export const draftInput = draftOptions.extend({ threadId: uuid }).strict();

export const aiProcedures = {
  analyze: csrfProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/api/mail/threads/{threadId}/analyze',
        tags: ['ai'],
        summary: "Analysis of the thread's latest message (cached per message)",
        description: `${MODEL_SEES}; nothing else of the thread (its earlier messages are read only to recognise and cut the owner's signature, and never sent). ${MAIL_CAN}`,
      },
      rateLimit: 'mail.analyze',
      errors: AI_ERRORS,
    })
    .input(analyzeInput)
    .output(analysis)
    .mutation(({ ctx, input }) => ctx.services.ai.analysis.analyze(ctx.em, ctx.user.accountId, input.threadId)),

  correctAnalysis: csrfProcedure
    .meta({
      openapi: {
        method: 'PUT',
        path: '/api/mail/threads/{threadId}/analysis',
        tags: ['ai'],
        summary: "Correct the analysis of the thread's latest message",
        description:
          "Stores the user's priority, reply status or both in place of the model's (answered with `correctedAt`; the list shows `corrected`). " +
          "NOT_FOUND while the latest message has no analysis. The account's newest corrections of other threads (sender name, subject and snippet, " +
          "with the corrected values) are shown to later analyses of the same account as examples; never to another account's.",
      },
      rateLimit: 'mail.correctAnalysis',
      errors: ['AUTH_REQUIRED', 'CSRF_FAILED', 'VALIDATION_FAILED', 'NOT_FOUND', 'SERVICE_UNAVAILABLE'],
    })
    .input(analysisCorrection)
    .output(analysis)
    .mutation(({ ctx, input }) => {
      const { threadId, ...values } = input;
      return ctx.services.ai.analysis.correct(ctx.em, ctx.user.accountId, threadId, values);
    }),

  draft: csrfProcedure
    .meta({
      openapi: {
        method: 'POST',
        path: '/api/mail/threads/{threadId}/draft',
        tags: ['ai'],
        summary: "Reply draft for the thread's latest message",
        description: `${MODEL_SEES}, and the two earlier messages of the thread, reduced the same way, as context; the owner's tone, length and language choices. ${MAIL_CAN}`,
      },
      rateLimit: 'mail.draft',
      errors: AI_ERRORS,
    })
    .input(draftInput)
    .output(draftResult)
    .mutation(({ ctx, input }) => {
      const { threadId, ...options } = input;
      return ctx.services.ai.drafts.draft(ctx.em, ctx.user.accountId, threadId, options);
    }),
};
