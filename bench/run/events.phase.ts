/**
 * Bench item 14: live events (issue 30). A server of its own (the same configuration, database
 * and subscription as the main one; heap probe preloaded) holds the streams: first N idle
 * streams (5 per session, the limit) and its memory next to none, then one stream per account
 * while changes arrive at a fixed rate (the notifications forwarded, either server syncing).
 */
import { existsSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { cpuMs, postgresCpu, ROOT, signIn } from '../infra.ts';
import type { BenchReport } from '../report.ts';
import { idleStreamMemory, streamFreshness, type MemoryReading } from '../scenarios/live-events.scenario.ts';
import { settings, step, WEB_ORIGIN } from './bench.settings.ts';
import type { BenchWorld } from './bench.world.ts';

const PER_SESSION = 5;
const PER_ACCOUNT = 20;

export async function measureLiveEvents(world: BenchWorld, report: BenchReport, work: string): Promise<void> {
  const { db, gmail, identity, server } = world;
  const heapFile = path.join(work, 'events-heap.json');
  const { server: events } = await world.startSecondServer({
    name: 'events',
    env: { MIA_BENCH_HEAP_FILE: heapFile },
    nodeArgs: ['--import', path.join(ROOT, 'bench/run/events-heap.probe.ts')],
  });
  const read = async (): Promise<MemoryReading> => {
    rmSync(heapFile, { force: true });
    process.kill(events.pid, 'SIGUSR2');
    while (!existsSync(heapFile)) await new Promise((r) => setTimeout(r, 20));
    await new Promise((r) => setTimeout(r, 20));
    return JSON.parse(readFileSync(heapFile, 'utf8')) as MemoryReading;
  };

  const n = settings.eventsAccounts;
  const sessionsNeeded = Math.ceil(settings.eventsIdleStreams / PER_SESSION);
  if (sessionsNeeded > n * (PER_ACCOUNT / PER_SESSION))
    throw new Error('live events: more idle streams than the accounts may open');
  step(`live events: signing in ${n} accounts, ${sessionsNeeded} sessions`);
  const accounts: { email: string; cookie: string }[] = [];
  const sessions: string[] = [];
  for (let i = 0; i < Math.max(n, sessionsNeeded); i++) {
    const a = i % n;
    const email = `live${a}@bench.example`;
    const signed = await signIn(server.url, WEB_ORIGIN, identity, { sub: `bench-live-${a}`, email }, db.pool);
    if (i < n) accounts.push({ email, cookie: signed.cookie });
    if (i < sessionsNeeded) sessions.push(signed.cookie);
  }

  step(`live events: memory with ${settings.eventsIdleStreams} idle streams`);
  const memory = await idleStreamMemory({ url: events.url, sessions, streams: settings.eventsIdleStreams, read });
  // The closed streams' places are freed by the server (in batches) before the next part opens more; bounded: unfreed ones lapse.
  const freedBy = Date.now() + 120_000;
  while (
    Number(
      (await db.pool.query<{ n: string }>('/*bench*/ select count(*) as n from event_streams where expires_at > now()'))
        .rows[0]!.n,
    ) > 0
  ) {
    if (Date.now() > freedBy) throw new Error("live events: the closed streams' places were not freed");
    await new Promise((r) => setTimeout(r, 50));
  }
  step(`live events: ${memory.rssPerStreamBytes} B resident, ${memory.heapPerStreamBytes} B heap per stream`);

  step(
    `live events: freshness, ${settings.eventsPerSecond} changes/s for ${settings.eventsSeconds} s over ${n} streams`,
  );
  const seen = new Map<number, number>();
  let databaseMs = 0;
  const cpu = () => {
    for (const [pid, ms] of postgresCpu(db.name, db.postmasterPid)) {
      databaseMs += ms - Math.min(ms, seen.get(pid) ?? 0);
      seen.set(pid, ms);
    }
    return {
      'server holding the streams': cpuMs(events.pid) ?? 0,
      'other server': cpuMs(server.pid) ?? 0,
      database: databaseMs,
    };
  };
  world.setForwarding(true);
  const freshness = await streamFreshness({
    url: events.url,
    accounts,
    gmail,
    perSecond: settings.eventsPerSecond,
    seconds: settings.eventsSeconds,
    timeoutMs: settings.drainTimeoutMs,
    cpu,
  });
  world.setForwarding(false);
  step(
    `live events: p50 ${freshness.p50Ms} ms, p99 ${freshness.p99Ms} ms (${freshness.delivered}/${freshness.changes} delivered)`,
  );
  report.liveEvents = { memory, freshness };
  await events.stop();
}
