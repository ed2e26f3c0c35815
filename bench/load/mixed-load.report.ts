/**
 * The mixed load's result as Markdown: the summary lines, the per-route table, the timeline and
 * what the service logged.
 */
import { ROUTES, type LoadResult } from './mixed-load.model.ts';

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
    "Timeline (by the time a request was sent; errors exclude the 503s of the restart window; CPU is the service's, load the machine's 1-minute load average):",
    '',
    '| from s | requests | errors | sync busy | 503 in window | p50 ms | p99 ms | service CPU % | machine load |',
    '|---|---|---|---|---|---|---|---|---|',
    ...r.timeline.map(
      (b) =>
        `| ${b.fromS} | ${b.requests} | ${b.errors} | ${b.busy} | ${b.unavailable} | ${b.p50} | ${b.p99} | ${b.serviceCpuPct} | ${b.load1} |`,
    ),
    '',
    'Outcomes per route (whole run; "window" = inside the restart window):',
    '',
    ...ROUTES.map(
      (k) =>
        `- ${k}: ${Object.entries(r.routes[k].outcomes)
          .map(([o, n]) => `${o} × ${n}`)
          .join(', ')}`,
    ),
    '',
    `Service warnings/errors logged: ${
      Object.entries(r.service.warnings)
        .map(([k, v]) => `${k} × ${v}`)
        .join('; ') || 'none'
    }`,
    '',
    'Distinct warning/error lines (level, message, code, driver code, message):',
    '',
    ...r.service.warningSamples.map((l) => `- ${l}`),
  ];
  if (r.outside.errorSamples.length)
    lines.push(
      '',
      `Errors outside the window (first ${r.outside.errorSamples.length}): ${r.outside.errorSamples.join('; ')}`,
    );
  if (r.inside.otherErrorSamples.length)
    lines.push('', `Other errors inside the window: ${r.inside.otherErrorSamples.join('; ')}`);
  return `${lines.join('\n')}\n`;
}
