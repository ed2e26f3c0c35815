/**
 * Bench item 10: tracing's CPU per list request, off and on (every trace, and one in ten), in
 * interleaved rounds against fresh servers of the world's configuration (tracing.scenario.ts).
 */
import type { SignedIn } from '../infra.ts';
import type { BenchReport } from '../report.ts';
import { loadTest, TRACING_TARGETS, type TracingResult, type TracingTargetName } from '../scenarios.ts';
import { startOtlpStandIn } from '../../stand-ins/otlp.stand-in.ts';
import { settings, step } from './bench.settings.ts';
import type { BenchWorld } from './bench.world.ts';

export async function measureTracing(
  world: BenchWorld,
  report: BenchReport,
  listAccounts: Map<number, SignedIn>,
): Promise<void> {
  const threads = Math.max(...settings.sizes);
  const account = listAccounts.get(threads)!;
  const otlp = await startOtlpStandIn();
  try {
    step('tracing: starting a server without tracing and two exporting to the OTLP stand-in');
    const traced = (name: TracingTargetName, sampler: Record<string, string>) => ({
      OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
      OTEL_SERVICE_NAME: `bench-${name}`,
      OTEL_BSP_MAX_QUEUE_SIZE: '16384',
      ...sampler,
    });
    const [off, on, sampled] = await Promise.all([
      world.startSecondServer({ name: 'tracing-off' }),
      world.startSecondServer({ name: 'tracing-on', env: traced('on', {}) }),
      world.startSecondServer({
        name: 'tracing-sampled',
        env: traced('sampled', { OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.1' }),
      }),
    ]);
    const servers = { off: off.server, on: on.server, sampled: sampled.server };
    const fresh = (name: TracingTargetName) => ({
      afterStartMiB: servers[name].rss(),
      rounds: [],
      spansPerRequest: null,
    });
    const result: TracingResult = {
      threads,
      targets: { off: fresh('off'), on: fresh('on'), sampled: fresh('sampled') },
    };
    for (let round = 0; round < settings.tracingRounds; round++) {
      const order = TRACING_TARGETS.map((_, i) => TRACING_TARGETS[(i + round) % TRACING_TARGETS.length]!);
      for (const name of order) {
        step(`tracing: round ${round + 1}, ${name}`);
        result.targets[name].rounds.push(
          await loadTest({
            target: 'service',
            url: `${servers[name].url}/api/mail/threads?limit=${settings.listLimit}`,
            headers: { Cookie: account.cookie },
            connections: settings.tracingConnections,
            rate: settings.tracingRate,
            seconds: settings.seconds,
            warmupSeconds: settings.warmupSeconds,
            db: world.db,
            process: servers[name],
          }),
        );
      }
    }
    // Stopping a server flushes the spans it still holds.
    for (const server of Object.values(servers)) await server.stop();
    for (const name of ['on', 'sampled'] as const) {
      const spans = otlp.spans.filter((s) => s.resource['service.name'] === `bench-${name}`);
      const requests = spans.filter((s) => s.kind === 2 && s.name === 'GET /api/mail/threads').length;
      result.targets[name].spansPerRequest = requests ? spans.length / requests : null;
    }
    report.tracing = result;
  } finally {
    await otlp.close();
  }
}
