/**
 * Analysis on arrival (settings `autoTriage`): which threads of an account a person would want
 * triaged, newest first, and one bounded pass over them through the route's own analysis
 * (same prompt, schema, model and budget ledger), charged as AUTO_OPERATION within the
 * account's share of the daily budget.
 *
 * A thread qualifies while its latest message has no analysis and is: in the inbox thread's
 * latest place, sent since the account's `auto_triage_from`, not the owner's own (From or
 * SENT), not bulk by its headers, not in Promotions, Social, Updates or Forums. A message
 * whose analysis failed waits in `triage_attempts` (backoff from RETRY_FIRST_MS) and is left
 * after MAX_ATTEMPTS; it never holds back the next thread. What stops a pass for the whole
 * account (the budget share, the AI's or the mail's rate limit, a disconnected account) is
 * returned with when to come back.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../../infra/logger.ts';
import { errorSummary } from '../../infra/logger.ts';
import { AppError } from '../errors.ts';
import type { AnalysisService } from './analysis.service.ts';

export const SKIPPED_LABELS = [
  'CATEGORY_PROMOTIONS',
  'CATEGORY_SOCIAL',
  'CATEGORY_UPDATES',
  'CATEGORY_FORUMS',
  'SENT',
  'DRAFT',
  'SPAM',
  'TRASH',
];
/** Attempts at one message before it is left unanalysed (the route can still analyse it). */
export const MAX_ATTEMPTS = 5;
export const RETRY_FIRST_MS = 30_000;
const RETRY_MAX_MS = 3_600_000;

export interface Candidate {
  threadId: string;
  messageId: string;
}

/**
 * The account's qualifying threads, newest first (the inbox list index, bounded below by the
 * setting's start so the scan ends there). Empty when the setting is off.
 */
export async function triageCandidates(orm: MikroORM, accountId: string, limit: number): Promise<Candidate[]> {
  return orm.em.getConnection().execute<Candidate[]>(
    `select t.id as "threadId", m.id as "messageId"
       from accounts acc
       join mail_threads t on t.account_id = acc.id and t.in_inbox and t.last_message_at >= acc.auto_triage_from
       join mail_messages m on m.id = t.latest_message_id
      where acc.id = ? and acc.auto_triage and not acc.needs_reconnect
        and m.sent_at >= acc.auto_triage_from and not m.is_bulk and not (m.label_ids && array[?]::text[])
        and lower(m.from_address) <> lower(acc.email)
        and not exists (select 1 from analyses a where a.message_id = m.id)
        and not exists (select 1 from triage_attempts x where x.message_id = m.id and (x.attempts >= ? or x.retry_at > now()))
      order by t.last_message_at desc, t.id desc
      limit ?`,
    [accountId, SKIPPED_LABELS, MAX_ATTEMPTS, limit],
  );
}

/** When the account's soonest waiting retry is due (ms from now), or null when none waits. */
async function nextRetryMs(orm: MikroORM, accountId: string): Promise<number | null> {
  const [row] = await orm.em.getConnection().execute<{ ms: number | null }[]>(
    `select (extract(epoch from min(retry_at) - now()) * 1000)::float8 as ms from triage_attempts x
      join mail_threads t on t.latest_message_id = x.message_id
      where x.account_id = ? and x.attempts < ? and not exists (select 1 from analyses a where a.message_id = x.message_id)`,
    [accountId, MAX_ATTEMPTS],
  );
  return row?.ms === null || row?.ms === undefined ? null : Math.max(0, Number(row.ms));
}

async function recordAttempt(
  orm: MikroORM,
  accountId: string,
  messageId: string,
  code: string,
  firstMs: number,
): Promise<void> {
  await orm.em.getConnection().execute(
    `insert into triage_attempts as x (message_id, account_id, attempts, code, retry_at) values (?, ?, 1, ?, now() + make_interval(secs => ?))
     on conflict (message_id) do update set attempts = x.attempts + 1, code = excluded.code,
       retry_at = now() + make_interval(secs => least(?, ? * power(2, x.attempts)))`,
    [messageId, accountId, code, firstMs / 1000, RETRY_MAX_MS / 1000, firstMs / 1000],
  );
}

/** Why a pass ended: done (nothing qualifies now), more (the batch was full), or waiting until `afterMs`. */
export type PassEnd =
  | { kind: 'done'; analysed: number }
  | { kind: 'more'; analysed: number }
  | { kind: 'wait'; analysed: number; afterMs: number; reason: string }
  | { kind: 'stop'; analysed: number; reason: string };

/** Codes that stop the pass for the whole account: nothing another thread could do better now. */
const ACCOUNT_WIDE = new Set(['AI_BUDGET_EXCEEDED', 'AI_RATE_LIMITED', 'MAIL_RATE_LIMITED', 'SERVICE_UNAVAILABLE']);
const STOPS = new Set(['TOKEN_EXPIRED', 'AUTH_REQUIRED']);

export function createAutoTriage(deps: {
  orm: MikroORM;
  analysis: AnalysisService;
  share: number;
  aiConfigured: () => boolean;
  log: Logger;
  retryFirstMs?: number;
}) {
  const retryFirstMs = deps.retryFirstMs ?? RETRY_FIRST_MS;
  const log = deps.log.child({ component: 'auto-triage' });
  return {
    /** Analyses up to `max` qualifying threads of the account, one at a time. */
    async pass(accountId: string, max: number): Promise<PassEnd> {
      if (!deps.aiConfigured()) return { kind: 'stop', analysed: 0, reason: 'ai-not-configured' };
      const found = await triageCandidates(deps.orm, accountId, max + 1);
      let analysed = 0;
      for (const c of found.slice(0, max)) {
        try {
          await deps.analysis.analyze(deps.orm.em.fork(), accountId, c.threadId, { autoShare: deps.share });
          analysed++;
        } catch (err) {
          const code = err instanceof AppError ? err.code : 'INTERNAL_ERROR';
          if (code === 'NOT_FOUND') continue; // the thread went (deleted, or its last message) since the query
          if (STOPS.has(code)) return { kind: 'stop', analysed, reason: code };
          if (ACCOUNT_WIDE.has(code))
            return {
              kind: 'wait',
              analysed,
              afterMs: Math.max(1, (err as AppError).retryAfter ?? 5) * 1000,
              reason: code,
            };
          log.warn(
            { accountId, threadId: c.threadId, code, ...errorSummary(err) },
            'analysis on arrival failed; the message waits for its retry',
          );
          await recordAttempt(deps.orm, accountId, c.messageId, code, retryFirstMs);
        }
      }
      if (found.length > max) return { kind: 'more', analysed };
      const retry = await nextRetryMs(deps.orm, accountId);
      return retry === null ? { kind: 'done', analysed } : { kind: 'wait', analysed, afterMs: retry, reason: 'retry' };
    },
  };
}
export type AutoTriage = ReturnType<typeof createAutoTriage>;
