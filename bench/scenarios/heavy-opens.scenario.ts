/**
 * Issue 44's row, item 13's second variant: several accounts each open a set of heavy threads
 * never opened before all at once (10 each: each open a provider fetch of item 13's ~26 MB
 * thread, since none is stored yet), a new set once the last has ended, beside a normal user who
 * lists their inbox and opens one of their threads in turn. Windows of the normal user alone
 * (idle) and with the heavy opens, interleaved, as item 13's: the server's event-loop delay, its
 * RSS peak, the normal user's latency, and here also what every heavy open answered (200, or 503
 * with a Retry-After, tried again after it while the window lasts) and the most threads.get one
 * account had in flight at the Gmail stand-in at once. Both clients run in processes of their own
 * (bench/load/heavy-opens-clients.ts, bench/load/normal-client.ts): the stand-in makes each
 * heavy answer on the bench's event loop.
 */
import type { GmailStandIn } from '../../stand-ins/gmail.stand-in.ts';
import { sampleRss, type NodeProcess, type SignedIn } from '../infra.ts';
import type { HeavyOpensJob, HeavyOpensOutput } from '../load/heavy-opens-clients.ts';
import {
  benchChild,
  normalLatency,
  rankQuantile,
  round1,
  startCanary,
  type HeavyWindow,
} from './heavy-thread.scenario.ts';

export interface HeavyOpensWindow extends Omit<HeavyWindow, 'heavy'> {
  heavy?: {
    /** Opens begun (each a thread never opened before) and how each ended: served, refused (its last answer a 503), failed. */
    opens: number;
    outcomes: Record<string, number>;
    /** Every answer the heavy clients had, by status (0: failed or timed out); 503s without a Retry-After. */
    byStatus: Record<string, number>;
    refusalsWithoutRetryAfter: number;
    /** Served opens: from the first try to the answer. */
    servedP50Ms: number | null;
    servedMaxMs: number | null;
    /** Each set's seconds, from its first opens to the end of its last. */
    sets: number[];
    /** threads.get (format=full) the stand-in answered in the window; the most one account had in flight at once, per account. */
    providerFetches: number;
    inFlightPeak: number[];
  };
}

export interface HeavyOpensResult {
  accounts: number;
  opensPerAccount: number;
  setsPerWindow: number;
  thread: { messages: number; htmlKiB: number; textKiB: number; attachments: number };
  /** One heavy thread's threads.get (format=full) answer as the stand-in sends it, bytes. */
  answerBytes: number | null;
  windows: HeavyOpensWindow[];
  /** Normal user's p99, median of the heavy windows over the median of the idle ones (goal ≤ 2). */
  normalP99Ratio: number | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * One window: the normal user for `seconds` (idle), or until the heavy clients' process has
 * ended (heavy: `seconds` of opens and retries, then the opens in progress awaited).
 */
export async function heavyOpensWindow(opts: {
  kind: 'idle' | 'heavy';
  seconds: number;
  server: NodeProcess;
  gmail: GmailStandIn;
  readLag(): Promise<{ p99Ms: number; maxMs: number }>;
  normal: { account: SignedIn; threadIds: string[] };
  /** Per account its sets of thread ids, each opened all at once. */
  heavy: { accounts: { account: SignedIn; sets: string[][] }[]; timeoutMs: number };
}): Promise<HeavyOpensWindow> {
  const canary = await startCanary();
  await opts.readLag(); // resets the histogram
  opts.gmail.resetCounters();
  const rss = sampleRss(opts.server.pid);
  const t0 = performance.now();
  const { account, threadIds } = opts.normal;
  const normal = benchChild<{ ms: number; status: number }[]>('bench/load/normal-client.ts', {
    NORMAL: JSON.stringify({
      url: account.browser.baseUrl,
      cookie: account.browser.cookieHeader(),
      threadIds,
      ip: '10.33.0.1',
    }),
  });
  await normal.ready();
  let heavy: HeavyOpensOutput | undefined;
  if (opts.kind === 'heavy') {
    const job: HeavyOpensJob = {
      url: account.browser.baseUrl,
      accounts: opts.heavy.accounts.map((a) => ({
        cookie: a.account.browser.cookieHeader(),
        sets: a.sets.map((set) => set.map((id) => `/api/mail/threads/${id}`)),
      })),
      until: Date.now() + opts.seconds * 1000,
      timeoutMs: opts.heavy.timeoutMs,
    };
    heavy = await benchChild<HeavyOpensOutput>('bench/load/heavy-opens-clients.ts', {
      HEAVY_OPENS: JSON.stringify(job),
    }).result();
  } else await sleep(opts.seconds * 1000);
  normal.end();
  const timings = await normal.result();
  const seconds = Math.round((performance.now() - t0) / 100) / 10;
  await sleep(30); // the monitor's next timer records the last turn
  const loop = await opts.readLag();
  const idleProcessLoop = await canary.stop();
  const mem = rss.stop();
  const count = (keys: (string | number)[]) =>
    keys.reduce<Record<string, number>>((o, k) => ((o[k] = (o[k] ?? 0) + 1), o), {});
  const served = heavy?.opens.filter((o) => o.outcome === 'served').map((o) => o.ms) ?? [];
  return {
    kind: opts.kind,
    seconds,
    loop,
    idleProcessLoop,
    rssPeakMiB: mem.peak === null ? null : Math.round(mem.peak),
    normal: normalLatency(timings),
    ...(heavy
      ? {
          heavy: {
            opens: heavy.opens.length,
            outcomes: count(heavy.opens.map((o) => o.outcome)),
            byStatus: count(heavy.attempts.map((a) => a.status)),
            refusalsWithoutRetryAfter: heavy.attempts.filter((a) => a.status === 503 && !(a.retryAfter! >= 1)).length,
            servedP50Ms: round1(rankQuantile(served, 0.5)),
            servedMaxMs: round1(rankQuantile(served, 1)),
            sets: heavy.sets.map((s) => s.seconds),
            providerFetches: opts.gmail.calls['threads.get:full'] ?? 0,
            inFlightPeak: opts.heavy.accounts.map((a) => opts.gmail.inFlightPeak(a.account.email, 'threads.get')),
          },
        }
      : {}),
  };
}
