/**
 * `npm start`: the configuration from the environment (development secrets kept in the data
 * directory), then startService; readable log lines on a terminal, JSON otherwise.
 * SIGINT/SIGTERM stop it, also when they come during start-up: no new connections, in-flight
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
import { firstStopSignal } from './infra/signals.ts';
import { guardDroppedConnections } from './infra/dropped-connections.ts';

const DATA_DIR = path.resolve(process.env.MIA_DATA_DIR ?? '.data');

async function main() {
  // From the first line: a Ctrl-C during start-up stops the service once it is up (signals.ts).
  const stopSignal = firstStopSignal();
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
  guardDroppedConnections(process, log);
  let started = false;
  // Said at once, so that a Ctrl-C during a slow first start (initdb) is seen to be taken.
  void stopSignal.then((signal) => started || log.info({ signal }, 'stopping once started'));
  const tracing = config.tracing.enabled
    ? await (await import('./infra/tracing.ts')).startTracing(process.env, config.tracing)
    : undefined;
  if (tracing) log.info({ exporter: tracing.exporter }, 'tracing on');
  const { startService } = await import('./start-service.ts');
  const service = await startService({ config, overrides: { log }, embeddedDataDir: path.join(DATA_DIR, 'postgres') });
  started = true;
  const released = releaseStartupMemory();
  if (released === null) log.info('start-up memory kept: node was started without --expose-gc');
  else log.info({ ms: Math.round(released) }, 'start-up memory released');

  const signal = await stopSignal;
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
}

main().catch((err) => {
  process.stderr.write(`start-up failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
