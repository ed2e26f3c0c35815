/**
 * The triage of a thread's latest message. One per message: served from the store while
 * the latest message is unchanged; a new latest message gets a new analysis.
 * Concurrency: calls for the same message in this process share one generation (single
 * flight); across instances, the `analyses.message_id` unique key decides which row is
 * kept (insert ... on conflict do nothing, then read the stored row), so every caller
 * returns the same analysis.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { Analysis } from '../../../db/entities/index.ts';
import { analysisModelOutput, type Analysis as AnalysisDto } from '../../../shared/schemas/ai.ts';
import { AppError } from '../errors.ts';
import { answerFormat, budgetedCall, type AiCallDeps } from './ai-call.ts';
import { analysisPrompt, LIMITS } from './prompt.ts';
import { createSingleFlight } from './single-flight.ts';
import { findLatest, loadWithBodies, type EnsureBodies } from './thread-context.ts';

const FORMAT = answerFormat('email_triage', analysisModelOutput);

export function toAnalysisDto(a: Analysis): AnalysisDto {
  return {
    id: a.id,
    userId: a.account,
    messageId: a.message,
    priority: a.priority as AnalysisDto['priority'],
    replyStatus: a.replyStatus as AnalysisDto['replyStatus'],
    confidence: Number(a.confidence),
    reason: a.reason,
    suggestedAction: a.suggestedAction,
    model: a.model,
    createdAt: a.createdAt.toISOString(),
    updatedAt: a.updatedAt.toISOString(),
  };
}

export function createAnalysisService(deps: AiCallDeps & { orm: MikroORM; ensureBodies: EnsureBodies; now: () => Date }) {
  const flights = createSingleFlight<AnalysisDto>();

  const stored = async (em: EntityManager, messageId: string) => {
    const row = await em.findOne(Analysis, { message: messageId }, { refresh: true });
    return row ? toAnalysisDto(row) : null;
  };

  async function generate(accountId: string, threadId: string, messageId: string): Promise<AnalysisDto> {
    const em = deps.orm.em.fork();
    // Another instance may have finished while this one was getting here.
    const existing = await stored(em, messageId);
    if (existing) return existing;
    if (!deps.provider.configured) throw new AppError('SERVICE_UNAVAILABLE');
    const { thread } = await findLatest(em, accountId, threadId);
    // Earlier messages too: the owner's own teach the prompt their signature (never sent).
    const { account, messages } = await loadWithBodies(em, deps.ensureBodies, accountId, threadId, LIMITS.contextMessages + 1);
    const latest = messages[messages.length - 1];
    const prompt = analysisPrompt({ threadSubject: thread.subject, latest, earlier: messages.slice(0, -1), ownerAddress: account.email, ownerSignature: account.signature });
    const { value, model } = await budgetedCall(deps, { accountId, operation: 'analyze', prompt, format: FORMAT });
    const at = deps.now();
    await em.execute(
      `insert into analyses (account_id, thread_id, message_id, priority, reply_status, confidence, reason, suggested_action, model, created_at, updated_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict (message_id) do nothing`,
      [accountId, threadId, latest.id, value.priority, value.replyStatus, value.confidence, value.reason, value.suggestedAction, model, at, at],
    );
    const row = await stored(em, latest.id);
    if (!row) throw new Error('analysis row missing after insert');
    return row;
  }

  return {
    async analyze(em: EntityManager, accountId: string, threadId: string): Promise<AnalysisDto> {
      const { latest } = await findLatest(em, accountId, threadId);
      const cached = await stored(em, latest.id);
      if (cached) return cached;
      return flights.run(latest.id, () => generate(accountId, threadId, latest.id));
    },
  };
}
export type AnalysisService = ReturnType<typeof createAnalysisService>;
