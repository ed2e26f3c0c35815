/**
 * The triage of a thread's latest message. One per message: served from the store while
 * the latest message is unchanged; a new latest message gets a new analysis.
 * Concurrency: calls for the same message in this process share one generation (single
 * flight); across instances, the `analyses.message_id` unique key decides which row is
 * kept (insert ... on conflict do nothing, then read the stored row), so every caller
 * returns the same analysis. A new analysis is announced (`threads` event): the list shows it.
 *
 * Corrections: the user's priority or reply status replaces the model's on the row (the
 * model's kept beside it, `corrected_at` set). The account's newest corrections of other
 * threads go into later prompts as examples (prompt.ts); the query is by account, so
 * nothing of another account's can reach a prompt.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import { Analysis } from '../../../db/entities/index.ts';
import { analysisModelOutput, type Analysis as AnalysisDto } from '../../../shared/schemas/ai.ts';
import { announceThreads } from '../events/announce.ts';
import { AppError } from '../errors.ts';
import { answerFormat, budgetedCall, type AiCallDeps } from './ai-call.ts';
import { AUTO_OPERATION } from './budget.service.ts';
import { analysisPrompt, LIMITS, type TriageExample } from './prompt.ts';
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
    correctedAt: a.correctedAt ? a.correctedAt.toISOString() : null,
  };
}

/** The account's newest corrections of threads other than `threadId`, as prompt examples (one indexed query). */
export async function correctionExamples(
  em: EntityManager,
  accountId: string,
  threadId: string,
): Promise<TriageExample[]> {
  const rows = await em.execute<
    { from_name: string; subject: string; snippet: string; priority: string; reply_status: string }[]
  >(
    `select m.from_name, m.subject, m.snippet, a.priority, a.reply_status
       from analyses a join mail_messages m on m.id = a.message_id and m.account_id = a.account_id
      where a.account_id = ? and a.corrected_at is not null and a.thread_id <> ?
      order by a.corrected_at desc limit ?`,
    [accountId, threadId, LIMITS.examples],
  );
  return rows.map((r) => ({
    fromName: r.from_name,
    subject: r.subject,
    snippet: r.snippet,
    priority: r.priority,
    replyStatus: r.reply_status,
  }));
}

export interface AnalyzeOptions {
  /** Analysis on arrival: charged as AUTO_OPERATION, within this share of the daily budget. */
  autoShare?: number;
}

export function createAnalysisService(
  deps: AiCallDeps & { orm: MikroORM; ensureBodies: EnsureBodies; now: () => Date },
) {
  const flights = createSingleFlight<AnalysisDto>();

  const stored = async (em: EntityManager, messageId: string) => {
    const row = await em.findOne(Analysis, { message: messageId }, { refresh: true });
    return row ? toAnalysisDto(row) : null;
  };

  async function generate(
    accountId: string,
    threadId: string,
    messageId: string,
    opts: AnalyzeOptions,
  ): Promise<AnalysisDto> {
    const em = deps.orm.em.fork();
    // Another instance may have finished while this one was getting here.
    const existing = await stored(em, messageId);
    if (existing) return existing;
    if (!deps.provider.configured) throw new AppError('SERVICE_UNAVAILABLE');
    const { thread } = await findLatest(em, accountId, threadId);
    // Earlier messages too: the owner's own teach the prompt their signature (never sent).
    const auto = opts.autoShare !== undefined;
    const { account, messages } = await loadWithBodies(
      em,
      deps.ensureBodies,
      accountId,
      threadId,
      LIMITS.contextMessages + 1,
      auto ? 'triage' : 'open',
    );
    const latest = messages[messages.length - 1];
    const examples = await correctionExamples(em, accountId, threadId);
    const prompt = analysisPrompt({
      threadSubject: thread.subject,
      latest,
      earlier: messages.slice(0, -1),
      ownerAddress: account.email,
      ownerSignature: account.signature,
      examples,
    });
    const { value, model } = await budgetedCall(deps, {
      accountId,
      operation: auto ? AUTO_OPERATION : 'analyze',
      prompt,
      format: FORMAT,
      share: opts.autoShare,
    });
    const at = deps.now();
    const inserted = await em.execute<unknown[]>(
      `insert into analyses (account_id, thread_id, message_id, priority, reply_status, confidence, reason, suggested_action, model, created_at, updated_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) on conflict (message_id) do nothing returning id`,
      [
        accountId,
        threadId,
        latest.id,
        value.priority,
        value.replyStatus,
        value.confidence,
        value.reason,
        value.suggestedAction,
        model,
        at,
        at,
      ],
    );
    if (inserted.length) await announceThreads(em, accountId, [threadId]);
    const row = await stored(em, latest.id);
    if (!row) throw new Error('analysis row missing after insert');
    return row;
  }

  return {
    async analyze(
      em: EntityManager,
      accountId: string,
      threadId: string,
      opts: AnalyzeOptions = {},
    ): Promise<AnalysisDto> {
      const { latest } = await findLatest(em, accountId, threadId);
      const cached = await stored(em, latest.id);
      if (cached) return cached;
      return flights.run(latest.id, () => generate(accountId, threadId, latest.id, opts));
    },

    /** The user's correction of the latest message's analysis (NOT_FOUND while it has none). */
    async correct(
      em: EntityManager,
      accountId: string,
      threadId: string,
      values: { priority?: string; replyStatus?: string },
    ): Promise<AnalysisDto> {
      const { latest } = await findLatest(em, accountId, threadId);
      const at = deps.now();
      const rows = await em.execute<{ id: string }[]>(
        `update analyses set model_priority = coalesce(model_priority, priority), model_reply_status = coalesce(model_reply_status, reply_status),
           priority = coalesce(?, priority), reply_status = coalesce(?, reply_status), corrected_at = ?, updated_at = ?
         where message_id = ? and account_id = ? returning id`,
        [values.priority ?? null, values.replyStatus ?? null, at, at, latest.id, accountId],
      );
      if (!rows.length) throw new AppError('NOT_FOUND');
      await announceThreads(em, accountId, [threadId]);
      const row = await stored(em, latest.id);
      if (!row) throw new AppError('NOT_FOUND');
      return row;
    },
  };
}
export type AnalysisService = ReturnType<typeof createAnalysisService>;
