/**
 * Every scenario `npm run bench -- --only` names; a full run runs them all, in run.ts's order.
 * `burst` runs on the freshness phase's accounts (alone, it signs them in). No side effects:
 * the smoke tests import it.
 */
export const ALL_SCENARIOS = [
  'list',
  'sync',
  'synccpu',
  'notifications',
  'freshness',
  'burst',
  'backfill',
  'resync',
  'corpus',
  'heavy',
  'heavyopens',
  'two',
  'tracing',
  'events',
  'triage',
] as const;
