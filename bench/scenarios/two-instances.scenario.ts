/**
 * Two instances: two server processes on one database and one Pub/Sub
 * subscription share the live inbox's work. A steady stream of changes over many accounts;
 * both intakes pull, both instances' workers sync. Measured: how the syncs split between
 * the instances (their own /metrics counters), whether any message was fetched twice (a
 * duplicate sync of one account would fetch its new messages again), and how often each
 * scheduled job ran, read from both instances' logs, against the cron periods that began
 * while both were up (the full run lasts until at least one period of every 10-minute job
 * has begun and run).
 */
import { readFileSync } from 'node:fs';
import type pg from 'pg';
import type { GmailStandIn } from '../../stand-ins/gmail.stand-in.ts';

export interface InstanceShare {
  /** Sync jobs this instance ran, by outcome. */
  syncJobs: Record<string, number>;
}

export interface ScheduledRuns {
  /** The job's log message. */
  job: string;
  /** Cron periods that began while both instances were up, at least a minute before the end. */
  periods: number;
  /** Runs of those periods in each instance's log. */
  runs: [number, number];
  /** The most runs any one of those periods had (goal 1), and how many had none. */
  maxPerPeriod: number;
  missed: number;
}

export interface TwoInstancesResult {
  accounts: number;
  changes: number;
  stored: number;
  ms: number;
  instances: [InstanceShare, InstanceShare];
  historyLists: number;
  messageGets: number;
  /** Messages fetched more than once during the phase (goal 0). */
  fetchedTwice: number;
  scheduled: ScheduledRuns[];
}

/** The scheduled jobs' log messages and their cron period (minutes; server/jobs/engine.ts SCHEDULES). */
const JOBS: { job: string; everyMinutes: number; atMinute: number }[] = [
  { job: 'watch renewal', everyMinutes: 10, atMinute: 0 },
  { job: 'quiet-account sweep', everyMinutes: 10, atMinute: 0 },
  { job: 'expired sessions and sign-in states purged', everyMinutes: 60, atMinute: 17 },
];

/** Counter values of `name` from a Prometheus text page, by the value of `label`. */
export function counterByLabel(text: string, name: string, label: string): Record<string, number> {
  const out: Record<string, number> = {};
  const re = new RegExp(`^${name}\\{[^}]*${label}="([^"]*)"[^}]*\\} (\\S+)$`, 'gm');
  for (const m of text.matchAll(re)) out[m[1]!] = (out[m[1]!] ?? 0) + Number(m[2]);
  return out;
}

/** The start of the cron period (every `everyMinutes`, at `atMinute` past it) that contains `t`. */
export function periodStart(t: number, everyMinutes: number, atMinute: number): number {
  const step = everyMinutes * 60_000;
  const offset = (atMinute % everyMinutes) * 60_000;
  return Math.floor((t - offset) / step) * step + offset;
}

/** Times (ms since the epoch) of the lines of a pino log file with message `msg`. */
function runTimes(file: string, msg: string): number[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.includes(`"msg":"${msg}"`))
    .map((line) => Date.parse((JSON.parse(line) as { time: string }).time));
}

/** Runs per period for the periods that began in [from, to), from both instances' run times. */
export function scheduledRuns(
  job: string,
  everyMinutes: number,
  atMinute: number,
  from: number,
  to: number,
  times: [number[], number[]],
): ScheduledRuns {
  const step = everyMinutes * 60_000;
  const starts: number[] = [];
  const first = periodStart(from, everyMinutes, atMinute);
  for (let p = first < from ? first + step : first; p < to; p += step) starts.push(p);
  const counted = new Set(starts);
  const perPeriod = new Map<number, number>(starts.map((p) => [p, 0]));
  const runs = times.map((ts) => {
    let n = 0;
    for (const t of ts) {
      const p = periodStart(t, everyMinutes, atMinute);
      if (!counted.has(p)) continue;
      perPeriod.set(p, perPeriod.get(p)! + 1);
      n++;
    }
    return n;
  }) as [number, number];
  const counts = [...perPeriod.values()];
  return {
    job,
    periods: starts.length,
    runs,
    maxPerPeriod: Math.max(0, ...counts),
    missed: counts.filter((c) => c === 0).length,
  };
}

export async function twoInstances(opts: {
  emails: string[];
  gmail: GmailStandIn;
  pool: pg.Pool;
  /** Each instance's /metrics page and log file. */
  instances: [{ metrics: () => Promise<string>; logFile: string }, { metrics: () => Promise<string>; logFile: string }];
  /** When both instances were up (ms since the epoch). */
  bothUpSince: number;
  perSecond: number;
  /** At least this long; longer when `untilPeriods` asks. */
  minSeconds: number;
  /** Keep the changes coming until a period of every 10-minute job has begun and had a minute to run. */
  untilPeriods: boolean;
  timeoutMs: number;
}): Promise<TwoInstancesResult> {
  const { gmail } = opts;
  const before = await Promise.all(
    opts.instances.map(async (i) => counterByLabel(await i.metrics(), 'mia_sync_jobs_total', 'outcome')),
  );
  const gets = new Map<string, number>();
  gmail.resetCounters();
  const t0 = Date.now();
  const tenMinutes = 10 * 60_000;
  const end = opts.untilPeriods
    ? Math.max(t0 + opts.minSeconds * 1000, Math.ceil(t0 / tenMinutes) * tenMinutes + 75_000)
    : t0 + opts.minSeconds * 1000;
  const ids: string[] = [];
  for (let i = 0; Date.now() < end; i++) {
    const wait = t0 + (i * 1000) / opts.perSecond - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    ids.push(gmail.addMessage(opts.emails[(i * 7919) % opts.emails.length]!, { subject: `two ${i}` }).id);
  }
  const deadline = Date.now() + opts.timeoutMs;
  let stored = 0;
  while (Date.now() < deadline) {
    stored = Number(
      (
        await opts.pool.query<{ n: string }>(
          '/*bench*/ select count(*) as n from mail_messages where provider_message_id = any($1)',
          [ids],
        )
      ).rows[0]!.n,
    );
    if (stored >= ids.length) break;
    await new Promise((r) => setTimeout(r, 250));
  }
  const ms = Date.now() - t0;
  for (const r of gmail.requests) {
    if (r.endpoint !== 'messages.get') continue;
    const id = r.path.slice(r.path.lastIndexOf('/') + 1);
    gets.set(id, (gets.get(id) ?? 0) + 1);
  }
  const after = await Promise.all(
    opts.instances.map(async (i) => counterByLabel(await i.metrics(), 'mia_sync_jobs_total', 'outcome')),
  );
  const share = (i: 0 | 1): InstanceShare => ({
    syncJobs: Object.fromEntries(
      Object.entries(after[i]!)
        .map(([k, v]) => [k, v - (before[i]![k] ?? 0)])
        .filter(([, v]) => (v as number) > 0),
    ),
  });
  const now = Date.now();
  return {
    accounts: opts.emails.length,
    changes: ids.length,
    stored,
    ms,
    instances: [share(0), share(1)],
    historyLists: gmail.calls['history.list'] ?? 0,
    messageGets: gmail.calls['messages.get'] ?? 0,
    fetchedTwice: [...gets.values()].filter((n) => n > 1).length,
    scheduled: JOBS.map(({ job, everyMinutes, atMinute }) =>
      scheduledRuns(
        job,
        everyMinutes,
        atMinute,
        opts.bothUpSince,
        now - 60_000,
        opts.instances.map((i) => runTimes(i.logFile, job)) as [number[], number[]],
      ),
    ),
  };
}
