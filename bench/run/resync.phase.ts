/**
 * Issue 28's resync at scale (`--only resync`: 100,000 messages). The resync's quota units do
 * not depend on how fast the inbox was listed before it, so the store is filled by the
 * service's own backfill with the quota lifted: a server of its own (its own database and
 * subscription, so that the main server takes none of this account's jobs) with its pacer off
 * (GMAIL_USER_UNITS_PER_MINUTE=0) against the stand-in charging the 2026 costs without refusing
 * (`unitsPerWindow: Infinity`). That server stops; one with the bench's pacing (the 2026
 * profile, 6,000 units per 10 s window: bench.settings.ts) starts on the same database, the
 * stand-in enforces the same window and limit, and the resync runs as after item 7's backfill:
 * 1 % of the inbox changed, the history expired, the next notification. Afterwards every stored
 * message and inbox thread is compared with the provider's mailbox.
 */
import { backgroundSyncDone, signIn, type NodeProcess } from '../infra.ts';
import type { BenchReport } from '../report.ts';
import { checkStore, resync, unitsOf } from '../scenarios.ts';
import { benchQuota, quotaText, settings, step, WEB_ORIGIN } from './bench.settings.ts';
import { quotaEnv, type BenchWorld } from './bench.world.ts';

export async function measureResync(world: BenchWorld, report: BenchReport): Promise<void> {
  const { gmail, identity } = world;
  const n = settings.resyncMessages;
  const email = 'resync@bench.example';
  const store = await world.isolated('resync');
  const { pool } = store;
  const env = (unitsPerWindow: number) => ({ ...store.env, ...quotaEnv(unitsPerWindow) });
  const servers: NodeProcess[] = [];
  try {
    gmail.setLatency(0);
    gmail.setQuota(null);
    gmail.seed(email, n, { sentReplies: false });
    // Charged at 2026 costs, never refused: the fill's units are the stand-in's own count.
    gmail.setQuota({ ...benchQuota, unitsPerWindow: Infinity });
    step(
      `resync: a ${n}-message inbox, backfilled by a server with its pacer off against the stand-in without a limit`,
    );
    const fill = (await world.startSecondServer({ name: 'resync-fill', env: env(0) })).server;
    servers.push(fill);
    gmail.resetCounters();
    const t0 = performance.now();
    const account = await signIn(fill.url, WEB_ORIGIN, identity, { sub: 'bench-resync', email }, pool, 60 * 60_000);
    const fillMs = Math.round(performance.now() - t0);
    const fillUnits = gmail.quotaSpent(email) || unitsOf(gmail.calls);
    const providerRequests = gmail.requests.length;
    await fill.stop();
    const filled = await checkStore(gmail, pool, email, account.accountId);
    step(
      `resync: backfilled ${filled.storedInbox}/${filled.providerInbox} in ${(fillMs / 1000).toFixed(1)} s (${fillUnits} units); the store ${filled.equal ? 'equals' : 'DIFFERS FROM'} the provider's`,
    );

    const paced = (await world.startSecondServer({ name: 'resync', env: env(benchQuota.unitsPerWindow) })).server;
    servers.push(paced);
    await backgroundSyncDone(pool, account.accountId);
    gmail.setQuota(benchQuota);
    step(
      `resync: ${(settings.resyncChangeShare * 100).toFixed(0)} % changed, the history expired; the server paces and the stand-in enforces ${quotaText(benchQuota)}`,
    );
    const r = await resync(
      { gmail, pool, setForwarding: (on) => world.setForwarding(on) },
      email,
      account.accountId,
      settings.resyncChangeShare,
    );
    const refused = gmail.calls['quota-refused'] ?? 0;
    const quotaPeak = gmail.quotaPeak(email);
    gmail.setQuota(null);
    await paced.stop();
    report.resync = {
      messages: n,
      fill: { ms: fillMs, units: fillUnits, providerRequests, check: filled },
      quota: { ...benchQuota },
      refused,
      quotaPeak,
      resync: r,
    };
    step(
      `resync: ${r.units} units for ${r.changed} changes against ${r.fetchAllUnits} for fetching every message (${(r.share * 100).toFixed(2)} %), ${refused} refused, ${(r.ms / 1000).toFixed(1)} s; the store ${r.check?.equal ? 'equals' : 'DIFFERS FROM'} the provider's`,
    );
  } finally {
    gmail.setQuota(null);
    world.setForwarding(false);
    for (const s of servers) await s.stop();
    await store.drop();
  }
}
