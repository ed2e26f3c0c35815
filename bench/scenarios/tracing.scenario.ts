/**
 * Tracing's cost: the thread list under the same load against fresh server processes of the
 * same configuration, one without the OTEL_* variables and two exporting to a local OTLP
 * receiver (the stand-in, default protocol http/protobuf, a queue large enough that no span is
 * dropped): every trace recorded (the SDK's default sampler), and one in ten
 * (`parentbased_traceidratio` 0.1). Interleaved rounds at one fixed request rate; the figure is
 * the server's CPU per request next to tracing off (goal: at most 10 % more), with what each
 * costs at start.
 */
import type { LoadResult } from './list.scenario.ts';

export const TRACING_TARGETS = ['off', 'on', 'sampled'] as const;
export type TracingTargetName = (typeof TRACING_TARGETS)[number];

export interface TracingTarget {
  /** Resident set after start-up (MiB). */
  afterStartMiB: number | null;
  /** One load run per round, in the order they ran. */
  rounds: LoadResult[];
  /** Spans the receiver got from this server, per list request it got the server span of. */
  spansPerRequest: number | null;
}

export interface TracingResult {
  threads: number;
  targets: Record<TracingTargetName, TracingTarget>;
}

const median = (xs: number[]) => {
  const s = xs.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2) : NaN;
};

/** Median CPU ms per request, req/s and p99 of a target's rounds. */
export function tracingFigures(t: TracingTarget) {
  return {
    cpuMs: median(t.rounds.map((r) => r.cpuMsPerRequest.server ?? NaN)),
    rps: median(t.rounds.map((r) => r.rps)),
    p99: median(t.rounds.map((r) => r.latencyMs.p99)),
    failed: t.rounds.reduce((a, r) => a + r.non2xx + r.errors + r.timeouts, 0),
  };
}

const LABELS: Record<TracingTargetName, string> = {
  off: 'off (no OTEL_* variables)',
  on: 'on, every trace (default sampler)',
  sampled: 'on, one trace in ten (parentbased_traceidratio 0.1)',
};

/** Section 10 of the result table. */
export function renderTracing(t: TracingResult): string[] {
  const f2 = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : 'n/a');
  const f0 = (n: number | null) => (n !== null && Number.isFinite(n) ? n.toFixed(0) : 'n/a');
  const off = tracingFigures(t.targets.off).cpuMs;
  const more = (cpu: number) => (off > 0 && Number.isFinite(cpu) ? cpu / off - 1 : NaN);
  const pctText = (x: number) => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${(x * 100).toFixed(1)} %` : 'n/a');
  const out = [
    `## 10. Tracing — CPU per list request with tracing on (exporting to a local OTLP receiver) next to off, ${t.threads} threads, ${t.targets.off.rounds.length} interleaved rounds`,
    '',
    '| tracing | server CPU ms per request (median) | vs off (goal ≤ +10 %) | req/s (median) | p99 ms (median) | spans exported per request | failed requests | resident set after start-up |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const name of TRACING_TARGETS) {
    const target = t.targets[name];
    const f = tracingFigures(target);
    const vs = name === 'off' ? '' : `${pctText(more(f.cpuMs))} ${more(f.cpuMs) <= 0.1 ? 'yes' : '**no**'}`;
    out.push(
      `| ${LABELS[name]} | ${f2(f.cpuMs)} | ${vs} | ${f0(f.rps)} | ${f0(f.p99)} | ${target.spansPerRequest?.toFixed(2) ?? '–'} | ${f.failed} | ${f0(target.afterStartMiB)} MiB |`,
    );
  }
  const first = t.targets.off.rounds[0];
  const rate = first ? Math.round(first.requests / first.seconds) : 0;
  out.push(
    '',
    `Each round: ~${rate} requests/s (a fixed rate; ${first?.connections ?? 0} connections), the same account and URL against each server in turn (the order rotates), CPU from /proc. Traced servers: OTEL_BSP_MAX_QUEUE_SIZE=16384 (the default 2,048 can fill between two exports, 5 s apart, at this rate, and drops what does not fit).`,
    '',
  );
  return out;
}
