/**
 * Issue 28's resync at scale (`--only resync`: 100,000 messages). The resync's quota units do
 * not depend on how fast the inbox was listed before it, so the store is filled by the
 * service's own backfill with the quota lifted: a server of its own (its own database and
 * subscription, so that the main server takes none of this account's jobs) with its pacer off
 * (GMAIL_QUOTA_UNITS_PER_SECOND=0) against the stand-in without a quota. That server stops; one
 * with Gmail's real pacing (250 units/s) starts on the same database, the stand-in enforces the
 * same quota, and the resync runs as after item 7's backfill: 1 % of the inbox changed, the
 * history expired, the next notification. Afterwards every stored message and inbox thread is
 * compared with the provider's mailbox.
 */
import pg from 'pg';
import { backgroundSyncDone, signIn, type NodeProcess } from '../infra.ts';
import type { BenchReport } from '../report.ts';
import { checkStore, resync, unitsOf } from '../scenarios.ts';
import { settings, step, WEB_ORIGIN } from './bench.settings.ts';
import type { BenchWorld } from './bench.world.ts';

export async function measureResync(world: BenchWorld, report: BenchReport): Promise<void> {
  const { db, gmail, identity, pubsub } = world;
  const n = settings.resyncMessages;
  const email = 'resync@bench.example';
  const database = `${db.name}_resync`;
  await db.pool.query(`create database "${database}"`);
  const url = new URL(db.url);
  url.pathname = `/${database}`;
  const pool = new pg.Pool({ connectionString: url.toString(), max: 3 });
  pool.on('error', () => undefined);
  pubsub.createTopic('mail-resync');
  pubsub.createSubscription('mail-resync', 'mail-resync', { ackDeadlineSeconds: 30 });
  const env = (quota: number) => ({
    DATABASE_URL: url.toString(),
    PUBSUB_TOPIC: 'projects/bench-project/topics/mail-resync',
    PUBSUB_SUBSCRIPTION: 'mail-resync',
    GMAIL_QUOTA_UNITS_PER_SECOND: String(quota),
  });
  const servers: NodeProcess[] = [];
  try {
    gmail.setLatency(0);
    gmail.setQuota(null);
    gmail.seed(email, n, { sentReplies: false });
    step(`resync: a ${n}-message inbox, backfilled by a server with its pacer off against the stand-in without a quota`);
    const fill = (await world.startSecondServer({ name: 'resync-fill', env: env(0) })).server;
    servers.push(fill);
    gmail.resetCounters();
    const t0 = performance.now();
    const account = await signIn(fill.url, WEB_ORIGIN, identity, { sub: 'bench-resync', email }, pool, 60 * 60_000);
    const fillMs = Math.round(performance.now() - t0);
    const fillUnits = unitsOf(gmail.calls);
    const providerRequests = gmail.requests.length;
    await fill.stop();
    const filled = await checkStore(gmail, pool, email, account.accountId);
    step(`resync: backfilled ${filled.storedInbox}/${filled.providerInbox} in ${(fillMs / 1000).toFixed(1)} s (${fillUnits} units); the store ${filled.equal ? 'equals' : 'DIFFERS FROM'} the provider's`);

    const paced = (await world.startSecondServer({ name: 'resync', env: env(settings.resyncQuota) })).server;
    servers.push(paced);
    await backgroundSyncDone(pool, account.accountId);
    gmail.setQuota(settings.resyncQuota);
    step(`resync: ${(settings.resyncChangeShare * 100).toFixed(0)} % changed, the history expired; the server paces and the stand-in enforces ${settings.resyncQuota} units/s`);
    const r = await resync({ gmail, pool, setForwarding: (on) => world.setForwarding(on) }, email, account.accountId, settings.resyncChangeShare);
    const refused = gmail.calls['quota-refused'] ?? 0;
    gmail.setQuota(null);
    await paced.stop();
    report.resync = { messages: n, fill: { ms: fillMs, units: fillUnits, providerRequests, check: filled }, quotaUnitsPerSecond: settings.resyncQuota, refused, resync: r };
    step(`resync: ${r.units} units for ${r.changed} changes against ${r.fetchAllUnits} for fetching every message (${(r.share * 100).toFixed(2)} %), ${refused} refused, ${(r.ms / 1000).toFixed(1)} s; the store ${r.check?.equal ? 'equals' : 'DIFFERS FROM'} the provider's`);
  } finally {
    gmail.setQuota(null);
    world.setForwarding(false);
    for (const s of servers) await s.stop();
    await pool.end();
    await db.pool.query(`drop database if exists "${database}" with (force)`);
  }
}
