/**
 * Bench items 2, 3 and 4 for syncing: one 50-message sync (first listing page and incremental)
 * at each size against the latency of the Gmail stand-in, and the live inbox (intake and sync
 * workers) taking in a burst of notifications for many accounts.
 */
import { readFileSync } from 'node:fs';
import { quotaRoom, signIn, type SignedIn } from '../infra.ts';
import type { BenchReport } from '../report.ts';
import { checkpointAt, notificationBurst, resetToListing, syncOnce, type SyncRun } from '../scenarios.ts';
import { benchQuota, median, settings, step, WEB_ORIGIN } from './bench.settings.ts';
import type { BenchWorld } from './bench.world.ts';

export async function measureSync(
  world: BenchWorld,
  report: BenchReport,
  listAccounts: Map<number, SignedIn>,
): Promise<void> {
  const { db, gmail, server } = world;
  gmail.setLatency(0);
  for (const size of settings.sizes) gmail.seed(`list${size}@bench.example`, 2 * 50 + 10, { sentReplies: false });
  gmail.setLatency(settings.providerLatencyMs);
  for (const size of settings.sizes) {
    const account = listAccounts.get(size)!;
    const runs: SyncRun[] = [];
    // Each sync is 50 messages.get at 20 units (1,000 of the account's 6,000 per 10 s window): the
    // sixth in a row would wait for the first to leave the window. Each waits for room first, so
    // that the row is one sync's cost, not the pacer's wait.
    const room = () => quotaRoom(db.pool, account.accountId, 50 * 20 + 10, benchQuota);
    for (let i = 0; i < settings.syncRepeats; i++) {
      await resetToListing(db.pool, account.accountId);
      await room();
      runs.push(
        await syncOnce({
          kind: 'listing',
          threads: size,
          serverUrl: server.url,
          webOrigin: WEB_ORIGIN,
          account,
          gmail,
          latencyMs: settings.providerLatencyMs,
          db,
        }),
      );
    }
    for (let i = 0; i < settings.syncRepeats; i++) {
      await checkpointAt(db.pool, account.accountId, gmail.historyId(account.email));
      gmail.setLatency(0);
      for (let k = 0; k < 50; k++) gmail.addMessage(account.email, { subject: `Incremental ${i}.${k}` });
      gmail.setLatency(settings.providerLatencyMs);
      await room();
      runs.push(
        await syncOnce({
          kind: 'incremental',
          threads: size,
          serverUrl: server.url,
          webOrigin: WEB_ORIGIN,
          account,
          gmail,
          latencyMs: settings.providerLatencyMs,
          db,
        }),
      );
    }
    for (const kind of ['listing', 'incremental'] as const) {
      const of = runs.filter((r) => r.kind === kind);
      report.sync.push({ threads: size, kind, wallMsMedian: median(of.map((r) => r.wallMs)), runs: of });
      const last = of.at(-1)!;
      step(
        `sync ${kind} at ${size} threads: ${median(of.map((r) => r.wallMs)).toFixed(0)} ms, ${last.providerRequests} provider requests in ${last.providerRoundTrips} round trips, ${last.syncStatements ?? '?'} statements (status ${last.status}, ${last.messagesSynced} synced)`,
      );
    }
  }
  gmail.setLatency(0);
}

export async function measureNotificationBurst(world: BenchWorld, report: BenchReport): Promise<void> {
  const { db, gmail, identity, pubsub, server, serverLog, subscription } = world;
  step(`notifications: signing in ${settings.burstAccounts} accounts and syncing them once`);
  const accounts: SignedIn[] = [];
  for (let i = 0; i < settings.burstAccounts; i++) {
    const email = `poll${i}@bench.example`;
    gmail.seed(email, 5, { sentReplies: false });
    accounts.push(await signIn(server.url, WEB_ORIGIN, identity, { sub: `bench-poll-${i}`, email }, db.pool));
  }
  const watched = async () => {
    for (let i = 0; i < 100; i++) {
      if (accounts.every((a) => gmail.watches(a.email).some((w) => w.kind === 'watch'))) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('mail watches were not registered');
  };
  await watched();
  // Each sign-in's background sync stored its inbox (signIn waits for it).
  step(
    `notifications: ${settings.burstAccounts * settings.burstPerAccount} new messages and notifications (provider latency ${settings.providerLatencyMs} ms)`,
  );
  report.notifications = await notificationBurst({
    accounts,
    perAccount: settings.burstPerAccount,
    gmail,
    pubsub,
    subscription,
    pool: db.pool,
    latencyMs: settings.providerLatencyMs,
    setForwarding: world.setForwarding,
    countSyncs: async (since) => countSyncLines(serverLog, since),
    timeoutMs: settings.drainTimeoutMs,
  });
  gmail.setLatency(0);
  step(
    `notifications: all stored after ${report.notifications.allStoredMs?.toFixed(0) ?? 'timeout'} ms, drained after ${report.notifications.drainedMs?.toFixed(0) ?? 'timeout'} ms, ${report.notifications.syncs} syncs, ${report.notifications.providerRequests} provider requests`,
  );
}

/** Sync calls the server logged ('mail sync' and 'mail sync failed') since a time. */
function countSyncLines(file: string, sinceMs: number): number {
  let n = 0;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.includes('"mail sync')) continue;
    try {
      const entry = JSON.parse(line) as { msg?: string; time?: string };
      if (
        (entry.msg === 'mail sync' || entry.msg === 'mail sync failed') &&
        entry.time &&
        Date.parse(entry.time) >= sinceMs
      )
        n++;
    } catch {
      /* not a log line */
    }
  }
  return n;
}
