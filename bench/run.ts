/**
 * `npm run bench` — the service's benchmark, in one run against the real server (spawned as
 * its own process as npm start runs it) and a real PostgreSQL
 * (an embedded cluster of its own, durable default settings, pg_stat_statements loaded):
 *
 *   1. GET /api/mail/threads?limit=50 for an account with 100k threads (1,000 other accounts
 *      in the same tables) under autocannon load, next to a bare Koa handler serving the
 *      same SQL with the same driver (the floor); EXPLAIN ANALYZE of the statement.
 *   2. One 50-message sync against the Gmail stand-in with 50 ms latency per request.
 *   3. 1,000 notifications for 100 accounts taken in and synced by the live inbox.
 *   4. Items 1 and 2 at 1k, 10k and 100k stored threads.
 *   5. Resident memory of the server, idle and under the load of item 1.
 *   6. Freshness of the live inbox: provider change -> visible in the list, 1,000 accounts,
 *      20 changes/s and a burst of 2,000, 50 ms provider latency.
 *   7. Backfill: a 2,000-message inbox from sign-in to fully listed under the provider's
 *      per-user quota (Google's 2026 costs, 6,000 units per 10 s window: its per-minute limit
 *      in a scaled-down window), as a ratio to the quota-limited optimum, with the user opening
 *      threads meanwhile; the resync of a 100,000-message inbox by itself (`--only resync`;
 *      the backfill before it unpaced).
 *   8. Mail anyone can send: analysis prompt tokens (o200k_base) on the whole SpamAssassin
 *      corpus and on generated hostile mail; the server's event-loop delay while it backfills
 *      and opens such an inbox, next to idle.
 *   9. Two instances on one database and subscription: how the syncs split, no message
 *      fetched twice, each scheduled job once per cron period.
 *  10. Tracing: the server's CPU per list request with tracing on (exporting to a local OTLP
 *      receiver) next to off, in interleaved rounds.
 *  11. CPU per incremental sync of one new message (route and notification path) next to a
 *      floor making the same provider calls and writes with undici + pg; a CPU profile of it.
 *  12. The 2,000-change burst drained by the service and by the floor, interleaved.
 *  13. A heavy 100-message thread opened by 10 clients beside a normal user: event-loop delay,
 *      RSS, the normal user's latency next to idle; and (`heavyopens`) 4 accounts each opening 10
 *      such threads never opened before at once: RSS, the normal user's p99, the answers (200 or
 *      503 with Retry-After), the provider fetches one account had in flight.
 *  14. Live events: memory per idle open stream; provider change -> `threads` event on the
 *      account's open stream, p50/p99 at a fixed rate; CPU per event delivered.
 *  15. Analysis on arrival: 500 new messages over 50 accounts with autoTriage on; every eligible
 *      thread analysed, each account's share of the AI budget held to the token, the AI calls in
 *      flight bounded by the workers, the list's p99 during it next to idle.
 *
 * Prints the Markdown table and writes it (and the raw JSON) to bench/results/.
 *
 *   npm run bench                         full run (a few minutes)
 *   npm run bench -- --label after        name the result files …-after
 *   npm run bench -- --smoke              tiny sizes, a few seconds (used by the smoke test)
 *   options: --out <dir> --database-url <postgres url> --only list,sync,synccpu,notifications,freshness,burst,backfill,resync,corpus,heavy,heavyopens,two,tracing,events,triage
 *            --connections <n> --duration <s> --profile (V8 CPU profiles of the servers)
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { machine, ROOT, signIn, type SignedIn } from './infra.ts';
import { renderMarkdown, type BenchReport } from './report.ts';
import { args, only, settings, step, WEB_ORIGIN } from './run/bench.settings.ts';
import { startWorld } from './run/bench.world.ts';
import { measureList } from './run/list.phase.ts';
import { measureTracing } from './run/tracing.phase.ts';
import { measureCorpus } from './run/corpus.phase.ts';
import { measureBackfill, measureFreshness, measureTwoInstances } from './run/live.phase.ts';
import { measureResync } from './run/resync.phase.ts';
import { measureNotificationBurst, measureSync } from './run/sync-notifications.phase.ts';
import { measureSyncCpu } from './run/sync-cpu.phase.ts';
import { measureBurst } from './run/burst.phase.ts';
import { measureHeavyThread } from './run/heavy.phase.ts';
import { measureHeavyOpens } from './run/heavy-opens.phase.ts';
import { measureLiveEvents } from './run/events.phase.ts';
import { measureAutoTriage } from './run/auto-triage.phase.ts';
import { readStorage } from './storage.ts';
import { seedOtherAccounts, seedThreads, vacuumAnalyze } from './seed.ts';

async function main() {
  const cleanups: (() => Promise<unknown>)[] = [];
  const cleanup = async () => {
    for (const fn of cleanups.reverse())
      await fn().catch((err: unknown) => step(`cleanup failed: ${(err as Error).message}`));
    cleanups.length = 0;
  };
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
  try {
    return await run(cleanups);
  } finally {
    await cleanup();
  }
}

async function run(cleanups: (() => Promise<unknown>)[]) {
  const startedAt = new Date();
  const loadAtStart = loadavg().map((x) => Math.round(x * 100) / 100);
  const work = mkdtempSync(path.join(tmpdir(), 'mia-bench-'));
  step(`mode ${settings.mode}; logs in ${work}`);

  const world = await startWorld(work, cleanups);
  const { db, identity, server, serverRoot } = world;
  const memory: BenchReport['memory'] = {
    afterStartMiB: server.rss(),
    idleMiB: null,
    loadPeakMiB: null,
    loadMeanMiB: null,
    afterLoadMiB: null,
  };

  // Accounts of the list and sync measurements, signed in for real.
  const listAccounts = new Map<number, SignedIn>();
  for (const size of settings.sizes) {
    listAccounts.set(
      size,
      await signIn(
        server.url,
        WEB_ORIGIN,
        identity,
        { sub: `bench-list-${size}`, email: `list${size}@bench.example` },
        db.pool,
      ),
    );
  }
  step(
    `seeding ${settings.otherAccounts} other accounts x ${settings.otherThreadsEach} threads and ${settings.sizes.join(' / ')} threads`,
  );
  const seedStart = performance.now();
  await seedOtherAccounts(db.pool, settings.otherAccounts, settings.otherThreadsEach);
  for (const [size, account] of listAccounts) await seedThreads(db.pool, account.accountId, size, `t${size}-`);
  await vacuumAnalyze(db.pool);
  const seedMs = performance.now() - seedStart;
  const totals = (
    await db.pool.query<{ threads: string; messages: string; accounts: string }>(
      '/*bench*/ select (select count(*) from mail_threads) as threads, (select count(*) from mail_messages) as messages, (select count(*) from accounts) as accounts',
    )
  ).rows[0]!;
  step(
    `seeded in ${Math.round(seedMs)} ms: ${totals.threads} threads, ${totals.messages} messages, ${totals.accounts} accounts`,
  );

  const report: BenchReport = {
    startedAt: startedAt.toISOString(),
    label: args.label ?? null,
    serverRoot: args['server-root'] ? serverRoot : null,
    machine: {
      ...machine(),
      postgres: db.version,
      pgStatStatements: db.statements,
      loadAverageAtStart: loadAtStart,
      loadAverageAtEnd: null,
    },
    settings,
    data: {
      threads: Number(totals.threads),
      messages: Number(totals.messages),
      accounts: Number(totals.accounts),
      seedMs,
    },
    list: [],
    explain: [],
    sync: [],
    notifications: null,
    freshness: null,
    backfill: null,
    twoInstances: null,
    tracing: null,
    memory,
    logs: work,
  };

  if (only.has('list')) await measureList(world, report, listAccounts);
  // Right after the list, while the machine is as quiet as for it: the same load, tracing on and off.
  if (only.has('tracing')) await measureTracing(world, report, listAccounts);
  if (only.has('sync')) await measureSync(world, report, listAccounts);
  if (only.has('synccpu')) await measureSyncCpu(world, report);
  if (only.has('notifications')) await measureNotificationBurst(world, report);
  if (only.has('freshness')) await measureFreshness(world, report);
  if (only.has('burst')) await measureBurst(world, report);
  if (only.has('backfill')) await measureBackfill(world, report);
  if (only.has('resync')) await measureResync(world, report);
  if (only.has('corpus')) await measureCorpus(world, report);
  if (only.has('heavy')) await measureHeavyThread(world, report);
  if (only.has('heavyopens')) await measureHeavyOpens(world, report);
  if (only.has('two')) await measureTwoInstances(world, report);
  if (only.has('events')) await measureLiveEvents(world, report, work);
  if (only.has('triage')) await measureAutoTriage(world, report);

  report.storage = await readStorage(db.pool);
  report.machine.loadAverageAtEnd = loadavg().map((x) => Math.round(x * 100) / 100);
  const markdown = renderMarkdown(report);
  process.stdout.write(`${markdown}\n`);
  const outDir = path.resolve(args.out ?? path.join(ROOT, 'bench', 'results'));
  mkdirSync(outDir, { recursive: true });
  const stamp = startedAt.toISOString().slice(0, 10);
  const name = [
    stamp,
    report.machine.commit + (report.machine.dirty ? '-dirty' : ''),
    settings.mode === 'smoke' ? 'smoke' : undefined,
    args.label,
  ]
    .filter(Boolean)
    .join('-');
  writeFileSync(path.join(outDir, `${name}.md`), `${markdown}\n`);
  writeFileSync(path.join(outDir, `${name}.json`), `${JSON.stringify(report, null, 2)}\n`);
  step(`written ${path.join(outDir, name)}.md and .json`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(
      `bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}${err instanceof Error && err.cause ? `\ncause: ${String((err.cause as Error).stack ?? err.cause)}` : ''}\n`,
    );
    process.exit(1);
  },
);
