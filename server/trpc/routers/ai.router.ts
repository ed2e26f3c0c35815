/**
 * The AI routes. They live under the `mail` namespace (`mail.analyze`, `mail.draft`) and
 * are merged into the mail router in index.ts, so this file exports plain procedures.
 */
import { z } from 'zod';
import { analysis, draftOptions, draftResult } from '../../../shared/schemas/ai.ts';
import { uuid } from '../../../shared/schemas/common.ts';
import type { IncomingMessage } from 'node:http';
import { AppError } from '../../domain/errors.ts';
import { csrfProcedure, middleware, wrap } from '../init.ts';

/**
 * REST bodies must be JSON objects (or absent). trpc-to-openapi spreads the body into the
 * input, so `[]`, `5` or `null` would otherwise pass as "no fields".
 */
export const objectBody = middleware(({ ctx, next }) => {
  const body = (ctx.koa.req as IncomingMessage & { body?: unknown }).body;
  if (ctx.transport === 'rest' && body !== undefined && (body === null || typeof body !== 'object' || Array.isArray(body))) {
    throw wrap(new AppError('VALIDATION_FAILED', { issues: [{ path: '', code: 'invalid_type' }] }));
  }
  return next();
});
const aiProcedure = csrfProcedure.use(objectBody);

export const analyzeInput = z.object({ threadId: uuid }).strict();
export const draftInput = draftOptions.extend({ threadId: uuid }).strict();

export const aiProcedures = {
  analyze: aiProcedure
    .meta({ openapi: { method: 'POST', path: '/api/mail/threads/{threadId}/analyze', tags: ['ai'], summary: "Analysis of the thread's latest message (cached per message)" }, rateLimit: 'mail.analyze' })
    .input(analyzeInput)
    .output(analysis)
    .mutation(({ ctx, input }) => ctx.container.ai.analysis.analyze(ctx.em, ctx.user.accountId, input.threadId)),

  draft: aiProcedure
    .meta({ openapi: { method: 'POST', path: '/api/mail/threads/{threadId}/draft', tags: ['ai'], summary: "Reply draft for the thread's latest message" }, rateLimit: 'mail.draft' })
    .input(draftInput)
    .output(draftResult)
    .mutation(({ ctx, input }) => {
      const { threadId, ...options } = input;
      return ctx.container.ai.drafts.draft(ctx.em, ctx.user.accountId, threadId, options);
    }),
};
