/** The Markdown of bench items 8 (mail anyone can send) and 9 (two instances), from report.ts. */
import type { CorpusResult, TwoInstancesResult } from './scenarios.ts';
import { f0, f1, f2, ok, pct } from './report-format.ts';

export function renderCorpus(r: { corpus?: CorpusResult | null }): string[] {
  const out: string[] = [];
  if (!r.corpus) return out;
  const { tokens: t, eventLoop: e } = r.corpus;
  out.push('## 8. Mail anyone can send — prompt tokens and the event loop');
  out.push('');
  out.push('| analysis prompt, o200k_base tokens | messages | median | p90 (goal ≤ 1,200) | max (goal ≤ 2,500) |');
  out.push('|---|---:|---:|---:|---:|');
  out.push(
    `| SpamAssassin corpus | ${t.corpus.n} | ${t.corpus.median} | ${t.corpus.p90} ${ok(t.corpus.p90 <= 1200)} | ${t.corpus.max} ${ok(t.corpus.max <= 2500)} |`,
  );
  out.push(
    `| generated hostile mail | ${t.hostile.n} | ${t.hostile.median} | ${t.hostile.p90} | ${t.hostile.max} ${ok(t.hostile.max <= 2500)} |`,
  );
  out.push('');
  out.push('| server event loop | window | delay p99 (goal < 50 ms) | delay max |');
  out.push('|---|---:|---:|---:|');
  out.push(`| idle | ${e.idle.seconds} s | ${e.idle.p99Ms} ms | ${e.idle.maxMs} ms |`);
  out.push(
    `| backfilling and opening ${e.busy.messages} messages (corpus and hostile; ${e.busy.threadsOpened} threads opened, ${e.busy.non200} not 200) | ${e.busy.seconds} s | ${e.busy.p99Ms} ms ${ok(e.busy.p99Ms < 50)} | ${e.busy.maxMs} ms |`,
  );
  out.push('');
  if (e.alone) {
    const a = e.alone;
    out.push(
      `One message at a time: the hostile set and the 10 largest of those corpus messages, each in its own thread, each thread opened alone twice (fetched, parsed and stored; then read back): ${a.opens} opens of ${a.threads} threads, ${a.non200} not 200; longest delay of the loop ${a.maxMs} ms (goal < 50 ms: ${ok(a.maxMs < 50)}), opening "${a.worst}".`,
    );
    out.push('');
  }
  out.push(
    "Tokens: each message as the Gmail stand-in serves it, normalised by the service's provider code, its analysis prompt built by the service's prompt code; system and user message. Event loop: prom-client's monitorEventLoopDelay in the server (one of its own: same configuration, its own database and subscription, its quota pacer off, so that 8 clients opening every thread are not paced at item 7's quota), read (and reset) through GET /metrics at the window's ends.",
  );
  out.push('');
  return out;
}

export function renderTwoInstances(r: { twoInstances?: TwoInstancesResult | null }): string[] {
  const out: string[] = [];
  if (!r.twoInstances) return out;
  const t = r.twoInstances;
  out.push(
    `## 9. Two instances — one database, one subscription, ${t.accounts} accounts, ${t.changes} changes over ${(t.ms / 1000).toFixed(0)} s`,
  );
  out.push('');
  out.push('| stored | sync jobs, instance 1 / 2 | history.list | messages.get | messages fetched twice (goal 0) |');
  out.push('|---:|---|---:|---:|---:|');
  const jobs = (j: Record<string, number>) =>
    Object.entries(j)
      .map(([o, n]) => `${n} ${o}`)
      .join(', ') || 'none';
  out.push(
    `| ${t.stored} / ${t.changes} ${ok(t.stored === t.changes)} | ${jobs(t.instances[0].syncJobs)} / ${jobs(t.instances[1].syncJobs)} | ${t.historyLists} | ${t.messageGets} | ${t.fetchedTwice} ${ok(t.fetchedTwice === 0)} |`,
  );
  out.push('');
  out.push(
    '| scheduled job | cron periods begun with both up | runs, instance 1 + 2 | most runs in one period (goal 1) | periods without a run |',
  );
  out.push('|---|---:|---:|---:|---:|');
  for (const j of t.scheduled)
    out.push(
      `| ${j.job} | ${j.periods} | ${j.runs[0]} + ${j.runs[1]} | ${j.periods ? `${j.maxPerPeriod} ${ok(j.maxPerPeriod === 1)}` : 'n/a'} | ${j.missed} |`,
    );
  out.push('');
  return out;
}
