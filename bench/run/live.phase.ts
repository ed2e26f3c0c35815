/**
 * Bench items 6, 7 and 9: freshness of the live inbox — provider change to visible
 * in the list — for many signed-in accounts, at a steady rate and in a burst, through the
 * server's own intake, job engine and sync workers; and a sign-in's backfill under the
 * provider's quota.
 */
import { cpuMs, postgresCpu, signIn, type BenchDatabase } from '../infra.ts';
import type { BenchReport } from '../report.ts';
import { backfill, freshness, twoInstances } from '../scenarios.ts';
import { benchQuota, quotaText, settings, step, WEB_ORIGIN } from './bench.settings.ts';
import { BENCH_ADMIN_TOKEN, type BenchWorld } from './bench.world.ts';

/**
 * Cumulative CPU (ms) of the server, the database's backends (each one's growth since it was
 * last read, so backends that come and go never make it fall) and this process (the stand-ins).
 */
function cumulativeCpu(serverPid: number, db: BenchDatabase) {
  const seen = new Map<number, number>();
  let databaseMs = 0;
  return () => {
    for (const [pid, ms] of postgresCpu(db.name, db.postmasterPid)) {
      databaseMs += ms - Math.min(ms, seen.get(pid) ?? 0);
      seen.set(pid, ms);
    }
    const own = process.cpuUsage();
    return {
      server: cpuMs(serverPid) ?? 0,
      database: databaseMs,
      'bench process (stand-ins)': (own.user + own.system) / 1000,
    };
  };
}

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
  step(
    `freshness: ${settings.freshnessPerSecond} changes/s for ${settings.freshnessSeconds} s, then a burst of ${settings.freshnessBurst} (provider latency ${settings.providerLatencyMs} ms)`,
  );
  report.freshness = await freshness({
    emails,
    gmail,
    pool: db.pool,
    latencyMs: settings.providerLatencyMs,
    steadyPerSecond: settings.freshnessPerSecond,
    steadySeconds: settings.freshnessSeconds,
    burst: settings.freshnessBurst,
    timeoutMs: settings.drainTimeoutMs,
    cpu: cumulativeCpu(server.pid, db),
  });
  world.setForwarding(false);
  for (const p of report.freshness.phases)
    step(`freshness ${p.name}: p50 ${p.p50Ms} ms, p99 ${p.p99Ms} ms (${p.visible}/${p.changes} visible)`);
}

export async function measureBackfill(world: BenchWorld, report: BenchReport): Promise<void> {
  const { db, gmail, identity, server } = world;
  step(
    `backfill: a ${settings.backfillMessages}-message inbox from sign-in to fully listed, provider quota ${quotaText(benchQuota)} (the server paces the same)`,
  );
  report.backfill = await backfill({
    serverUrl: server.url,
    webOrigin: WEB_ORIGIN,
    identity,
    gmail,
    pool: db.pool,
    messages: settings.backfillMessages,
    quota: benchQuota,
    arrivalEveryMs: settings.backfillArrivalMs,
    openEveryMs: settings.backfillOpenEveryMs,
    resyncChangeShare: settings.resyncChangeShare,
    setForwarding: (on) => world.setForwarding(on),
  });
  const b = report.backfill;
  step(
    `backfill: ${b.stored}/${b.messages} stored in ${(b.ms / 1000).toFixed(1)} s (optimum ${(b.optimumMs / 1000).toFixed(1)} s, ratio ${(b.ratio * 100).toFixed(0)} %), ${b.refused} calls refused, quota peak ${b.quotaPeak}/${b.quota.unitsPerWindow}, ${b.unitsPerMessage.toFixed(2)} units per message`,
  );
  if (b.opens)
    step(
      `backfill: ${b.opens.count} threads opened meanwhile (${b.opens.non200} not 200), p50 ${b.opens.p50Ms} ms, p99 ${b.opens.p99Ms} ms, max ${b.opens.maxMs} ms`,
    );
  if (b.arrivals)
    step(
      `backfill: ${b.arrivals.stored}/${b.arrivals.count} arriving messages stored, p50 ${b.arrivals.p50Ms} ms, p99 ${b.arrivals.p99Ms} ms`,
    );
  if (b.resync)
    step(
      `resync: ${b.resync.units} quota units for ${b.resync.changed} changes, ${(b.resync.share * 100).toFixed(2)} % of fetching every message`,
    );
}

export async function measureTwoInstances(world: BenchWorld, report: BenchReport): Promise<void> {
  const { db, gmail, identity, server, serverLog } = world;
  step('two instances: starting a second server on the same database and subscription');
  const second = await world.startSecondServer();
  const bothUpSince = Date.now();
  const emails: string[] = [];
  for (let i = 0; i < settings.twoAccounts; i++) {
    const email = `two${i}@bench.example`;
    await signIn(server.url, WEB_ORIGIN, identity, { sub: `bench-two-${i}`, email }, db.pool);
    emails.push(email);
  }
  const metrics = (url: string) => async () =>
    (await fetch(`${url}/metrics`, { headers: { Authorization: `Bearer ${BENCH_ADMIN_TOKEN}` } })).text();
  world.setForwarding(true);
  gmail.setLatency(settings.providerLatencyMs);
  step(
    `two instances: ${settings.twoPerSecond} changes/s over ${settings.twoAccounts} accounts${settings.twoUntilPeriods ? ', until a period of the 10-minute jobs has begun and run (up to 11 minutes)' : ''}`,
  );
  report.twoInstances = await twoInstances({
    emails,
    gmail,
    pool: db.pool,
    instances: [
      { metrics: metrics(server.url), logFile: serverLog },
      { metrics: metrics(second.server.url), logFile: second.logFile },
    ],
    bothUpSince,
    perSecond: settings.twoPerSecond,
    minSeconds: settings.twoSeconds,
    untilPeriods: settings.twoUntilPeriods,
    timeoutMs: settings.drainTimeoutMs,
  });
  gmail.setLatency(0);
  world.setForwarding(false);
  await second.server.stop();
  const t = report.twoInstances;
  step(
    `two instances: ${t.stored}/${t.changes} stored; syncs ${JSON.stringify(t.instances.map((i) => i.syncJobs))}; fetched twice ${t.fetchedTwice}; scheduled ${t.scheduled.map((s) => `${s.job} ${s.runs.join('+')}/${s.periods}`).join(', ')}`,
  );
}
