/**
 * `npm run bench` — the service's benchmark (issue 8), in one run against the real server
 * (spawned as its own process, `node --import tsx server/main.ts`) and a real PostgreSQL
 * (an embedded cluster of its own, durable default settings, pg_stat_statements loaded):
 *
 *   1. GET /api/mail/threads?limit=50 for an account with 100k threads (1,000 other accounts
 *      in the same tables) under autocannon load, next to a bare Koa handler serving the
 *      same SQL with the same driver (the floor); EXPLAIN ANALYZE of the statement.
 *   2. One 50-message sync against the Gmail stand-in with 50 ms latency per request.
 *   3. The notification poller draining 1,000 notifications for 100 accounts.
 *   4. Items 1 and 2 at 1k, 10k and 100k stored threads.
 *   5. Resident memory of the server, idle and under the load of item 1.
 *
 * Prints the Markdown table and writes it (and the raw JSON) to bench/results/.
 *
 *   npm run bench                         full run (a few minutes)
 *   npm run bench -- --label after        name the result files …-after
 *   npm run bench -- --smoke              tiny sizes, a few seconds (used by the smoke test)
 *   options: --out <dir> --database-url <postgres url> --only list,sync,poller
 *            --connections <n> --duration <s> --profile (V8 CPU profiles of the servers)
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startGmailStandIn } from '../stand-ins/gmail.stand-in.ts';
import { startIdentityStandIn } from '../stand-ins/identity.stand-in.ts';
import { startPubSubStandIn } from '../stand-ins/pubsub.stand-in.ts';
import { freePort, freshIp, machine, ROOT, signIn, spawnNode, startDatabase, type NodeProcess, type SignedIn } from './infra.ts';
import { renderMarkdown, type BenchReport } from './report.ts';
import { forPg } from './sql.ts';
import { checkpointAt, explainList, loadTest, pollerBurst, resetToListing, syncOnce, type ListStatement, type LoadResult, type SyncRun } from './scenarios.ts';
import { seedOtherAccounts, seedThreads, vacuumAnalyze } from './seed.ts';
import { identityEnv } from '../stand-ins/stand-in-env.ts';

const { values: args } = parseArgs({
  options: {
    smoke: { type: 'boolean', default: false },
    label: { type: 'string' },
    out: { type: 'string' },
    'database-url': { type: 'string' },
    only: { type: 'string' },
    connections: { type: 'string' },
    duration: { type: 'string' },
    /** Write a V8 CPU profile of the server (and the bare handler) into the run's log directory. */
    profile: { type: 'boolean', default: false },
    /**
     * Run the server and the bare handler from another checkout of the project (a copy with
     * some changes reverted, to measure before and after with the same benchmark).
     */
    'server-root': { type: 'string' },
  },
});

const smoke = args.smoke === true;
const settings = {
  mode: smoke ? 'smoke' : 'full',
  /** Stored threads of the measured accounts (item 4); the largest is item 1's account. */
  sizes: smoke ? [100, 300] : [1_000, 10_000, 100_000],
  otherAccounts: smoke ? 10 : 1_000,
  otherThreadsEach: smoke ? 10 : 100,
  listLimit: 50,
  connections: Number(args.connections ?? (smoke ? 5 : 50)),
  /** A second, lighter load on item 1's account: the latency below saturation. */
  moderateConnections: smoke ? 2 : 10,
  seconds: Number(args.duration ?? (smoke ? 1 : 10)),
  warmupSeconds: smoke ? 0 : 3,
  providerLatencyMs: smoke ? 5 : 50,
  syncRepeats: smoke ? 1 : 3,
  pollerAccounts: smoke ? 4 : 100,
  pollerPerAccount: smoke ? 2 : 10,
  pollerTimeoutMs: smoke ? 20_000 : 300_000,
  rateLimitMax: 1_000_000,
  logLevel: 'info',
  nodeEnv: 'production',
};
const only = new Set((args.only ?? 'list,sync,poller').split(','));
const WEB_ORIGIN = 'http://web.bench.example';

const step = (msg: string) => process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);
const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2) : NaN;
};

async function main() {
  const cleanups: (() => Promise<unknown>)[] = [];
  const cleanup = async () => {
    for (const fn of cleanups.reverse()) await fn().catch((err: unknown) => step(`cleanup failed: ${(err as Error).message}`));
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

  const db = await startDatabase({ url: args['database-url'] });
  cleanups.push(() => db.stop());
  step(`PostgreSQL ${db.version} (${args['database-url'] ? 'given' : 'embedded'}; pg_stat_statements ${db.statements ? 'on' : 'off'})`);
  // The server applies the migrations when it starts (before it answers /health).

  const identity = await startIdentityStandIn();
  const gmail = await startGmailStandIn({ authorize: (token) => identity.accessTokenOwner(token)?.email ?? null });
  const pubsub = await startPubSubStandIn({ projectId: 'bench-project' });
  cleanups.push(() => Promise.all([identity.close(), gmail.close(), pubsub.close()]));
  pubsub.createTopic('mail');
  const subscription = pubsub.createSubscription('mail', 'mail-sync', { ackDeadlineSeconds: 30 });
  let forwarding = false;
  let published = 0;
  gmail.onNotification((n) => {
    if (!forwarding) return;
    published++;
    pubsub.publish(n.topicName, { emailAddress: n.emailAddress, historyId: String(n.historyId) });
  });

  const port = await freePort();
  const serverLog = path.join(work, 'server.log');
  const env: Record<string, string> = {
    NODE_ENV: settings.nodeEnv,
    PORT: String(port),
    HOST: '127.0.0.1',
    // Production refuses an http base URL: the service is described as served behind TLS, and
    // the OAuth redirect comes back to it directly.
    PUBLIC_BASE_URL: 'https://api.bench.example',
    GOOGLE_REDIRECT_URI: `http://127.0.0.1:${port}/auth/provider/callback`,
    WEB_ORIGIN,
    SESSION_SECRET: randomBytes(33).toString('base64url'),
    TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    DATABASE_URL: db.url,
    // The bench signs in and syncs many accounts from one machine: a client address per call.
    TRUST_PROXY: 'true',
    // The load run is one client: the global bucket must not refuse it.
    RATE_LIMIT_MAX: String(settings.rateLimitMax),
    RATE_LIMIT_WINDOW_SECONDS: '60',
    LOG_LEVEL: settings.logLevel,
    MIA_DATA_DIR: path.join(work, 'data'),
    ...identityEnv(identity),
    GMAIL_API_URL: gmail.url,
    PUBSUB_PROJECT_ID: 'bench-project',
    PUBSUB_TOPIC: 'projects/bench-project/topics/mail',
    PUBSUB_SUBSCRIPTION: 'mail-sync',
    PUBSUB_EMULATOR_HOST: pubsub.host,
  };
  step('starting the server and the bare handler');
  const serverRoot = path.resolve(args['server-root'] ?? ROOT);
  const threadService = (await import(path.join(serverRoot, 'server/domain/mail/thread.service.ts'))) as {
    LIST_THREADS?: { text: string };
    /** Checkouts before the list became a prepared statement: the SQL with `?` placeholders. */
    LIST_THREADS_SQL?: string;
    listThreadsParams: ListStatement['params'];
  };
  const ormConfig = (await import(path.join(serverRoot, 'db/mikro-orm.config.ts'))) as { ormOptions(url: string): { driverOptions?: { options?: string } } };
  const startupOptions = ormConfig.ormOptions(db.url).driverOptions?.options ?? '';
  const listStatement: ListStatement = {
    sql: threadService.LIST_THREADS?.text ?? forPg(threadService.LIST_THREADS_SQL!),
    params: threadService.listThreadsParams,
    settings: [...startupOptions.matchAll(/-c\s*([\w.]+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]),
  };
  const nodeArgs = args.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.join(work, 'profiles')}`] : [];
  const barePort = await freePort();
  const started = await Promise.allSettled([
    spawnNode({ script: 'server/main.ts', env, port, logFile: serverLog, readyPath: '/health', nodeArgs, cwd: serverRoot }),
    spawnNode({ script: 'bench/bare-server.ts', env: { DATABASE_URL: db.url, PORT: String(barePort) }, port: barePort, logFile: path.join(work, 'bare.log'), readyPath: '/health', nodeArgs, cwd: serverRoot }),
  ]);
  for (const s of started) if (s.status === 'fulfilled') cleanups.push(() => s.value.stop());
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  const [server, bare] = started.map((s) => (s as PromiseFulfilledResult<NodeProcess>).value) as [NodeProcess, NodeProcess];
  const memory: BenchReport['memory'] = { afterStartMiB: server.rss(), idleMiB: null, loadPeakMiB: null, loadMeanMiB: null, afterLoadMiB: null };

  // Accounts of the list and sync measurements, signed in for real.
  const listAccounts = new Map<number, SignedIn>();
  for (const size of settings.sizes) {
    listAccounts.set(size, await signIn(server.url, WEB_ORIGIN, identity, { sub: `bench-list-${size}`, email: `list${size}@bench.example` }, db.pool));
  }
  step(`seeding ${settings.otherAccounts} other accounts x ${settings.otherThreadsEach} threads and ${settings.sizes.join(' / ')} threads`);
  const seedStart = performance.now();
  await seedOtherAccounts(db.pool, settings.otherAccounts, settings.otherThreadsEach);
  for (const [size, account] of listAccounts) await seedThreads(db.pool, account.accountId, size, `t${size}-`);
  await vacuumAnalyze(db.pool);
  const seedMs = performance.now() - seedStart;
  const totals = (await db.pool.query<{ threads: string; messages: string; accounts: string }>(
    '/*bench*/ select (select count(*) from mail_threads) as threads, (select count(*) from mail_messages) as messages, (select count(*) from accounts) as accounts',
  )).rows[0]!;
  step(`seeded in ${Math.round(seedMs)} ms: ${totals.threads} threads, ${totals.messages} messages, ${totals.accounts} accounts`);

  const report: BenchReport = {
    startedAt: startedAt.toISOString(),
    label: args.label ?? null,
    serverRoot: args['server-root'] ? serverRoot : null,
    machine: { ...machine(), postgres: db.version, pgStatStatements: db.statements, loadAverageAtStart: loadAtStart, loadAverageAtEnd: null },
    settings,
    data: { threads: Number(totals.threads), messages: Number(totals.messages), accounts: Number(totals.accounts), seedMs },
    list: [],
    explain: [],
    sync: [],
    poller: null,
    memory,
    logs: work,
  };

  if (only.has('list')) {
    memory.idleMiB = server.rss();
    // Every load run of item 1: the same duration and warm-up, the same database counters.
    const timing = { seconds: settings.seconds, warmupSeconds: settings.warmupSeconds, db };
    const serviceUrl = `${server.url}/api/mail/threads?limit=${settings.listLimit}`;
    for (const size of settings.sizes) {
      const account = listAccounts.get(size)!;
      const largest = size === Math.max(...settings.sizes);
      step(`list at ${size} threads: service`);
      const service = await loadTest({
        target: 'service',
        url: serviceUrl,
        headers: { Cookie: account.cookie },
        connections: settings.connections,
        ...timing,
        process: server,
        memory: largest,
      });
      step(`list at ${size} threads: bare handler`);
      const floor = await loadTest({
        target: 'bare',
        url: `${bare.url}/api/mail/threads?account=${account.accountId}&limit=${settings.listLimit}`,
        connections: settings.connections,
        ...timing,
        process: bare,
      });
      let many: LoadResult | undefined;
      if (largest) {
        step(`list at ${size} threads: service, ${settings.connections} clients`);
        const clients: Record<string, string>[] = [];
        for (let i = 0; i < settings.connections; i++) {
          const again = await signIn(server.url, WEB_ORIGIN, identity, { sub: `bench-list-${size}`, email: account.email }, db.pool);
          clients.push({ Cookie: again.cookie, 'X-Forwarded-For': freshIp() });
        }
        many = await loadTest({
          target: 'service-many',
          url: serviceUrl,
          clients,
          connections: settings.connections,
          ...timing,
          process: server,
        });
      }
      let moderate: LoadResult | undefined;
      if (largest && settings.moderateConnections < settings.connections) {
        step(`list at ${size} threads: service, ${settings.moderateConnections} connections`);
        moderate = await loadTest({
          target: 'service',
          url: serviceUrl,
          headers: { Cookie: account.cookie },
          connections: settings.moderateConnections,
          ...timing,
          process: server,
        });
      }
      // After the load: pg_stat_statements names a statement by the text it saw first.
      report.explain.push({ threads: size, ...(await explainList(db.pool, listStatement, account.accountId, settings.listLimit)) });
      report.list.push({ threads: size, service, ...(many ? { serviceMany: many } : {}), ...(moderate ? { serviceModerate: moderate } : {}), bare: floor, ratio: floor.rps ? service.rps / floor.rps : null });
      if (largest && service.rss) {
        memory.loadPeakMiB = service.rss.peak;
        memory.loadMeanMiB = service.rss.mean;
      }
      step(`  service ${service.rps.toFixed(0)} req/s p99 ${service.latencyMs.p99} ms; bare ${floor.rps.toFixed(0)} req/s p99 ${floor.latencyMs.p99} ms`);
    }
    await new Promise((r) => setTimeout(r, 2_000));
    memory.afterLoadMiB = server.rss();
  }

  if (only.has('sync')) {
    gmail.setLatency(0);
    for (const size of settings.sizes) gmail.seed(`list${size}@bench.example`, 2 * 50 + 10, { sentReplies: false });
    gmail.setLatency(settings.providerLatencyMs);
    for (const size of settings.sizes) {
      const account = listAccounts.get(size)!;
      const runs: SyncRun[] = [];
      for (let i = 0; i < settings.syncRepeats; i++) {
        await resetToListing(db.pool, account.accountId);
        runs.push(await syncOnce({ kind: 'listing', threads: size, serverUrl: server.url, webOrigin: WEB_ORIGIN, account, gmail, latencyMs: settings.providerLatencyMs, db }));
      }
      for (let i = 0; i < settings.syncRepeats; i++) {
        await checkpointAt(db.pool, account.accountId, gmail.historyId(account.email));
        gmail.setLatency(0);
        for (let k = 0; k < 50; k++) gmail.addMessage(account.email, { subject: `Incremental ${i}.${k}` });
        gmail.setLatency(settings.providerLatencyMs);
        runs.push(await syncOnce({ kind: 'incremental', threads: size, serverUrl: server.url, webOrigin: WEB_ORIGIN, account, gmail, latencyMs: settings.providerLatencyMs, db }));
      }
      for (const kind of ['listing', 'incremental'] as const) {
        const of = runs.filter((r) => r.kind === kind);
        report.sync.push({ threads: size, kind, wallMsMedian: median(of.map((r) => r.wallMs)), runs: of });
        const last = of.at(-1)!;
        step(`sync ${kind} at ${size} threads: ${median(of.map((r) => r.wallMs)).toFixed(0)} ms, ${last.providerRequests} provider requests in ${last.providerRoundTrips} round trips, ${last.syncStatements ?? '?'} statements (status ${last.status}, ${last.messagesSynced} synced)`);
      }
    }
    gmail.setLatency(0);
  }

  if (only.has('poller')) {
    step(`poller: signing in ${settings.pollerAccounts} accounts and syncing them once`);
    const accounts: SignedIn[] = [];
    for (let i = 0; i < settings.pollerAccounts; i++) {
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
    for (const a of accounts) {
      for (let i = 0; i < 5; i++) {
        const r = await syncOnce({ kind: 'listing', threads: 0, serverUrl: server.url, webOrigin: WEB_ORIGIN, account: a, gmail, latencyMs: 0, db });
        if (r.status !== 200) throw new Error(`initial sync of ${a.email} answered ${r.status}`);
        const state = await db.pool.query<{ active: boolean; cursor: string | null }>('/*bench*/ select full_sync_active as active, full_sync_page_token as cursor from sync_states where account_id = $1', [a.accountId]);
        if (!state.rows[0]?.active) break;
      }
    }
    step(`poller: ${settings.pollerAccounts * settings.pollerPerAccount} new messages and notifications (provider latency ${settings.providerLatencyMs} ms)`);
    report.poller = await pollerBurst({
      accounts,
      perAccount: settings.pollerPerAccount,
      gmail,
      pubsub,
      subscription,
      pool: db.pool,
      latencyMs: settings.providerLatencyMs,
      setForwarding(on) {
        forwarding = on;
        if (on) published = 0;
        return () => published;
      },
      countSyncs: async (since) => countSyncLines(serverLog, since),
      timeoutMs: settings.pollerTimeoutMs,
    });
    gmail.setLatency(0);
    step(`poller: all stored after ${report.poller.allStoredMs?.toFixed(0) ?? 'timeout'} ms, drained after ${report.poller.drainedMs?.toFixed(0) ?? 'timeout'} ms, ${report.poller.syncs} syncs, ${report.poller.providerRequests} provider requests`);
  }

  report.machine.loadAverageAtEnd = loadavg().map((x) => Math.round(x * 100) / 100);
  const markdown = renderMarkdown(report);
  process.stdout.write(`${markdown}\n`);
  const outDir = path.resolve(args.out ?? path.join(ROOT, 'bench', 'results'));
  mkdirSync(outDir, { recursive: true });
  const stamp = startedAt.toISOString().slice(0, 10);
  const name = [stamp, report.machine.commit + (report.machine.dirty ? '-dirty' : ''), settings.mode === 'smoke' ? 'smoke' : undefined, args.label].filter(Boolean).join('-');
  writeFileSync(path.join(outDir, `${name}.md`), `${markdown}\n`);
  writeFileSync(path.join(outDir, `${name}.json`), `${JSON.stringify(report, null, 2)}\n`);
  step(`written ${path.join(outDir, name)}.md and .json`);
}

/** Sync calls the server logged ('mail sync' and 'mail sync failed') since a time. */
function countSyncLines(file: string, sinceMs: number): number {
  let n = 0;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.includes('"mail sync')) continue;
    try {
      const entry = JSON.parse(line) as { msg?: string; time?: string };
      if ((entry.msg === 'mail sync' || entry.msg === 'mail sync failed') && entry.time && Date.parse(entry.time) >= sinceMs) n++;
    } catch {
      /* not a log line */
    }
  }
  return n;
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
