/**
 * One budgeted, structured AI call: reserve an estimate, call the provider, settle the
 * reservation with the usage it reported (or release it when it reported none because
 * the call failed), then parse the answer against the schema. A refusal or an answer
 * that does not parse is AI_REQUEST_FAILED, and is charged: the provider spent tokens.
 */
import type { z } from 'zod';
import type { Logger } from '../../infra/logger.ts';
import { errorSummary } from '../../infra/logger.ts';
import type { Metrics } from '../../infra/metrics.ts';
import type { AiProvider } from '../../providers/openai.ts';
import { AppError } from '../errors.ts';
import type { BudgetService } from './budget.service.ts';
import { estimateTokens, upperBoundTokens, type Prompt } from './prompt.ts';
import { parseAnswer, strictJsonSchema } from './structured.ts';

export interface AnswerFormat<T extends z.ZodType> {
  name: string;
  schema: T;
  jsonSchema: Record<string, unknown>;
}

export function answerFormat<T extends z.ZodType>(name: string, schema: T): AnswerFormat<T> {
  return { name, schema, jsonSchema: strictJsonSchema(schema) };
}

export interface AiCallDeps {
  provider: AiProvider;
  budget: BudgetService;
  log: Logger;
  /** Counts the tokens each call spent (GET /metrics). */
  metrics?: Pick<Metrics, 'aiTokens'>;
}

export async function budgetedCall<T extends z.ZodType>(
  deps: AiCallDeps,
  input: {
    accountId: string;
    operation: string;
    prompt: Prompt;
    format: AnswerFormat<T>;
    /** Analysis on arrival: at most this share of the daily budget, reserving the call's upper bound (budget.service.ts). */
    share?: number;
  },
): Promise<{ value: z.infer<T>; model: string }> {
  const { provider, budget, log } = deps;
  if (!provider.configured) throw new AppError('SERVICE_UNAVAILABLE');
  const { prompt, format } = input;
  const reservation = await budget.reserve({
    accountId: input.accountId,
    operation: input.operation,
    model: provider.model,
    estimate:
      input.share === undefined
        ? estimateTokens(prompt, format.jsonSchema)
        : upperBoundTokens(prompt, format.jsonSchema),
    share: input.share,
  });
  // Ledger writes after the call must not turn a finished call into an error: a row that
  // cannot be updated stays reserved at the estimate, which over-charges, never under-.
  const ledger = (what: string, fn: () => Promise<void>) =>
    fn().catch((err: unknown) =>
      log.warn({ reservation: reservation.id, ...errorSummary(err) }, `ai budget ${what} failed`),
    );

  let answer;
  try {
    answer = await provider.complete({
      operation: input.operation,
      system: prompt.system,
      user: prompt.user,
      schemaName: format.name,
      schema: format.jsonSchema,
      maxOutputTokens: prompt.maxOutputTokens,
    });
  } catch (err) {
    await ledger('release', () => budget.release(reservation));
    throw err;
  }
  const usage = answer.usage ?? { promptTokens: reservation.tokens, completionTokens: 0 };
  await ledger('settle', () => budget.settle(reservation, usage, answer.model));
  deps.metrics?.aiTokens(input.operation, usage);
  if (answer.refused) throw new AppError('AI_REQUEST_FAILED', { cause: new Error('the model refused') });
  return { value: parseAnswer(format.schema, answer.text), model: answer.model };
}
