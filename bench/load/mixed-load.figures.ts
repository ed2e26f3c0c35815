/**
 * Turns the mixed load's samples, memory readings and restart times into its result: per-route
 * latency and outcomes outside the restart window, errors inside it, a 10 s timeline, memory and
 * heap trends, and what the service logged.
 */
import os from 'node:os';
import type { ServiceProcess } from '../../harness/service-process.ts';
import {
  isBusy,
  isError,
  isOk,
  percentile,
  ROUTES,
  slope,
  type LoadResult,
  type MemorySample,
  type RestartTimes,
  type Route,
  type RouteStats,
  type Sample,
} from './mixed-load.model.ts';
import type { Writes } from './mixed-load.verify.ts';

export interface RunRecord {
  cfg: LoadResult['config'];
  loadavgStart: number[];
  startedAt: string;
  samples: Sample[];
  memory: MemorySample[];
  heapAfterGc: { t: number; mb: number }[];
  restart: RestartTimes;
  sent: number;
  endSend: number;
  maxLag: number;
  serviceCpuSeconds: number;
  service: ServiceProcess;
  /** How the service process ended during the run (null: it was alive at the end). */
  exit: string | null;
  writes: Writes;
}

export function summarize({
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
}: RunRecord): LoadResult {
  const { acknowledged, analyticsMissing, upstreamMessages, upstreamMissing, duplicates } = writes;
  const windowMs: [number, number] = [restart.stopAtMs, restart.recoveredAtMs + 2_000];
  // A request belongs to the window when it was in flight at any moment of it.
  const inWindow = (s: Sample) => s.t <= windowMs[1] && s.t + s.ms >= windowMs[0];
  const outside = samples.filter((s) => !inWindow(s));
  const inside = samples.filter(inWindow);
  const sortedMs = (xs: Sample[]) => xs.map((s) => s.ms).sort((a, b) => a - b);
  const describe = (s: Sample) =>
    `${s.route} ${s.failure ?? `${s.status} ${s.code ?? ''}`} at ${(s.t / 1000).toFixed(1)} s`;
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
  const perMin = (pts: typeof memory) =>
    Math.round(slope(pts.map((m) => ({ x: m.t / 60_000, y: m.rssMb }))) * 100) / 100;
  const timeline: LoadResult['timeline'] = [];
  for (let from = 0; from < cfg.durationS * 1000; from += 10_000) {
    const xs = samples.filter((x) => x.t >= from && x.t < from + 10_000);
    const ms = sortedMs(xs);
    const mem = memory.filter((m) => m.t > from && m.t <= from + 10_000);
    const avg = (k: 'cpuPct' | 'load1') =>
      mem.length ? Math.round((mem.reduce((a, m) => a + m[k], 0) / mem.length) * 10) / 10 : 0;
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
      ...(Object.fromEntries(Object.entries(restart).map(([k, v]) => [k, Math.round(v)])) as typeof restart),
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
      unavailable503: inside.filter(
        (s) => s.status === 503 && (s.route === 'health' || s.code === 'SERVICE_UNAVAILABLE') && s.retryAfter,
      ).length,
      busy: inside.filter(isBusy).length,
      otherErrors: inside.filter((s) => isError(s) && !(s.status === 503 && s.retryAfter)).length,
      otherKinds: {
        timeouts: inside.filter((s) => s.failure === 'timeout').length,
        network: inside.filter((s) => s.status === 0 && s.failure !== 'timeout').length,
        other: inside.filter((s) => s.status !== 0 && isError(s) && !(s.status === 503 && s.retryAfter)).length,
      },
      otherErrorSamples: inside
        .filter((s) => isError(s) && !(s.status === 503 && s.retryAfter))
        .slice(0, 20)
        .map(describe),
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
      heapAfterGcSlopeMbPerMin:
        Math.round(slope(heapAfterGc.filter((h) => h.t >= warmupMs).map((h) => ({ x: h.t / 60_000, y: h.mb }))) * 100) /
        100,
    },
    writes: {
      analyticsAcknowledged: acknowledged.length,
      analyticsMissing,
      upstreamMessages,
      upstreamMissing,
      duplicates,
    },
    service: {
      alive: service.alive,
      exit,
      warnings,
      http500: service.logs.filter((l) => l.msg === 'request failed' && l.code === 'INTERNAL_ERROR').length,
      warningSamples: [
        ...new Set(
          service.logs.map(
            (l) =>
              `${l.level} ${l.msg} ${l.code ?? ''} ${l.errCode ?? ''} ${String(l.errMessage ?? l.err ?? '').slice(0, 120)}`,
          ),
        ),
      ].slice(0, 15),
      stderr: service.stderr.slice(-80),
    },
  };
}
