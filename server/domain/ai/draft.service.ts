/**
 * A reply draft for a thread's latest message. Unset options fall back to the account's
 * stored response-style defaults (then tone "default", length "medium"). The account's
 * signature is appended after generation and never sent to the model. Draft.language is
 * the request's language, else the account default, else the language the model reports
 * for the latest message. Every draft is stored.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { z } from 'zod';
import { Draft } from '../../../db/entities/index.ts';
import { draftModelOutput, type draftOptions, type DraftResult } from '../../../shared/schemas/ai.ts';
import { readResponseStyle } from '../settings/settings.service.ts';
import { AppError } from '../errors.ts';
import { answerFormat, budgetedCall, type AiCallDeps } from './ai-call.ts';
import { draftPrompt, LIMITS, type DraftStyle } from './prompt.ts';
import { findLatest, loadWithBodies, type EnsureBodies } from './thread-context.ts';

const FORMAT = answerFormat('email_reply_draft', draftModelOutput);

export type DraftOptions = z.infer<typeof draftOptions>;

export function effectiveStyle(request: DraftOptions, stored: unknown): DraftStyle {
  const defaults = readResponseStyle(stored);
  return {
    tone: request.tone ?? defaults.tone ?? 'default',
    length: request.length ?? defaults.length ?? 'medium',
    language: request.language ?? defaults.language ?? undefined,
    preferredTone: request.preferredTone ?? defaults.preferredTone ?? undefined,
  };
}

export function appendSignature(body: string, signature: string | null | undefined): string {
  if (!signature?.trim()) return body;
  return `${body.trimEnd()}\n\n${signature}`;
}

function replySubject(threadSubject: string): string {
  const subject = threadSubject.replace(/\s+/g, ' ').trim();
  return /^re:/i.test(subject) ? subject : `Re: ${subject}`.trim();
}

export function createDraftService(deps: AiCallDeps & { orm: MikroORM; ensureBodies: EnsureBodies; now: () => Date }) {
  return {
    async draft(em: EntityManager, accountId: string, threadId: string, request: DraftOptions): Promise<DraftResult> {
      const { thread } = await findLatest(em, accountId, threadId);
      if (!deps.provider.configured) throw new AppError('SERVICE_UNAVAILABLE');
      const { account, messages } = await loadWithBodies(
        em,
        deps.ensureBodies,
        accountId,
        threadId,
        LIMITS.contextMessages + 1,
      );
      const latest = messages[messages.length - 1];
      const style = effectiveStyle(request, account.responseStyle);
      const prompt = draftPrompt({
        threadSubject: thread.subject,
        messages,
        ownerAddress: account.email,
        style,
        ownerSignature: account.signature,
      });
      const { value, model } = await budgetedCall(deps, { accountId, operation: 'draft', prompt, format: FORMAT });

      const subject = value.subject.trim() || replySubject(thread.subject);
      const body = appendSignature(value.body.trim(), account.signature);
      const language = style.language ?? (value.language.trim() || 'unknown');
      const options = Object.fromEntries(Object.entries(style).filter(([, v]) => v !== undefined)) as Record<
        string,
        string
      >;
      em.create(Draft, {
        account: accountId,
        thread: threadId,
        message: latest.id,
        subject,
        body,
        language,
        options,
        model,
        createdAt: deps.now(),
      });
      await em.flush();
      return { draft: { subject, body, language }, model };
    },
  };
}
export type DraftService = ReturnType<typeof createDraftService>;
