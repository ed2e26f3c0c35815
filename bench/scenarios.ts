/**
 * The measurements: the thread list under load (autocannon, service and bare floor), its
 * query plans, one sync call against the slow mail stand-in, and a burst of notifications
 * taken in and synced by the live inbox.
 */
export * from './scenarios/list.scenario.ts';
export * from './scenarios/notification-burst.scenario.ts';
export * from './scenarios/freshness.scenario.ts';
export * from './scenarios/backfill.scenario.ts';
export * from './scenarios/resync.scenario.ts';
export * from './scenarios/mail-corpus.scenario.ts';
export * from './scenarios/sync.scenario.ts';
export * from './scenarios/two-instances.scenario.ts';
export * from './scenarios/tracing.scenario.ts';
export * from './scenarios/sync-cpu.scenario.ts';
export * from './scenarios/burst-floor.scenario.ts';
export * from './scenarios/heavy-thread.scenario.ts';
export * from './scenarios/heavy-opens.scenario.ts';
export * from './scenarios/live-events.scenario.ts';
export * from './scenarios/auto-triage.scenario.ts';
