/**
 * Bench item 15 (issue 45): analysis on arrival under a burst. A server of its own (its own
 * database and subscription, so that the main server takes none of these accounts' jobs) with
 * the OpenAI stand-in configured (the main server has none): its latency realistic, its usage
 * fixed per call, so the ledger's sums are exact. Signed-in accounts turn `autoTriage` on
 * through PATCH /api/settings; a burst of new mail of a known mix is notified as item 3's is.
 * The list of one of the accounts is read at a fixed rate idle before the burst, during it (until
 * every eligible thread has its analysis; split where every message was stored) and idle after
 * it; then, as a control, during the same burst again with autoTriage turned off (the syncs
 * alone, until stored). Each window's p99 is also read from the server's request log.
 * Then the same on fewer accounts on a server whose daily budget gives the share room for
 * about five analyses: the share must hold to the token, and the on-demand route still answers
 * from the rest of the budget.
 */
import { readFileSync } from 'node:fs';
import { WORKERS } from '../../server/jobs/auto-triage.job.ts';
import { startOpenAIStandIn, type OpenAIStandIn } from '../../stand-ins/openai.stand-in.ts';
import { freshIp, signIn, type NodeProcess, type SignedIn } from '../infra.ts';
import type { BenchReport } from '../report.ts';
import {
  addBurst,
  listWindow,
  readBurst,
  readTokens,
  reservations,
  triageBusy,
  type AutoTriageResult,
  type ListWindow,
  type TriageKind,
  type TriageRun,
  listQuantile,
} from '../scenarios.ts';
import { median, settings, step, WEB_ORIGIN } from './bench.settings.ts';
import type { BenchWorld, IsolatedStore } from './bench.world.ts';

const SHARE = 0.5;
const DAY_MS = 86_400_000;

export async function measureAutoTriage(world: BenchWorld, report: BenchReport): Promise<void> {
  const openai = await startOpenAIStandIn({ latencyMs: settings.triageAiLatencyMs });
  const usage = { prompt_tokens: settings.triagePromptTokens, completion_tokens: settings.triageCompletionTokens };
  openai.setUsage(usage);
  const perCall = usage.prompt_tokens + usage.completion_tokens;
  try {
    const result: AutoTriageResult = {
      instances: 1,
      workersPerInstance: WORKERS,
      runs: [],
      list: [],
      listP99Ratio: null,
      listP99RatioAfter: null,
      listP99RatioTriage: null,
    };
    step(
      `triage: ${settings.triageAccounts} accounts x ${settings.triagePerAccount} new messages, AI latency ${settings.triageAiLatencyMs} ms, ${perCall} tokens a call`,
    );
    const main = await triageRun(world, openai, {
      name: 'triage',
      accounts: settings.triageAccounts,
      daily: 20_000,
      list: result.list,
    });
    result.runs.push(main);
    const [idle, burst, after] = result.list;
    const ratio = (a?: { p99Ms: number | null }, b?: { p99Ms: number | null }) =>
      a?.p99Ms && b?.p99Ms ? Math.round((a.p99Ms / b.p99Ms) * 100) / 100 : null;
    result.listP99Ratio = ratio(burst, idle);
    result.listP99RatioAfter = ratio(burst, after);
    result.listP99RatioTriage = ratio(burst?.afterStored, idle);
    // Room for (n - 1) calls at their usage and the n-th at the largest upper bound seen: about n analyses, no more.
    const share = (settings.triageSmallAnalyses - 1) * perCall + (main.reservation?.max ?? 4_000);
    step(`triage: small budget, the share ${share} tokens (${settings.triageSmallAccounts} accounts)`);
    result.runs.push(
      await triageRun(world, openai, {
        name: 'triage-small',
        accounts: settings.triageSmallAccounts,
        daily: Math.ceil(share / SHARE),
        onDemand: true,
      }),
    );
    report.autoTriage = result;
  } finally {
    await openai.close();
  }
}

async function triageRun(
  world: BenchWorld,
  openai: OpenAIStandIn,
  opts: { name: string; accounts: number; daily: number; list?: ListWindow[]; onDemand?: boolean },
): Promise<TriageRun> {
  const { gmail, identity } = world;
  const store = await world.isolated(opts.name.replace(/-/g, '_'));
  let server: NodeProcess | undefined;
  let logFile = '';
  try {
    const env = {
      ...store.env,
      OPENAI_API_KEY: openai.apiKey,
      OPENAI_BASE_URL: openai.baseUrl,
      AI_DAILY_TOKEN_BUDGET: String(opts.daily),
      AUTO_TRIAGE_BUDGET_SHARE: String(SHARE),
    };
    ({ server, logFile } = await world.startSecondServer({ name: opts.name, env }));
    const accounts = await signInAll(world, server, store, opts.name, opts.accounts, opts.list !== undefined);
    await until(async () => !(await triageBusy(store.pool)), 60_000, 'the setting passes did not end');
    openai.resetCounters();
    const rate = settings.triageListRate;
    if (opts.list)
      opts.list.push(await listWindow('idle', accounts[0]!, rate, { seconds: settings.triageIdleSeconds }));

    gmail.setLatency(settings.providerLatencyMs);
    world.setForwarding(true);
    const burst = addBurst(gmail, accounts, settings.triagePerAccount);
    const eligible = [...burst.byId.values()].filter((m) => m.kind === 'personal').length;
    let analysedAll!: () => void;
    const allAnalysed = new Promise<void>((resolve) => (analysedAll = resolve));
    let storedAt: number | null = null;
    const during = opts.list
      ? listWindow('burst', accounts[0]!, rate, { done: allAnalysed, storedAt: () => storedAt })
      : null;
    // Done: every message stored and the queue idle (nothing running, nothing due within a minute) at two reads a second apart.
    let idleReads = 0;
    const finished = await until(
      async () => {
        const b = await readBurst(store.pool, burst);
        if (b.stored >= burst.byId.size) storedAt ??= burst.startedAt + b.storedMs;
        if (b.analysed >= eligible) analysedAll();
        idleReads = b.stored >= burst.byId.size && !(await triageBusy(store.pool)) ? idleReads + 1 : 0;
        return idleReads >= 2;
      },
      settings.drainTimeoutMs,
      null,
      500,
    );
    analysedAll();
    if (during) opts.list!.push(await during);
    world.setForwarding(false);
    gmail.setLatency(0);
    const read = await readBurst(store.pool, burst);
    const shareTokens = Math.floor(opts.daily * SHARE);
    const reserved = reservations(openai);
    const byKind = { personal: 0, category: 0, 'bulk-header': 0, own: 0 } as Record<TriageKind, number>;
    for (const m of burst.byId.values()) byKind[m.kind]++;
    const run: TriageRun = {
      name: opts.name,
      accounts: accounts.length,
      messages: burst.byId.size,
      eligible,
      byKind,
      budget: { daily: opts.daily, share: SHARE, shareTokens },
      ai: {
        latencyMs: settings.triageAiLatencyMs,
        promptTokens: settings.triagePromptTokens,
        completionTokens: settings.triageCompletionTokens,
      },
      mailLatencyMs: settings.providerLatencyMs,
      storedMs: finished || read.stored >= burst.byId.size ? read.storedMs : null,
      analysedMs: read.analysed >= eligible ? read.analysedMs : null,
      stored: read.stored,
      analysed: read.analysed,
      ineligibleAnalysed: read.ineligibleAnalysed,
      aiUtilisation:
        read.analysed >= eligible && read.analysedMs > 0
          ? Math.round(((openai.calls.chat * settings.triageAiLatencyMs) / (WORKERS * read.analysedMs)) * 100) / 100
          : null,
      analysesPer10s: await per10s(store, burst.startedAt),
      aiCalls: openai.calls.chat,
      peakInFlight: openai.peakInFlight(),
      bound: WORKERS,
      tokens: await readTokens(
        store.pool,
        accounts.map((a) => a.accountId),
        shareTokens,
      ),
      reservation: reserved.length
        ? { min: Math.min(...reserved), median: median(reserved), max: Math.max(...reserved) }
        : null,
    };
    if (opts.onDemand)
      run.onDemand = await onDemand(
        store,
        accounts[0]!,
        [...burst.byId]
          .filter(([, m]) => m.kind === 'personal' && m.accountId === accounts[0]!.accountId)
          .map(([id]) => id),
      );
    if (opts.list) {
      opts.list.push(await listWindow('idle', accounts[0]!, rate, { seconds: settings.triageIdleSeconds }));
      const control = await controlBurst(world, store, accounts, rate);
      opts.list.push(control.window);
      run.controlAnalysed = control.analysed;
      serverTimes(logFile, opts.list);
    }
    const t = run.tokens;
    step(
      `triage ${opts.name}: stored ${run.stored}/${run.messages} after ${run.storedMs ?? 'timeout'} ms; analysed ${run.analysed}/${eligible} eligible after ${run.analysedMs ?? 'n/a'} ms, ${run.ineligibleAnalysed} ineligible; ${run.aiCalls} AI calls, peak ${run.peakInFlight} in flight (bound ${run.bound}); auto-analyze max ${t.maxSpent} of ${shareTokens} (over by ${t.maxOverShare}), ${t.analysesMin}-${t.analysesMax} analyses an account; reservations ${run.reservation?.min}-${run.reservation?.max}`,
    );
    return run;
  } finally {
    world.setForwarding(false);
    gmail.setLatency(0);
    await server?.stop();
    await store.drop();
  }
}

/** Signs `n` accounts in (mailboxes of older mail only: none within the setting's look-back) and turns autoTriage on through the API. */
async function signInAll(
  world: BenchWorld,
  server: NodeProcess,
  store: IsolatedStore,
  name: string,
  n: number,
  listed: boolean,
): Promise<SignedIn[]> {
  const accounts: SignedIn[] = [];
  for (let i = 0; i < n; i++) {
    const email = `${name}${i}@bench.example`;
    // The listed account has a full page of older threads; older than the 3-day look-back, so not triaged.
    world.gmail.seed(email, listed && i === 0 ? 60 : 5, { sentReplies: false, now: Date.now() - 10 * DAY_MS });
    const account = await signIn(
      server.url,
      WEB_ORIGIN,
      world.identity,
      { sub: `bench-${name}-${i}`, email },
      store.pool,
    );
    await setTriage(account, true);
    accounts.push(account);
  }
  await until(
    async () => accounts.every((a) => world.gmail.watches(a.email).some((w) => w.kind === 'watch')),
    10_000,
    'mail watches were not registered',
  );
  return accounts;
}

/** PATCH /api/settings `{ autoTriage: on }`, as the web client sends it. */
async function setTriage(account: SignedIn, on: boolean): Promise<void> {
  const res = await account.browser.fetch('/api/settings', {
    method: 'PATCH',
    json: { autoTriage: on },
    headers: { 'X-CSRF-Token': account.csrfToken, 'X-Forwarded-For': freshIp() },
  });
  const body = (await res.json()) as { autoTriage?: boolean };
  if (res.status !== 200 || body.autoTriage !== on)
    throw new Error(`PATCH /api/settings for ${account.email} answered ${res.status} ${JSON.stringify(body)}`);
}

/** The same burst again with autoTriage off: the list until every message was stored (the syncs alone); how many got an analysis (goal 0). */
async function controlBurst(
  world: BenchWorld,
  store: IsolatedStore,
  accounts: SignedIn[],
  rate: number,
): Promise<{ window: ListWindow; analysed: number }> {
  for (const a of accounts) await setTriage(a, false);
  world.gmail.setLatency(settings.providerLatencyMs);
  world.setForwarding(true);
  const burst = addBurst(world.gmail, accounts, settings.triagePerAccount);
  let stored!: () => void;
  const window = listWindow('control', accounts[0]!, rate, {
    done: new Promise<void>((resolve) => (stored = resolve)),
  });
  await until(
    async () => (await readBurst(store.pool, burst)).stored >= burst.byId.size,
    settings.drainTimeoutMs,
    null,
  );
  stored();
  const w = await window;
  world.setForwarding(false);
  world.gmail.setLatency(0);
  await new Promise((r) => setTimeout(r, 1_000));
  const b = await readBurst(store.pool, burst);
  return { window: w, analysed: b.analysed + b.ineligibleAnalysed };
}

/** The on-demand route on one of the account's eligible threads left without an analysis; the operation its ledger row was charged as. */
async function onDemand(
  store: IsolatedStore,
  account: SignedIn,
  eligibleIds: string[],
): Promise<{ status: number; operation: string | null }> {
  const { rows } = await store.pool.query<{ id: string }>(
    `/*bench*/ select t.id from mail_threads t join mail_messages m on m.id = t.latest_message_id
      where t.account_id = $1 and m.provider_message_id = any($2::text[]) and not exists (select 1 from analyses a where a.message_id = m.id) limit 1`,
    [account.accountId, eligibleIds],
  );
  if (!rows[0]) return { status: 0, operation: null };
  const res = await account.browser.fetch(`/api/mail/threads/${rows[0].id}/analyze`, {
    method: 'POST',
    headers: { 'X-CSRF-Token': account.csrfToken, 'X-Forwarded-For': freshIp() },
  });
  await res.arrayBuffer();
  const op = await store.pool.query<{ operation: string }>(
    '/*bench*/ select operation from ai_usage where account_id = $1 order by created_at desc limit 1',
    [account.accountId],
  );
  return { status: res.status, operation: op.rows[0]?.operation ?? null };
}

/** Each window's (and burst part's) p99 as the server logged it: the `ms` of its GET /api/mail/threads lines begun within the span. */
function serverTimes(logFile: string, windows: ListWindow[]): void {
  const lines: { start: number; ms: number }[] = [];
  for (const line of readFileSync(logFile, 'utf8').split('\n')) {
    if (!line.includes('"path":"/api/mail/threads"')) continue;
    const e = JSON.parse(line) as { time: string; ms: number; method: string };
    if (e.method === 'GET') lines.push({ start: Date.parse(e.time) - e.ms, ms: e.ms });
  }
  const p99 = (from: number, to: number) =>
    listQuantile(
      lines.filter((l) => l.start >= from && l.start <= to).map((l) => l.ms),
      0.99,
    );
  for (const w of windows) {
    const { from, to, storedAt } = w.span;
    w.serverP99Ms = p99(from, to);
    if (storedAt !== undefined && w.syncing && w.afterStored) {
      w.syncing.serverP99Ms = p99(from, storedAt);
      w.afterStored.serverP99Ms = p99(storedAt, to);
    }
  }
}

/** Analyses stored in each 10 s since `startedAt` (epoch ms). */
async function per10s(store: IsolatedStore, startedAt: number): Promise<number[]> {
  const { rows } = await store.pool.query<{ w: number; n: string }>(
    `/*bench*/ select floor(extract(epoch from created_at - to_timestamp($1::float8 / 1000)) / 10)::int as w, count(*) as n from analyses group by 1 order by 1`,
    [startedAt],
  );
  const out: number[] = [];
  for (const r of rows) if (r.w >= 0) out[r.w] = Number(r.n);
  return Array.from(out, (n) => n ?? 0);
}

/** Polls `check` every `everyMs` until true (true) or `timeoutMs` passed: throws `failure` then, or returns false when it is null. */
async function until(
  check: () => Promise<boolean>,
  timeoutMs: number,
  failure: string | null,
  everyMs = 100,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) {
      if (failure) throw new Error(failure);
      return false;
    }
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
