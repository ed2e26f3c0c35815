/**
 * Bench item 12 (issue 29): the 2,000-change burst over the freshness accounts, drained by the
 * service and by the sync floor in interleaved rounds (service first), 50 ms provider latency.
 * Runs after item 6 on its signed-in accounts; alone (`--only burst`) it signs them in.
 */
import { signIn } from '../infra.ts';
import type { BenchReport } from '../report.ts';
import {
  cpuReader,
  floorBurst,
  serviceBurst,
  watcherConnection,
  type BurstAccount,
  type BurstFloorResult,
} from '../scenarios.ts';
import { median, settings, step, WEB_ORIGIN } from './bench.settings.ts';
import type { BenchWorld } from './bench.world.ts';

export async function measureBurst(world: BenchWorld, report: BenchReport): Promise<void> {
  const { db, gmail, identity, server } = world;
  const accounts: BurstAccount[] = [];
  step(`burst: ${settings.freshnessAccounts} signed-in accounts (the freshness phase's, or signed in now)`);
  for (let i = 0; i < settings.freshnessAccounts; i++) {
    const email = `fresh${i}@bench.example`;
    const { rows } = await db.pool.query<{ id: string }>('/*bench*/ select id from accounts where sub = $1', [
      `bench-fresh-${i}`,
    ]);
    accounts.push({
      email,
      accountId:
        rows[0]?.id ??
        (await signIn(server.url, WEB_ORIGIN, identity, { sub: `bench-fresh-${i}`, email }, db.pool)).accountId,
    });
  }
  const floor = await world.startSyncFloor();
  const tokens = new Map<string, string>();
  const token = (email: string) => tokens.get(email) ?? tokens.set(email, world.floorToken(email)).get(email)!;
  const result: BurstFloorResult = {
    accounts: accounts.length,
    changes: settings.freshnessBurst,
    latencyMs: settings.providerLatencyMs,
    floorConcurrency: settings.burstFloorConcurrency,
    rounds: [],
    ratio: null,
  };
  gmail.setLatency(settings.providerLatencyMs);
  // The bench polls for the stored rows on a connection of its own, left out of the database's CPU.
  const watcher = await watcherConnection(db);
  let offset = 1_000_000;
  for (let round = 0; round < settings.burstRounds; round++) {
    for (const target of ['service', 'floor'] as const) {
      step(`burst: round ${round + 1}, ${target}, ${settings.freshnessBurst} changes`);
      offset += settings.freshnessBurst;
      const r =
        target === 'service'
          ? await serviceBurst({
              accounts,
              gmail,
              pool: watcher.client,
              changes: settings.freshnessBurst,
              offset,
              timeoutMs: settings.drainTimeoutMs,
              cpu: cpuReader(server.pid, db, [watcher.pid]),
              setForwarding: world.setForwarding,
            })
          : await (async () => {
              // The service's jobs of its round (a late notification's, a follow-up's) would sync the floor's changes first.
              await syncJobsSettled(watcher.client, settings.drainTimeoutMs);
              return floorBurst({
                accounts,
                gmail,
                floorUrl: floor.url,
                token,
                changes: settings.freshnessBurst,
                offset,
                concurrency: settings.burstFloorConcurrency,
                cpu: cpuReader(floor.pid, db),
              });
            })();
      result.rounds.push(r);
      step(
        `burst: ${target} drained ${r.stored}/${r.changes} in ${r.drainMs ?? 'timeout'} ms, ${r.syncs} syncs, CPU ${r.cpuMs.process} ms process + ${r.cpuMs.database} ms database${r.p99Ms != null ? `, p99 ${r.p99Ms} ms` : ''}`,
      );
    }
  }
  gmail.setLatency(0);
  await watcher.close();
  const drains = (t: 'service' | 'floor') =>
    result.rounds.filter((r) => r.target === t && r.drainMs !== null).map((r) => r.drainMs!);
  const s = drains('service');
  const f = drains('floor');
  result.ratio = s.length === settings.burstRounds && f.length ? median(s) / median(f) : null;
  report.burst = result;
}

/** Until no sync job waits or runs (or `timeoutMs`): the service is done with its round. */
async function syncJobsSettled(
  client: { query<R>(q: string): Promise<{ rows: R[] }> },
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const { rows } = await client.query<{ n: string }>(
      `/*bench*/ select count(*) as n from pgboss.job where name = 'mail-sync' and state in ('created', 'retry', 'active')`,
    );
    if (Number(rows[0]!.n) === 0) return;
    await new Promise((r) => setTimeout(r, 250));
  }
}
