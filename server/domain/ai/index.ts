/**
 * The AI feature as the container holds it: budget, analysis and drafts over the provider
 * the container built. Tests build their own (an injected clock, another provider) and put
 * it in place of the container's.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../../infra/logger.ts';
import type { Metrics } from '../../infra/metrics.ts';
import type { AiProvider } from '../../providers/openai.ts';
import { createAnalysisService, type AnalysisService } from './analysis.service.ts';
import { createBudgetService, type BudgetLimits, type BudgetService } from './budget.service.ts';
import { createDraftService, type DraftService } from './draft.service.ts';
import type { EnsureBodies } from './thread-context.ts';

export interface AiFeature {
  provider: AiProvider;
  budget: BudgetService;
  analysis: AnalysisService;
  drafts: DraftService;
}

export interface AiFeatureOptions {
  provider: AiProvider;
  /** The daily and monthly token budgets. */
  limits: BudgetLimits;
  orm: MikroORM;
  log: Logger;
  /** Fetches a thread's bodies before they are read (the mail feature's threadBodies.ensure). */
  ensureBodies: EnsureBodies;
  now?: () => Date;
  metrics?: Pick<Metrics, 'aiTokens'>;
}

export function createAiFeature(opts: AiFeatureOptions): AiFeature {
  const now = opts.now ?? (() => new Date());
  const { provider, orm, log, ensureBodies } = opts;
  const budget = createBudgetService({ orm, limits: opts.limits, now });
  const deps = { provider, budget, log, orm, ensureBodies, now, metrics: opts.metrics };
  return { provider, budget, analysis: createAnalysisService(deps), drafts: createDraftService(deps) };
}
