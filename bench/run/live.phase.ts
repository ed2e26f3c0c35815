/**
 * Bench items 6 and 7 (issue 16): freshness of the live inbox — provider change to visible
 * in the list — for many signed-in accounts, at a steady rate and in a burst, through the
 * server's own intake, job engine and sync workers; and a sign-in's backfill under the
 * provider's quota.
 */
import { signIn } from '../infra.ts';
import type { BenchReport } from '../report.ts';
import { backfill, freshness } from '../scenarios.ts';
import { settings, step, WEB_ORIGIN } from './bench.settings.ts';
import type { BenchWorld } from './bench.world.ts';

export async function measureFreshness(world: BenchWorld, report: BenchReport): Promise<void> {
  const { db, gmail, identity, server } = world;
  step(`freshness: signing in ${settings.freshnessAccounts} accounts`);
  const emails: string[] = [];
  for (let i = 0; i < settings.freshnessAccounts; i++) {
    const email = `fresh${i}@bench.example`;
    await signIn(server.url, WEB_ORIGIN, identity, { sub: `bench-fresh-${i}`, email }, db.pool);
    emails.push(email);
  }
  world.setForwarding(true);
  step(`freshness: ${settings.freshnessPerSecond} changes/s for ${settings.freshnessSeconds} s, then a burst of ${settings.freshnessBurst} (provider latency ${settings.providerLatencyMs} ms)`);
  report.freshness = await freshness({
    emails,
    gmail,
    pool: db.pool,
    latencyMs: settings.providerLatencyMs,
    steadyPerSecond: settings.freshnessPerSecond,
    steadySeconds: settings.freshnessSeconds,
    burst: settings.freshnessBurst,
    timeoutMs: settings.pollerTimeoutMs,
  });
  world.setForwarding(false);
  for (const p of report.freshness.phases) step(`freshness ${p.name}: p50 ${p.p50Ms} ms, p99 ${p.p99Ms} ms (${p.visible}/${p.changes} visible)`);
}

export async function measureBackfill(world: BenchWorld, report: BenchReport): Promise<void> {
  const { db, gmail, identity, server } = world;
  step(`backfill: a ${settings.backfillMessages}-message inbox from sign-in to fully listed, provider quota ${settings.backfillQuota} units/s`);
  report.backfill = await backfill({ serverUrl: server.url, webOrigin: WEB_ORIGIN, identity, gmail, pool: db.pool, messages: settings.backfillMessages, quotaUnitsPerSecond: settings.backfillQuota });
  const b = report.backfill;
  step(`backfill: ${b.stored}/${b.messages} stored in ${(b.ms / 1000).toFixed(1)} s (optimum ${(b.optimumMs / 1000).toFixed(1)} s, ratio ${(b.ratio * 100).toFixed(0)} %), ${b.refused} calls refused`);
}
