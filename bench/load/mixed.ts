/**
 * Mixed-workload load run with a PostgreSQL restart in the middle (does the service recover?).
 *
 *   node bench/load/mixed.ts --duration 300 --rate 200
 *     [--restart-at <s>=duration/2] [--restart-down <s>=5] [--accounts 20] [--clients <n>=rate]
 *     [--ai-latency-ms 150] [--mail-every-ms 250] [--out bench/results] [--fast]
 *
 * What runs: a PostgreSQL cluster of its own (PostgreSQL's durable defaults unless --fast),
 * the stand-in providers (identity, mail, AI, Pub/Sub) in this process, and the service as
 * a child process (`node server/main.ts` through harness/service-process.ts, TRUST_PROXY=true),
 * as the resilience tests run it. `accounts` users sign in through the real OAuth flow and
 * sync their seeded mailboxes; then `clients` virtual clients (one IP address each, each
 * using one account's session) send an open-loop (fixed arrival rate, not closed-loop)
 * mix of list, detail, session, health, analytics, sync and analyze requests, while new
 * mail keeps arriving upstream (and so notifications for the intake). At `restart-at`
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
import { Agent } from 'node:http';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { type Cluster, startCluster } from '../../harness/pg-cluster.ts';
import { REPO_ROOT, type ServiceProcess, sharedSecrets, startServiceProcess } from '../../harness/service-process.ts';
import { type StandIns, startStandIns, user } from '../../harness/stand-ins.ts';
import { eventually, sleep } from '../../harness/wait.ts';
import { createSender, makeClients, signInAccounts } from './mixed-load.client.ts';
import { summarize } from './mixed-load.figures.ts';
import {
  isError,
  type LoadOptions,
  type LoadResult,
  type MemorySample,
  type RestartTimes,
  type Sample,
} from './mixed-load.model.ts';
import { markdown } from './mixed-load.report.ts';
import { verifyWrites } from './mixed-load.verify.ts';

export {
  percentile,
  ROUTES,
  slope,
  type LoadOptions,
  type LoadResult,
  type Route,
  type RouteStats,
} from './mixed-load.model.ts';
export { markdown } from './mixed-load.report.ts';

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
    svc = await startServiceProcess(null, {
      nodeArgs: ['--expose-gc', '--import', './bench/load/heap-probe.ts'],
      onOutput: (line) => {
        if (!line.startsWith('heap-probe ') || loadStart === undefined) return;
        heapAfterGc.push({
          t: Math.round(performance.now() - loadStart),
          mb: JSON.parse(line.slice('heap-probe '.length)).heapUsedMb,
        });
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
    let exit: string | null = null;
    void service.exited.then(({ code, signal }) => {
      const at =
        loadStart === undefined ? 'before the load' : `at ${((performance.now() - loadStart) / 1000).toFixed(1)} s`;
      exit = `code ${code}, signal ${signal}, ${at}`;
      say(`THE SERVICE EXITED (${exit}); last output: ${service.stderr.slice(-60).join('\n')}`);
    });
    say(`service up at ${service.url} (pid ${service.pid}); database ${dbUrl}`);

    const accounts = await signInAccounts(service, providers, users, cfg.seed);
    say(`${accounts.length} accounts signed in and synced`);

    const clients = makeClients(cfg.clients, accounts);

    const url = new URL(service.url);
    // Idle sockets are dropped after 3 s, before the service closes them (its keepAliveTimeout
    // is 5 s): reusing a socket the server is closing at that moment fails with ECONNRESET, a
    // client-side race that says nothing about the service.
    const agent = new Agent({ keepAlive: true, maxSockets: 2_000, keepAliveMsecs: 1_000, timeout: 3_000 });
    const samples: Sample[] = [];
    const t0 = performance.now();
    loadStart = t0;
    const now = () => performance.now() - t0;
    const { send, inflight } = createSender(url, agent, now, cfg.requestTimeoutMs, samples);

    // Memory and CPU of the service (and the machine's load, shared with everything else), every 5 s.
    const memory: MemorySample[] = [];
    let lastCpu = { t: now(), s: await service.cpuSeconds() };
    const cpuStart = lastCpu.s;
    const sampleMemory = async () => {
      try {
        const t = now();
        const cpu = await service.cpuSeconds();
        const cpuPct = Math.round(((cpu - lastCpu.s) / ((t - lastCpu.t) / 1000 || 1)) * 100);
        lastCpu = { t, s: cpu };
        memory.push({
          t: Math.round(t),
          rssMb: Math.round(((await service.rss()) / 2 ** 20) * 10) / 10,
          cpuPct,
          load1: Math.round(os.loadavg()[0]! * 100) / 100,
        });
      } catch {
        /* the process is gone: reported below */
      }
    };
    await sampleMemory();
    const memTimer = setInterval(() => void sampleMemory(), 5_000);

    // Upstream mail keeps arriving (notifications for the intake, work for the syncs).
    let upstream = 0;
    const mailTimer =
      cfg.mailEveryMs > 0
        ? setInterval(() => {
            gmail.addMessage(accounts[upstream++ % accounts.length]!.email, { subject: `load ${upstream}` });
          }, cfg.mailEveryMs)
        : undefined;

    // The restart, in the background.
    const restart: RestartTimes = { stopAtMs: 0, stoppedAtMs: 0, startAtMs: 0, startedAtMs: 0, recoveredAtMs: 0 };
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
      await eventually(
        async () => {
          if (!service.alive) return true;
          const r = await fetch(`${service.url}/health`, {
            headers: { 'X-Forwarded-For': '192.168.0.1' },
            signal: AbortSignal.timeout(5_000),
          });
          await r.body?.cancel();
          return r.status === 200;
        },
        120_000,
        100,
      );
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
          say(
            `${Math.round(elapsed / 1000)} s: sent ${sent}, in flight ${inflight()}, last 10 s: ${recent.length} answered, ${recent.filter(isError).length} errors; service rss ${m?.rssMb} MB, cpu ${m?.cpuPct} %; machine load ${m?.load1}`,
          );
        }
        if (sent >= total) {
          clearInterval(tick);
          resolve();
        }
      }, 5);
    });
    const endSend = now();
    await eventually(async () => inflight() === 0, cfg.requestTimeoutMs + 2_000, 50);
    if (mailTimer) clearInterval(mailTimer);
    await restartDone;
    clearInterval(memTimer);
    await sampleMemory();
    const serviceCpuSeconds = (await service.cpuSeconds().catch(() => lastCpu.s)) - cpuStart;
    agent.destroy();
    say(`sent ${sent} in ${(endSend / 1000).toFixed(1)} s`);

    const writes = await verifyWrites(dbUrl, service, accounts, samples, gmail);
    return summarize({
      cfg,
      loadavgStart,
      startedAt,
      samples,
      memory,
      heapAfterGc,
      restart,
      sent,
      endSend,
      maxLag,
      serviceCpuSeconds,
      service,
      exit,
      writes,
    });
  } finally {
    await svc?.stop(5_000).catch(() => undefined);
    await providers?.close();
    await cluster?.close();
  }
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
