/**
 * The AI feature as the container holds it: provider, budget, analysis and drafts, built
 * from the config. Tests build their own (an injected clock, a short timeout) and put it
 * in place of the container's.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../../infra/config.ts';
import type { Logger } from '../../infra/logger.ts';
import type { Metrics } from '../../infra/metrics.ts';
import { createOpenAiProvider, type AiProvider } from '../../providers/openai.ts';
import { createAnalysisService, type AnalysisService } from './analysis.service.ts';
import { createBudgetService, type BudgetService } from './budget.service.ts';
import { createDraftService, type DraftService } from './draft.service.ts';
import type { EnsureBodies } from './thread-context.ts';

export interface AiFeature {
  provider: AiProvider;
  budget: BudgetService;
  analysis: AnalysisService;
  drafts: DraftService;
}

export interface AiFeatureOptions {
  config: Readonly<Config>;
  orm: MikroORM;
  log: Logger;
  /** Fetches a thread's bodies before they are read (the mail feature's threadBodies.ensure). */
  ensureBodies: EnsureBodies;
  now?: () => Date;
  provider?: AiProvider;
  timeoutMs?: number;
  metrics?: Pick<Metrics, 'aiTokens'>;
}

export function createAiFeature(opts: AiFeatureOptions): AiFeature {
  const now = opts.now ?? (() => new Date());
  const { config, orm, log, ensureBodies } = opts;
  const provider =
    opts.provider ??
    createOpenAiProvider({ apiKey: config.openai.apiKey, baseUrl: config.openai.baseUrl, model: config.openai.model, log, timeoutMs: opts.timeoutMs });
  const budget = createBudgetService({ orm, limits: config.aiBudget, now });
  const deps = { provider, budget, log, orm, ensureBodies, now, metrics: opts.metrics };
  return { provider, budget, analysis: createAnalysisService(deps), drafts: createDraftService(deps) };
}
