/**
 * Before/after table of two benchmark results:
 *
 *   node bench/compare.ts bench/results/<before>.json bench/results/<after>.json [--out <file.md>]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { BenchReport } from './report.ts';
import type { LoadResult } from './scenarios.ts';

const { values, positionals } = parseArgs({ allowPositionals: true, options: { out: { type: 'string' } } });
if (positionals.length !== 2) {
  process.stderr.write('usage: node bench/compare.ts <before.json> <after.json> [--out file.md]\n');
  process.exit(2);
}
const [beforeFile, afterFile] = positionals as [string, string];
const before = JSON.parse(readFileSync(beforeFile, 'utf8')) as BenchReport;
const after = JSON.parse(readFileSync(afterFile, 'utf8')) as BenchReport;

const n0 = (v: number | null | undefined) => (v == null || Number.isNaN(v) ? 'n/a' : v.toFixed(0));
const n1 = (v: number | null | undefined) => (v == null || Number.isNaN(v) ? 'n/a' : v.toFixed(1));
const n2 = (v: number | null | undefined) => (v == null || Number.isNaN(v) ? 'n/a' : v.toFixed(2));
const pct = (v: number | null | undefined) => (v == null ? 'n/a' : `${(v * 100).toFixed(0)} %`);
const k = (n: number) => (n >= 1000 ? `${n / 1000}k` : String(n));
const row = (cells: string[]) => `| ${cells.join(' | ')} |`;
const sizes = after.settings.sizes;
const largest = Math.max(...sizes);
const listAt = (r: BenchReport, size: number) => r.list.find((l) => l.threads === size);
const syncAt = (r: BenchReport, size: number, kind: 'listing' | 'incremental') =>
  r.sync.find((s) => s.threads === size && s.kind === kind);

const out: string[] = [];
out.push(`# Before / after — ${path.basename(beforeFile)} → ${path.basename(afterFile)}`);
out.push('');
for (const [name, r] of [
  ['before', before],
  ['after', after],
] as const) {
  out.push(
    `- ${name}: ${r.startedAt}${r.serverRoot ? `, server from ${r.serverRoot}` : ''}; load average at start ${r.machine.loadAverageAtStart?.join(' / ') ?? 'n/a'}, at end ${r.machine.loadAverageAtEnd?.join(' / ') ?? 'n/a'}`,
  );
}
out.push(
  `- machine: ${after.machine.cpuModel}, ${after.machine.cores} cores, ${after.machine.memoryGiB} GiB, Node ${after.machine.node}, PostgreSQL ${after.machine.postgres}`,
);
out.push('');

out.push(`## Thread list, ${k(largest)} threads, GET /api/mail/threads?limit=${after.settings.listLimit}`);
out.push('');
out.push(
  row([
    'target',
    'req/s before → after',
    'p50 ms',
    'p99 ms',
    'DB statements / request',
    'server CPU ms / request',
    'database CPU ms / request',
  ]),
);
out.push(row(['---', '---:', '---:', '---:', '---:', '---:', '---:']));
const pair = (f: (l: LoadResult) => string, a?: LoadResult, b?: LoadResult) =>
  `${a ? f(a) : 'n/a'} → ${b ? f(b) : 'n/a'}`;
const lb = listAt(before, largest);
const la = listAt(after, largest);
const targets: [string, (x: NonNullable<typeof la>) => LoadResult | undefined][] = [
  [`service, one client, ${after.settings.connections} connections`, (x) => x.service],
  [`service, ${after.settings.connections} clients`, (x) => x.serviceMany],
  ['service, one client, 10 connections', (x) => x.serviceModerate],
  ['bare Koa + pg, same SQL (floor)', (x) => x.bare],
  ['bare Koa + pg, same SQL (floor), 10 connections', (x) => x.bareModerate],
];
for (const [name, pick] of targets) {
  const a = lb ? pick(lb) : undefined;
  const b = la ? pick(la) : undefined;
  if (!a && !b) continue;
  out.push(
    row([
      name,
      pair((l) => n0(l.rps), a, b),
      pair((l) => String(l.latencyMs.p50), a, b),
      pair((l) => String(l.latencyMs.p99), a, b),
      pair((l) => n1(l.statementsPerRequest), a, b),
      pair((l) => n2(l.cpuMsPerRequest?.server), a, b),
      pair((l) => n2(l.cpuMsPerRequest?.database), a, b),
    ]),
  );
}
out.push('');
out.push(`Service / floor throughput: ${pct(lb?.ratio)} → **${pct(la?.ratio)}** (goal ≥ 70 %).`);
out.push('');

out.push('## Cost growth');
out.push('');
out.push(
  row([
    'threads',
    'service req/s',
    'service p99 ms',
    'floor req/s',
    'list statement ms (EXPLAIN ANALYZE)',
    'sync listing ms',
    'sync incremental ms',
  ]),
);
out.push(row(['---:', '---:', '---:', '---:', '---:', '---:', '---:']));
for (const size of sizes) {
  const b = listAt(before, size);
  const a = listAt(after, size);
  const eb = before.explain.find((e) => e.threads === size);
  const ea = after.explain.find((e) => e.threads === size);
  out.push(
    row([
      k(size),
      `${n0(b?.service.rps)} → ${n0(a?.service.rps)}`,
      `${b?.service.latencyMs.p99 ?? 'n/a'} → ${a?.service.latencyMs.p99 ?? 'n/a'}`,
      `${n0(b?.bare.rps)} → ${n0(a?.bare.rps)}`,
      `${eb?.executionMs ?? 'n/a'} → ${ea?.executionMs ?? 'n/a'}${eb?.seqScan ? ' (seq scan before)' : ''}${ea?.seqScan ? ' (**seq scan after**)' : ''}`,
      `${n0(syncAt(before, size, 'listing')?.wallMsMedian)} → ${n0(syncAt(after, size, 'listing')?.wallMsMedian)}`,
      `${n0(syncAt(before, size, 'incremental')?.wallMsMedian)} → ${n0(syncAt(after, size, 'incremental')?.wallMsMedian)}`,
    ]),
  );
}
out.push('');

out.push(
  `## Sync, one 50-message call, ${after.settings.providerLatencyMs} ms provider latency, ${k(largest)} threads stored`,
);
out.push('');
out.push(row(['kind', 'wall ms (median)', 'provider requests', 'provider round trips (per run)', 'DB statements']));
out.push(row(['---', '---:', '---:', '---:', '---:']));
for (const kind of ['listing', 'incremental'] as const) {
  const b = syncAt(before, largest, kind);
  const a = syncAt(after, largest, kind);
  const trips = (x?: typeof a) => (x ? x.runs.map((r) => r.providerRoundTrips).join(', ') : 'n/a');
  out.push(
    row([
      kind,
      `${n0(b?.wallMsMedian)} → ${n0(a?.wallMsMedian)}`,
      `${b?.runs.at(-1)?.providerRequests ?? 'n/a'} → ${a?.runs.at(-1)?.providerRequests ?? 'n/a'}`,
      `${trips(b)} → ${trips(a)}`,
      `${b?.runs.at(-1)?.syncStatements ?? 'n/a'} → ${a?.runs.at(-1)?.syncStatements ?? 'n/a'}`,
    ]),
  );
}
out.push('');

/** Item 3's result; results written before it was renamed call it `poller`. */
const burstOf = (r: BenchReport) => r.notifications ?? (r as { poller?: BenchReport['notifications'] }).poller ?? null;
if (burstOf(before) || burstOf(after)) {
  const b = burstOf(before);
  const a = burstOf(after);
  const s = (ms: number | null | undefined) => (ms == null ? 'timeout' : `${(ms / 1000).toFixed(1)} s`);
  out.push(`## Notifications, ${a?.notifications ?? b?.notifications} for ${a?.accounts ?? b?.accounts} accounts`);
  out.push('');
  out.push(row(['all messages stored', 'subscription drained', 'syncs', 'provider requests']));
  out.push(row(['---:', '---:', '---:', '---:']));
  out.push(
    row([
      `${s(b?.allStoredMs)} → ${s(a?.allStoredMs)}`,
      `${s(b?.drainedMs)} → ${s(a?.drainedMs)}`,
      `${b?.syncs ?? 'n/a'} → ${a?.syncs ?? 'n/a'}`,
      `${b?.providerRequests ?? 'n/a'} → ${a?.providerRequests ?? 'n/a'}`,
    ]),
  );
  out.push('');
}

out.push('## Memory of the server (RSS, MiB)');
out.push('');
out.push(row(['after start-up', 'idle', 'under load: peak', 'after the load']));
out.push(row(['---:', '---:', '---:', '---:']));
const m = (f: (r: BenchReport['memory']) => number | null) => `${n0(f(before.memory))} → ${n0(f(after.memory))}`;
out.push(row([m((x) => x.afterStartMiB), m((x) => x.idleMiB), m((x) => x.loadPeakMiB), m((x) => x.afterLoadMiB)]));
out.push('');

const text = out.join('\n');
process.stdout.write(`${text}\n`);
if (values.out) writeFileSync(values.out, `${text}\n`);
