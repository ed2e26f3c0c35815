/**
 * Mixed-workload load run with a PostgreSQL restart in the middle (issue 9, part 3).
 *
 *   npx tsx bench/load/mixed.ts --duration 300 --rate 200
 *     [--restart-at <s>=duration/2] [--restart-down <s>=5] [--accounts 20] [--clients <n>=rate]
 *     [--ai-latency-ms 150] [--mail-every-ms 250] [--out bench/results] [--fast]
 *
 * What runs: a PostgreSQL cluster of its own (PostgreSQL's durable defaults unless --fast),
 * the stand-in providers (identity, mail, AI, Pub/Sub) in this process, and the service as
 * a child process (`node --import tsx server/main.ts`, TRUST_PROXY=true), exactly as in
 * test/integration/resilience. `accounts` users sign in through the real OAuth flow and
 * sync their seeded mailboxes; then `clients` virtual clients (one IP address each, each
 * using one account's session) send an open-loop (fixed arrival rate, not closed-loop)
 * mix of list, detail, session, health, analytics, sync and analyze requests, while new
 * mail keeps arriving upstream (and so notifications for the poller). At `restart-at`
 * the cluster is stopped, left down `restart-down` seconds, and started again.
 *
 * Each client cycles through a fixed 50-request schedule at rate/clients requests per
 * second, which keeps every client within the spec's per-client limits (global 100/60 s,
 * sync 10/60 s, analyze 20/60 s, analytics 60/60 s): a 429 is then either "a sync of the
 * account is already running" (spec: RATE_LIMITED, expected, counted as `busy`) or a bug.
 *
 * Reported (JSON + Markdown in bench/results/): per route counts, outcomes and latency
 * percentiles outside the restart window; the error rate outside and inside the window
 * (the window runs from the stop until /health answers 200 again, plus 2 s); the service's
 * RSS sampled every 5 s with its trend; lost writes: analytics events acknowledged 200
 * that are not in the table, and upstream messages missing from the store after a final
 * drain.
 */
import { Agent, request } from 'node:http';
import { randomUUID } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { Browser } from '../../test/helpers/browser.ts';
import {
  csrf, eventually, REPO_ROOT, sharedSecrets, signIn, sleep, sql, startCluster, startService, startStandIns, user, WEB_ORIGIN,
  type Cluster, type ServiceProcess, type StandIns,
} from '../../test/integration/resilience/harness.ts';

export type Route = 'list' | 'detail' | 'session' | 'health' | 'analytics' | 'sync' | 'analyze';
export const ROUTES: Route[] = ['list', 'detail', 'session', 'health', 'analytics', 'sync', 'analyze'];

/** One client's repeating schedule: 50 requests. */
const MIX: Record<Route, number> = { list: 14, detail: 9, session: 6, health: 5, analytics: 10, sync: 3, analyze: 3 };

export interface LoadOptions {
  durationS: number;
  rate: number;
  restartAtS?: number;
  restartDownS?: number;
  accounts?: number;
  clients?: number;
  /** Messages seeded per mailbox before the run. */
  seed?: number;
  aiLatencyMs?: number;
  /** A new upstream message every this many ms (0: none). */
  mailEveryMs?: number;
  /** fsync/synchronous_commit off (tests); default false for the benchmark. */
  fast?: boolean;
  requestTimeoutMs?: number;
  /** Progress lines on stderr. */
  verbose?: boolean;
}

interface Sample {
  /** ms since the run started. */
  t: number;
  route: Route;
  status: number;
  code?: string;
  ms: number;
  failure?: string;
  retryAfter?: boolean;
  key?: string;
}

export interface RouteStats {
  count: number;
  ok: number;
  busy: number;
  errors: number;
  outcomes: Record<string, number>;
  p50: number;
  p90: number;
  p99: number;
  max: number;
}

export interface LoadResult {
  config: Required<Omit<LoadOptions, 'verbose'>> & { clients: number };
  environment: { node: string; cpus: number; loadavgStart: number[]; loadavgEnd: number[]; startedAt: string };
  run: { requests: number; achievedRps: number; schedulerMaxLagMs: number; durationMs: number; serviceCpuSeconds: number; serviceCpuMsPerRequest: number };
  restart: { stopAtMs: number; stoppedAtMs: number; startAtMs: number; startedAtMs: number; recoveredAtMs: number; windowMs: [number, number]; recoveryAfterStartMs: number };
  outside: {
    requests: number;
    errors: number;
    errorRate: number;
    /** The errors by kind: 503 SERVICE_UNAVAILABLE with Retry-After (e.g. no pool connection within its timeout), no answer within the client timeout, a dropped or refused connection, anything else. */
    errorKinds: { unavailable503: number; timeouts: number; network: number; other: number };
    busy: number; p50: number; p90: number; p99: number; max: number; errorSamples: string[] };
  inside: {
    requests: number;
    ok: number;
    unavailable503: number;
    busy: number;
    /** Anything else that is not a success: by kind, and the first few. */
    otherErrors: number;
    otherKinds: { timeouts: number; network: number; other: number };
    otherErrorSamples: string[];
    maxMs: number;
  };
  routes: Record<Route, RouteStats>;
  /** Per 10 s of start time: what was sent then, how it ended, and the service's CPU and the machine's load. */
  timeline: { fromS: number; requests: number; errors: number; busy: number; unavailable: number; p50: number; p99: number; serviceCpuPct: number; load1: number }[];
  memory: {
    samples: { t: number; rssMb: number; cpuPct: number; load1: number }[];
    afterWarmupMb: number;
    endMb: number;
    peakMb: number;
    slopeMbPerMin: number;
    slopeSecondHalfMbPerMin: number;
    /** The service's V8 heap in use right after a forced full GC, every 10 s. */
    heapAfterGc: { t: number; mb: number }[];
    heapAfterGcFirstMb: number;
    heapAfterGcLastMb: number;
    heapAfterGcSlopeMbPerMin: number;
  };
  writes: { analyticsAcknowledged: number; analyticsMissing: number; upstreamMessages: number; upstreamMissing: number; duplicates: number };
  service: { alive: boolean; warnings: Record<string, number>; http500: number; warningSamples: string[]; stderr: string[] };
}

/** Anything but a 2xx, except RATE_LIMITED on sync (another sync of the account is running). */
const isBusy = (s: Sample) => s.status === 429 && s.code === 'RATE_LIMITED' && s.route === 'sync';
const isOk = (s: Sample) => s.status >= 200 && s.status < 300;
const isError = (s: Sample) => !isOk(s) && !isBusy(s);

export function percentile(sorted: number[], p: number): number {
  if (!sorted.length) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Least-squares slope of y over x. */
export function slope(points: { x: number; y: number }[]): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, p) => a + p.x, 0) / n;
  const my = points.reduce((a, p) => a + p.y, 0) / n;
  const num = points.reduce((a, p) => a + (p.x - mx) * (p.y - my), 0);
  const den = points.reduce((a, p) => a + (p.x - mx) ** 2, 0);
  return den ? num / den : 0;
}

function shuffled<T>(items: T[], seed: number): T[] {
  const out = [...items];
  let s = seed;
  for (let i = out.length - 1; i > 0; i--) {
    s = (s * 1103515245 + 12345) & 0x7fffffff;
    const j = s % (i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

interface Account {
  email: string;
  cookie: string;
  csrfToken: string;
  threads: string[];
}

export async function runMixedLoad(options: LoadOptions): Promise<LoadResult> {
  const cfg = {
    durationS: options.durationS,
    rate: options.rate,
    restartAtS: options.restartAtS ?? options.durationS / 2,
    restartDownS: options.restartDownS ?? 5,
    accounts: options.accounts ?? 20,
    clients: options.clients ?? options.rate,
    seed: options.seed ?? 40,
    aiLatencyMs: options.aiLatencyMs ?? 150,
    mailEveryMs: options.mailEveryMs ?? 250,
    fast: options.fast ?? false,
    requestTimeoutMs: options.requestTimeoutMs ?? 10_000,
  };
  const say = (m: string) => options.verbose && process.stderr.write(`[load] ${m}\n`);
  const loadavgStart = os.loadavg();
  const startedAt = new Date().toISOString();

  let cluster: Cluster | undefined;
  let providers: StandIns | undefined;
  let svc: ServiceProcess | undefined;
  try {
    cluster = await startCluster({ durable: !cfg.fast });
    const users = Array.from({ length: cfg.accounts }, (_, i) => user(`load${i}`));
    providers = await startStandIns({ users, ackDeadlineSeconds: 10, openaiLatencyMs: cfg.aiLatencyMs });
    const dbUrl = cluster.url();
    // The heap retained after a full GC, every 10 s (bench/load/heap-probe.ts), the measure of
    // a leak: RSS alone also moves with how far V8 has let the heap grow.
    const heapAfterGc: { t: number; mb: number }[] = [];
    let loadStart: number | undefined;
    svc = await startService(null, {
      nodeArgs: ['--expose-gc', '--import', './bench/load/heap-probe.ts'],
      onOutput: (line) => {
        if (!line.startsWith('heap-probe ') || loadStart === undefined) return;
        heapAfterGc.push({ t: Math.round(performance.now() - loadStart), mb: JSON.parse(line.slice('heap-probe '.length)).heapUsedMb });
      },
      databaseUrl: dbUrl,
      name: 'load',
      env: {
        ...providers.env,
        ...sharedSecrets(),
        TRUST_PROXY: 'true',
        AI_DAILY_TOKEN_BUDGET: '1000000000',
        AI_MONTHLY_TOKEN_BUDGET: '1000000000',
      },
      // Keep only what is not routine (a run at 200 rps writes ~60,000 request lines).
      keepLog: (l) => l.level !== 'info' && l.level !== 'debug',
    });
    const service = svc;
    const gmail = providers.gmail;
    void service.exited.then(({ code, signal }) => say(`THE SERVICE EXITED (code ${code}, signal ${signal}); last output: ${service.stderr.slice(-60).join('\n')}`));
    say(`service up at ${service.url} (pid ${service.pid}); database ${dbUrl}`);

    // Accounts: sign in, seed, sync to the end, remember the threads.
    const accounts: Account[] = [];
    for (const [i, u] of users.entries()) {
      providers.identity.setCurrentUser(u.email);
      gmail.seed(u.email, cfg.seed, { sentReplies: false });
      const b: Browser = service.browser();
      const ip = { 'X-Forwarded-For': `172.16.${i}.1` };
      const { csrfToken } = await signIn(b, { headers: ip });
      for (let k = 0; k < 10; k++) {
        const r = await b.fetch('/api/mail/sync', { method: 'POST', headers: csrf(csrfToken, { 'X-Forwarded-For': `172.17.${i}.${k}` }) });
        if (r.status !== 200) throw new Error(`initial sync of ${u.email} answered ${r.status}`);
        if (!(await r.json()).hasMore) break;
      }
      const list = await (await b.fetch('/api/mail/threads?limit=100', { headers: ip })).json();
      accounts.push({ email: u.email, cookie: b.cookieHeader(), csrfToken, threads: list.threads.map((t: { id: string }) => t.id) });
    }
    say(`${accounts.length} accounts signed in and synced`);

    const clients = Array.from({ length: cfg.clients }, (_, i) => ({
      ip: `10.${100 + Math.floor(i / 62500)}.${Math.floor(i / 250) % 250}.${(i % 250) + 1}`,
      account: accounts[i % accounts.length]!,
      schedule: shuffled(ROUTES.flatMap((r) => Array<Route>(MIX[r]).fill(r)), i + 1),
      n: 0,
    }));

    const url = new URL(service.url);
    // Idle sockets are dropped after 3 s, before the service closes them (its keepAliveTimeout
    // is 5 s): reusing a socket the server is closing at that moment fails with ECONNRESET, a
    // client-side race that says nothing about the service.
    const agent = new Agent({ keepAlive: true, maxSockets: 2_000, keepAliveMsecs: 1_000, timeout: 3_000 });
    const samples: Sample[] = [];
    let inflight = 0;
    const t0 = performance.now();
    loadStart = t0;
    const now = () => performance.now() - t0;

    const send = (client: (typeof clients)[number]): void => {
      const route = client.schedule[client.n++ % client.schedule.length]!;
      const acc = client.account;
      const headers: Record<string, string> = { 'X-Forwarded-For': client.ip };
      let method = 'GET';
      let p = '';
      let body: string | undefined;
      let key: string | undefined;
      switch (route) {
        case 'list':
          p = '/api/mail/threads?limit=20';
          break;
        case 'detail':
          p = `/api/mail/threads/${acc.threads[Math.floor(Math.random() * acc.threads.length)]}`;
          break;
        case 'session':
          p = '/auth/session';
          break;
        case 'health':
          p = '/health';
          break;
        case 'analytics':
          method = 'POST';
          p = '/api/analytics/event';
          key = randomUUID();
          body = JSON.stringify({ event: 'page_view', anonymousId: key, properties: { path: `/load/${key}` } });
          headers['Content-Type'] = 'application/json';
          break;
        case 'sync':
          method = 'POST';
          p = '/api/mail/sync';
          Object.assign(headers, csrf(acc.csrfToken));
          break;
        case 'analyze':
          method = 'POST';
          p = `/api/mail/threads/${acc.threads[Math.floor(Math.random() * Math.min(10, acc.threads.length))]}/analyze`;
          Object.assign(headers, csrf(acc.csrfToken));
          break;
      }
      if (route !== 'health' && route !== 'analytics') headers.Cookie = acc.cookie;
      if (body) headers['Content-Length'] = String(Buffer.byteLength(body));
      const t = now();
      inflight++;
      let done = false;
      const finish = (s: Omit<Sample, 't' | 'route' | 'ms' | 'key'>) => {
        if (done) return;
        done = true;
        inflight--;
        samples.push({ t, route, ms: now() - t, key, ...s });
      };
      const req = request({ host: url.hostname, port: url.port, method, path: p, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (e) => finish({ status: 0, failure: e.message }));
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          let code: string | undefined;
          if (status >= 400) {
            try {
              code = JSON.parse(Buffer.concat(chunks).toString('utf8'))?.error?.code;
            } catch {
              code = 'non-json';
            }
          } else if (route === 'list' && status === 200) {
            // Keep the account's thread pool current (new mail creates threads).
            try {
              const ids = (JSON.parse(Buffer.concat(chunks).toString('utf8')).threads as { id: string }[]).map((x) => x.id);
              acc.threads = [...new Set([...ids, ...acc.threads])].slice(0, 100);
            } catch {
              /* counted as ok; the pool stays */
            }
          }
          finish({ status, code, retryAfter: res.headers['retry-after'] !== undefined });
        });
      });
      req.setTimeout(cfg.requestTimeoutMs, () => {
        finish({ status: 0, failure: 'timeout' });
        req.destroy();
      });
      req.on('error', (e) => finish({ status: 0, failure: (e as NodeJS.ErrnoException).code ?? e.message }));
      req.end(body);
    };

    // Memory and CPU of the service (and the machine's load, shared with everything else), every 5 s.
    const memory: { t: number; rssMb: number; cpuPct: number; load1: number }[] = [];
    let lastCpu = { t: now(), s: await service.cpuSeconds() };
    const cpuStart = lastCpu.s;
    const sampleMemory = async () => {
      try {
        const t = now();
        const cpu = await service.cpuSeconds();
        const cpuPct = Math.round(((cpu - lastCpu.s) / ((t - lastCpu.t) / 1000 || 1)) * 100);
        lastCpu = { t, s: cpu };
        memory.push({ t: Math.round(t), rssMb: Math.round(((await service.rss()) / 2 ** 20) * 10) / 10, cpuPct, load1: Math.round(os.loadavg()[0]! * 100) / 100 });
      } catch {
        /* the process is gone: reported below */
      }
    };
    await sampleMemory();
    const memTimer = setInterval(() => void sampleMemory(), 5_000);

    // Upstream mail keeps arriving (notifications for the poller, work for the syncs).
    let upstream = 0;
    const mailTimer = cfg.mailEveryMs > 0
      ? setInterval(() => {
          gmail.addMessage(accounts[upstream++ % accounts.length]!.email, { subject: `load ${upstream}` });
        }, cfg.mailEveryMs)
      : undefined;

    // The restart, in the background.
    const restart = { stopAtMs: 0, stoppedAtMs: 0, startAtMs: 0, startedAtMs: 0, recoveredAtMs: 0 };
    const restartDone = (async () => {
      await sleep(cfg.restartAtS * 1000);
      restart.stopAtMs = now();
      say(`stopping PostgreSQL at ${(restart.stopAtMs / 1000).toFixed(1)} s`);
      await cluster!.stop();
      restart.stoppedAtMs = now();
      await sleep(cfg.restartDownS * 1000);
      restart.startAtMs = now();
      await cluster!.start();
      restart.startedAtMs = now();
      await eventually(async () => {
        if (!service.alive) return true;
        const r = await fetch(`${service.url}/health`, { headers: { 'X-Forwarded-For': '192.168.0.1' }, signal: AbortSignal.timeout(5_000) });
        await r.body?.cancel();
        return r.status === 200;
      }, 120_000, 100);
      restart.recoveredAtMs = now();
      say(`recovered ${Math.round(restart.recoveredAtMs - restart.startedAtMs)} ms after the start`);
    })();

    // Open loop: the schedule says when each request is due, whatever the answers do.
    let sent = 0;
    let maxLag = 0;
    const total = Math.round(cfg.durationS * cfg.rate);
    let lastReport = 0;
    await new Promise<void>((resolve) => {
      const tick = setInterval(() => {
        const elapsed = now();
        const due = Math.min(total, Math.floor((elapsed / 1000) * cfg.rate));
        if (due > sent) maxLag = Math.max(maxLag, elapsed - (sent / cfg.rate) * 1000);
        while (sent < due) send(clients[sent++ % clients.length]!);
        if (options.verbose && elapsed - lastReport >= 10_000) {
          lastReport = elapsed;
          const recent = samples.filter((s) => s.t >= elapsed - 10_000);
          const m = memory.at(-1);
          say(`${Math.round(elapsed / 1000)} s: sent ${sent}, in flight ${inflight}, last 10 s: ${recent.length} answered, ${recent.filter(isError).length} errors; service rss ${m?.rssMb} MB, cpu ${m?.cpuPct} %; machine load ${m?.load1}`);
        }
        if (sent >= total) {
          clearInterval(tick);
          resolve();
        }
      }, 5);
    });
    const endSend = now();
    await eventually(async () => inflight === 0, cfg.requestTimeoutMs + 2_000, 50);
    if (mailTimer) clearInterval(mailTimer);
    await restartDone;
    clearInterval(memTimer);
    await sampleMemory();
    const serviceCpuSeconds = (await service.cpuSeconds().catch(() => lastCpu.s)) - cpuStart;
    agent.destroy();
    say(`sent ${sent} in ${(endSend / 1000).toFixed(1)} s`);

    // ---------------------------------------------------------------- verification
    const acknowledged = samples.filter((s) => s.route === 'analytics' && s.status === 200).map((s) => s.key!);
    const storedKeys = new Set(
      (await sql<{ anonymous_id: string }>(dbUrl, 'select anonymous_id from analytics_events where anonymous_id = any($1::uuid[])', [acknowledged])).map((r) => r.anonymous_id),
    );
    const analyticsMissing = acknowledged.filter((k) => !storedKeys.has(k)).length;

    // Final drain: leases cut off by the restart are left to expire (simulated), then every
    // account syncs to the end; the store must then hold each provider inbox exactly.
    await sql(dbUrl, "update sync_states set lease_until = now() - interval '1 second' where lease_until is not null");
    for (const [i, acc] of accounts.entries()) {
      if (!service.alive) break;
      for (let k = 0; k < 20; k++) {
        const r = await fetch(`${service.url}/api/mail/sync`, { method: 'POST', headers: { Cookie: acc.cookie, ...csrf(acc.csrfToken), 'X-Forwarded-For': `172.18.${i}.${k}` } });
        const b = await r.json();
        if (r.status === 429 && b.error.code === 'RATE_LIMITED') {
          await sleep(500);
          continue;
        }
        if (r.status !== 200 || !b.hasMore) break;
      }
    }
    let upstreamMessages = 0;
    let upstreamMissing = 0;
    for (const acc of accounts) {
      const inbox = gmail.inbox(acc.email).map((m) => m.id);
      upstreamMessages += inbox.length;
      const rows = await sql<{ id: string }>(dbUrl, 'select m.provider_message_id as id from mail_messages m join accounts a on a.id = m.account_id where a.email = $1 and m.in_inbox', [acc.email]);
      const have = new Set(rows.map((r) => r.id));
      upstreamMissing += inbox.filter((id) => !have.has(id)).length;
    }
    const [{ n: duplicates }] = await sql<{ n: number }>(
      dbUrl,
      'select count(*)::int as n from (select 1 from mail_messages group by account_id, provider_message_id having count(*) > 1) d',
    );

    // ---------------------------------------------------------------- figures
    const windowMs: [number, number] = [restart.stopAtMs, restart.recoveredAtMs + 2_000];
    // A request belongs to the window when it was in flight at any moment of it.
    const inWindow = (s: Sample) => s.t <= windowMs[1] && s.t + s.ms >= windowMs[0];
    const outside = samples.filter((s) => !inWindow(s));
    const inside = samples.filter(inWindow);
    const sortedMs = (xs: Sample[]) => xs.map((s) => s.ms).sort((a, b) => a - b);
    const describe = (s: Sample) => `${s.route} ${s.failure ?? `${s.status} ${s.code ?? ''}`} at ${(s.t / 1000).toFixed(1)} s`;
    const routes = {} as Record<Route, RouteStats>;
    for (const r of ROUTES) {
      const xs = outside.filter((s) => s.route === r);
      const ms = sortedMs(xs);
      const outcomes: Record<string, number> = {};
      for (const s of samples.filter((x) => x.route === r)) {
        const k = `${inWindow(s) ? 'window ' : ''}${s.failure ?? `${s.status}${s.code ? ` ${s.code}` : ''}`}`;
        outcomes[k] = (outcomes[k] ?? 0) + 1;
      }
      routes[r] = {
        count: xs.length,
        ok: xs.filter(isOk).length,
        busy: xs.filter(isBusy).length,
        errors: xs.filter(isError).length,
        outcomes,
        p50: Math.round(percentile(ms, 50)),
        p90: Math.round(percentile(ms, 90)),
        p99: Math.round(percentile(ms, 99)),
        max: Math.round(ms.at(-1) ?? 0),
      };
    }
    const outsideMs = sortedMs(outside);
    const outsideErrors = outside.filter(isError);
    const warmupMs = Math.min(30_000, (cfg.durationS * 1000) / 5);
    const afterWarmup = memory.filter((m) => m.t >= warmupMs);
    const secondHalf = memory.filter((m) => m.t >= (cfg.durationS * 1000) / 2);
    const perMin = (pts: typeof memory) => Math.round(slope(pts.map((m) => ({ x: m.t / 60_000, y: m.rssMb }))) * 100) / 100;
    const timeline: LoadResult['timeline'] = [];
    for (let from = 0; from < cfg.durationS * 1000; from += 10_000) {
      const xs = samples.filter((x) => x.t >= from && x.t < from + 10_000);
      const ms = sortedMs(xs);
      const mem = memory.filter((m) => m.t > from && m.t <= from + 10_000);
      const avg = (k: 'cpuPct' | 'load1') => (mem.length ? Math.round((mem.reduce((a, m) => a + m[k], 0) / mem.length) * 10) / 10 : 0);
      timeline.push({
        fromS: from / 1000,
        requests: xs.length,
        errors: xs.filter((x) => isError(x) && !(x.status === 503 && x.retryAfter && inWindow(x))).length,
        busy: xs.filter(isBusy).length,
        unavailable: xs.filter((x) => x.status === 503 && x.retryAfter && inWindow(x)).length,
        p50: Math.round(percentile(ms, 50)),
        p99: Math.round(percentile(ms, 99)),
        serviceCpuPct: avg('cpuPct'),
        load1: avg('load1'),
      });
    }
    const warnings: Record<string, number> = {};
    for (const [k, v] of service.logCounts) if (!k.startsWith('info ') && !k.startsWith('debug ')) warnings[k] = v;

    return {
      config: cfg,
      environment: { node: process.version, cpus: os.cpus().length, loadavgStart, loadavgEnd: os.loadavg(), startedAt },
      run: {
        requests: samples.length,
        achievedRps: Math.round((sent / (endSend / 1000)) * 10) / 10,
        schedulerMaxLagMs: Math.round(maxLag),
        durationMs: Math.round(endSend),
        serviceCpuSeconds: Math.round(serviceCpuSeconds * 10) / 10,
        serviceCpuMsPerRequest: Math.round((serviceCpuSeconds * 1000 * 100) / Math.max(1, samples.length)) / 100,
      },
      restart: {
        ...Object.fromEntries(Object.entries(restart).map(([k, v]) => [k, Math.round(v)])) as typeof restart,
        windowMs: [Math.round(windowMs[0]), Math.round(windowMs[1])],
        recoveryAfterStartMs: Math.round(restart.recoveredAtMs - restart.startedAtMs),
      },
      outside: {
        requests: outside.length,
        errors: outsideErrors.length,
        errorRate: outside.length ? outsideErrors.length / outside.length : 0,
        errorKinds: {
          unavailable503: outsideErrors.filter((x) => x.status === 503 && x.retryAfter).length,
          timeouts: outsideErrors.filter((x) => x.failure === 'timeout').length,
          network: outsideErrors.filter((x) => x.status === 0 && x.failure !== 'timeout').length,
          other: outsideErrors.filter((x) => x.status !== 0 && !(x.status === 503 && x.retryAfter)).length,
        },
        busy: outside.filter(isBusy).length,
        p50: Math.round(percentile(outsideMs, 50)),
        p90: Math.round(percentile(outsideMs, 90)),
        p99: Math.round(percentile(outsideMs, 99)),
        max: Math.round(outsideMs.at(-1) ?? 0),
        errorSamples: outsideErrors.slice(0, 20).map(describe),
      },
      inside: {
        requests: inside.length,
        ok: inside.filter(isOk).length,
        unavailable503: inside.filter((s) => s.status === 503 && (s.route === 'health' || s.code === 'SERVICE_UNAVAILABLE') && s.retryAfter).length,
        busy: inside.filter(isBusy).length,
        otherErrors: inside.filter((s) => isError(s) && !(s.status === 503 && s.retryAfter)).length,
        otherKinds: {
          timeouts: inside.filter((s) => s.failure === 'timeout').length,
          network: inside.filter((s) => s.status === 0 && s.failure !== 'timeout').length,
          other: inside.filter((s) => s.status !== 0 && isError(s) && !(s.status === 503 && s.retryAfter)).length,
        },
        otherErrorSamples: inside.filter((s) => isError(s) && !(s.status === 503 && s.retryAfter)).slice(0, 20).map(describe),
        maxMs: Math.round(Math.max(0, ...inside.map((s) => s.ms))),
      },
      routes,
      timeline,
      memory: {
        samples: memory,
        afterWarmupMb: afterWarmup[0]?.rssMb ?? 0,
        endMb: memory.at(-1)?.rssMb ?? 0,
        peakMb: Math.max(...memory.map((m) => m.rssMb)),
        slopeMbPerMin: perMin(afterWarmup),
        slopeSecondHalfMbPerMin: perMin(secondHalf),
        heapAfterGc,
        heapAfterGcFirstMb: heapAfterGc.find((h) => h.t >= warmupMs)?.mb ?? 0,
        heapAfterGcLastMb: heapAfterGc.at(-1)?.mb ?? 0,
        heapAfterGcSlopeMbPerMin: Math.round(slope(heapAfterGc.filter((h) => h.t >= warmupMs).map((h) => ({ x: h.t / 60_000, y: h.mb }))) * 100) / 100,
      },
      writes: { analyticsAcknowledged: acknowledged.length, analyticsMissing, upstreamMessages, upstreamMissing, duplicates },
      service: {
        alive: service.alive,
        warnings,
        http500: service.logs.filter((l) => l.msg === 'request failed' && l.code === 'INTERNAL_ERROR').length,
        warningSamples: [...new Set(service.logs.map((l) => `${l.level} ${l.msg} ${l.code ?? ''} ${l.errCode ?? ''} ${String(l.errMessage ?? l.err ?? '').slice(0, 120)}`))].slice(0, 15),
        stderr: service.stderr.slice(-20),
      },
    };
  } finally {
    await svc?.stop(5_000).catch(() => undefined);
    await providers?.close();
    await cluster?.close();
  }
}

export function markdown(r: LoadResult): string {
  const lines = [
    `# Mixed load: ${r.config.durationS} s at ${r.config.rate} rps, PostgreSQL restarted at ${r.config.restartAtS} s (down ${r.config.restartDownS} s)`,
    '',
    `Started ${r.environment.startedAt}; Node ${r.environment.node}, ${r.environment.cpus} CPUs (load, generator and database on the same machine), load average ${r.environment.loadavgStart.map((x) => x.toFixed(2)).join('/')} at start, ${r.environment.loadavgEnd.map((x) => x.toFixed(2)).join('/')} at end.`,
    `${r.config.accounts} accounts, ${r.config.clients} clients (one IP each), AI stand-in latency ${r.config.aiLatencyMs} ms, a new upstream message every ${r.config.mailEveryMs} ms, PostgreSQL ${r.config.fast ? 'without fsync' : 'with its durable defaults'}.`,
    '',
    `- requests: ${r.run.requests} (achieved ${r.run.achievedRps} rps; scheduler max lag ${r.run.schedulerMaxLagMs} ms); the service used ${r.run.serviceCpuSeconds} s of CPU, ${r.run.serviceCpuMsPerRequest} ms per request`,
    `- restart window: ${(r.restart.windowMs[0] / 1000).toFixed(1)} s to ${(r.restart.windowMs[1] / 1000).toFixed(1)} s; /health 200 again ${r.restart.recoveryAfterStartMs} ms after PostgreSQL was back`,
    `- outside the window: ${r.outside.requests} requests, ${r.outside.errors} errors (${(r.outside.errorRate * 100).toFixed(3)} %: ${r.outside.errorKinds.unavailable503} SERVICE_UNAVAILABLE 503, ${r.outside.errorKinds.timeouts} client timeouts (10 s), ${r.outside.errorKinds.network} dropped connections, ${r.outside.errorKinds.other} other), ${r.outside.busy} sync-busy 429; latency p50 ${r.outside.p50} ms, p90 ${r.outside.p90} ms, p99 ${r.outside.p99} ms, max ${r.outside.max} ms`,
    `- inside the window: ${r.inside.requests} requests: ${r.inside.ok} ok, ${r.inside.unavailable503} SERVICE_UNAVAILABLE 503 with Retry-After, ${r.inside.busy} sync-busy, ${r.inside.otherErrors} other errors; slowest ${r.inside.maxMs} ms`,
    `- memory (service RSS): ${r.memory.afterWarmupMb} MB after warm-up, ${r.memory.endMb} MB at the end, peak ${r.memory.peakMb} MB; trend ${r.memory.slopeMbPerMin} MB/min (second half ${r.memory.slopeSecondHalfMbPerMin} MB/min)`,
    `- V8 heap retained after a full GC (every 10 s): ${r.memory.heapAfterGcFirstMb} MB after warm-up, ${r.memory.heapAfterGcLastMb} MB at the end; trend ${r.memory.heapAfterGcSlopeMbPerMin} MB/min`,
    `- heap after GC (s: MB): ${r.memory.heapAfterGc.map((h) => `${Math.round(h.t / 1000)}: ${h.mb}`).join(', ')}`,
    `- samples every 5 s (s: RSS MB / service CPU % / machine load): ${r.memory.samples.map((m) => `${Math.round(m.t / 1000)}: ${Math.round(m.rssMb)}/${m.cpuPct}/${m.load1}`).join(', ')}`,
    `- writes: ${r.writes.analyticsAcknowledged} analytics events acknowledged, ${r.writes.analyticsMissing} missing; ${r.writes.upstreamMessages} upstream inbox messages, ${r.writes.upstreamMissing} missing from the store after the final drain; ${r.writes.duplicates} duplicates`,
    `- service: ${r.service.alive ? 'alive' : 'DEAD'} at the end, ${r.service.http500} requests answered INTERNAL_ERROR 500`,
    '',
    '| route | requests | ok | sync busy | errors | p50 ms | p90 ms | p99 ms | max ms |',
    '|---|---|---|---|---|---|---|---|---|',
    ...ROUTES.map((k) => {
      const s = r.routes[k];
      return `| ${k} | ${s.count} | ${s.ok} | ${s.busy} | ${s.errors} | ${s.p50} | ${s.p90} | ${s.p99} | ${s.max} |`;
    }),
    '',
    'Timeline (by the time a request was sent; errors exclude the 503s of the restart window; CPU is the service\'s, load the machine\'s 1-minute load average):',
    '',
    '| from s | requests | errors | sync busy | 503 in window | p50 ms | p99 ms | service CPU % | machine load |',
    '|---|---|---|---|---|---|---|---|---|',
    ...r.timeline.map((b) => `| ${b.fromS} | ${b.requests} | ${b.errors} | ${b.busy} | ${b.unavailable} | ${b.p50} | ${b.p99} | ${b.serviceCpuPct} | ${b.load1} |`),
    '',
    'Outcomes per route (whole run; "window" = inside the restart window):',
    '',
    ...ROUTES.map((k) => `- ${k}: ${Object.entries(r.routes[k].outcomes).map(([o, n]) => `${o} × ${n}`).join(', ')}`),
    '',
    `Service warnings/errors logged: ${Object.entries(r.service.warnings).map(([k, v]) => `${k} × ${v}`).join('; ') || 'none'}`,
    '',
    'Distinct warning/error lines (level, message, code, driver code, message):',
    '',
    ...r.service.warningSamples.map((l) => `- ${l}`),
  ];
  if (r.outside.errorSamples.length) lines.push('', `Errors outside the window (first ${r.outside.errorSamples.length}): ${r.outside.errorSamples.join('; ')}`);
  if (r.inside.otherErrorSamples.length) lines.push('', `Other errors inside the window: ${r.inside.otherErrorSamples.join('; ')}`);
  return `${lines.join('\n')}\n`;
}

async function main() {
  const { values } = parseArgs({
    options: {
      duration: { type: 'string', default: '300' },
      rate: { type: 'string', default: '200' },
      'restart-at': { type: 'string' },
      'restart-down': { type: 'string', default: '5' },
      accounts: { type: 'string', default: '20' },
      clients: { type: 'string' },
      'ai-latency-ms': { type: 'string', default: '150' },
      'mail-every-ms': { type: 'string', default: '250' },
      out: { type: 'string', default: path.join(REPO_ROOT, 'bench/results') },
      fast: { type: 'boolean', default: false },
    },
  });
  const num = (v: string | undefined) => (v === undefined ? undefined : Number(v));
  const result = await runMixedLoad({
    durationS: num(values.duration)!,
    rate: num(values.rate)!,
    restartAtS: num(values['restart-at']),
    restartDownS: num(values['restart-down']),
    accounts: num(values.accounts),
    clients: num(values.clients),
    aiLatencyMs: num(values['ai-latency-ms']),
    mailEveryMs: num(values['mail-every-ms']),
    fast: values.fast,
    verbose: true,
  });
  await mkdir(values.out!, { recursive: true });
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const base = path.join(values.out!, `load-mixed-${result.config.durationS}s-${result.config.rate}rps-${stamp}`);
  await writeFile(`${base}.json`, `${JSON.stringify(result, null, 2)}\n`);
  await writeFile(`${base}.md`, markdown(result));
  process.stdout.write(markdown(result));
  process.stdout.write(`\nwritten: ${base}.json, ${base}.md\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  main().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
