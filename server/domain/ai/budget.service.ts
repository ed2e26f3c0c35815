/**
 * Per-account AI token budgets (daily and monthly, UTC), kept in the `ai_usage` ledger.
 *
 * A call first reserves an estimate: in one transaction, under a transaction-scoped
 * advisory lock on the account (`pg_advisory_xact_lock`, released by commit, so it never
 * outlives the pooled connection's transaction), it sums the day's and month's rows,
 * settled and reserved alike, refuses if either sum has reached its budget, and inserts a
 * `reserved` row. Every instance serialises on the same lock, so concurrent calls see each
 * other's reservations and cannot all pass a check that only one of them should.
 * After the call the row settles to the usage the provider reported (a failed call that
 * reported usage included), or is deleted when the call failed with no usage.
 * A reservation left behind by a crash keeps counting (never under-charge).
 * Analysis on arrival (operation AUTO_OPERATION) reserves with a `share`: it is refused once
 * its own day's tokens plus the reservation would pass that share of the daily budget, or the
 * day's total plus the reservation would pass the budget, so on-demand calls keep the rest.
 */
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { TokenUsage } from '../../providers/openai.ts';
import { AppError } from '../errors.ts';

/** Namespace of the advisory lock key (the account is the second key). */
const LOCK_NAMESPACE = 0x41_49_42_55; // "AIBU"

export interface BudgetLimits {
  daily: number;
  monthly: number;
}

export interface Reservation {
  id: string;
  accountId: string;
  tokens: number;
}

export interface BudgetUsage {
  day: number;
  month: number;
  /** Of the day's: analysis on arrival's. */
  auto: number;
}

/** The ledger's operation of analysis on arrival (PATCH /api/settings `autoTriage`). */
export const AUTO_OPERATION = 'auto-analyze';

export function utcDayStart(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()));
}
export function utcMonthStart(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1));
}
export function nextUtcDay(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate() + 1));
}
export function nextUtcMonth(d: Date): Date {
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1));
}

const secondsUntil = (from: Date, to: Date) => Math.max(1, Math.ceil((to.getTime() - from.getTime()) / 1000));

export function createBudgetService(deps: { orm: MikroORM; limits: BudgetLimits; now?: () => Date }) {
  const now = deps.now ?? (() => new Date());
  const { limits } = deps;

  async function sums(em: EntityManager, accountId: string, at: Date): Promise<BudgetUsage> {
    const rows = await em.execute<{ day: string; month: string; auto: string }[]>(
      `select coalesce(sum(tokens) filter (where created_at >= ? and created_at < ?), 0)::bigint as day,
              coalesce(sum(tokens), 0)::bigint as month,
              coalesce(sum(tokens) filter (where created_at >= ? and created_at < ? and operation = ?), 0)::bigint as auto
         from ai_usage where account_id = ? and created_at >= ? and created_at < ?`,
      [
        utcDayStart(at),
        nextUtcDay(at),
        utcDayStart(at),
        nextUtcDay(at),
        AUTO_OPERATION,
        accountId,
        utcMonthStart(at),
        nextUtcMonth(at),
      ],
    );
    return { day: Number(rows[0]?.day ?? 0), month: Number(rows[0]?.month ?? 0), auto: Number(rows[0]?.auto ?? 0) };
  }

  return {
    limits,

    /** Tokens used or reserved in the current UTC day and month. */
    async usage(accountId: string): Promise<BudgetUsage> {
      return sums(deps.orm.em.fork(), accountId, now());
    },

    /** Reserves `estimate` tokens, or throws AI_BUDGET_EXCEEDED (Retry-After: until the hit budget resets). */
    async reserve(input: {
      accountId: string;
      operation: string;
      model: string;
      estimate: number;
      share?: number;
    }): Promise<Reservation> {
      const at = now();
      const tokens = Math.max(1, Math.ceil(input.estimate));
      return deps.orm.em.fork().transactional(async (tx) => {
        await tx.execute('select pg_advisory_xact_lock(?, hashtext(?))', [LOCK_NAMESPACE, input.accountId]);
        const used = await sums(tx, input.accountId, at);
        const resets: Date[] = [];
        if (used.day >= limits.daily) resets.push(nextUtcDay(at));
        if (used.month >= limits.monthly) resets.push(nextUtcMonth(at));
        if (input.share !== undefined) {
          // The reservation must fit whole: what it reserves is the call's upper bound, so the share holds to the token.
          if (used.auto + tokens > Math.floor(limits.daily * input.share) || used.day + tokens > limits.daily)
            resets.push(nextUtcDay(at));
          if (used.month + tokens > limits.monthly) resets.push(nextUtcMonth(at));
        }
        if (resets.length) {
          const until = new Date(Math.max(...resets.map((d) => d.getTime())));
          throw new AppError('AI_BUDGET_EXCEEDED', { retryAfter: secondsUntil(at, until) });
        }
        const rows = await tx.execute<{ id: string }[]>(
          `insert into ai_usage (account_id, operation, model, state, tokens, created_at) values (?, ?, ?, 'reserved', ?, ?) returning id`,
          [input.accountId, input.operation, input.model, tokens, at],
        );
        return { id: rows[0].id, accountId: input.accountId, tokens };
      });
    },

    /** Charges what the provider reported (input plus output tokens). */
    async settle(reservation: Reservation, usage: TokenUsage, model: string): Promise<void> {
      const prompt = Math.max(0, Math.round(usage.promptTokens));
      const completion = Math.max(0, Math.round(usage.completionTokens));
      await deps.orm.em
        .fork()
        .execute(
          `update ai_usage set state = 'settled', tokens = ?, prompt_tokens = ?, completion_tokens = ?, model = ? where id = ?`,
          [prompt + completion, prompt, completion, model, reservation.id],
        );
    },

    /** Gives the reservation back: the call failed and the provider reported no usage. */
    async release(reservation: Reservation): Promise<void> {
      await deps.orm.em.fork().execute(`delete from ai_usage where id = ? and state = 'reserved'`, [reservation.id]);
    },
  };
}
export type BudgetService = ReturnType<typeof createBudgetService>;
