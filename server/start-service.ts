/**
 * startService: the one start-up sequence, used by `npm start` (main.ts), the tests and the
 * demo. database (an embedded PostgreSQL when no URL is given) -> migrations -> container
 * -> HTTP app -> listen -> workers. `stop()` undoes it in reverse: stop accepting and
 * finish in-flight requests, stop the workers, close the pools, stop the embedded cluster.
 */
import type { AddressInfo, Server as NetServer } from 'node:net';
import type { Config } from './infra/config.ts';
import { buildContainer, type Container, type ContainerOverrides } from './container.ts';
import { openDatabase, startEmbeddedPostgres, type EmbeddedDatabase } from './infra/database.ts';
import { buildApp } from './http/app.ts';
import type { AnswerObserver } from './http/observe.ts';
import type { RouteInstaller } from './http/route-installer.ts';
import { createLogger, errorSummary } from './infra/logger.ts';
import { CONNECTIONS_BEYOND_STREAMS, listen, type RunningServer } from './http/listen.ts';

export interface ServiceOptions {
  config: Readonly<Config>;
  /** Where an embedded cluster keeps its data when `config.databaseUrl` is unset. */
  embeddedDataDir?: string;
  /** The embedded cluster's database name (default: the library's). */
  embeddedDatabase?: string;
  overrides?: ContainerOverrides;
  /** More plain routes (tests). */
  routes?: RouteInstaller[];
  /** Called with every answer as sent: method, path, status, headers, body (tests). */
  observe?: AnswerObserver;
  /**
   * A socket already listening, taken over instead of binding `config.port` (tests bind port 0
   * first so PUBLIC_BASE_URL can name the port, with no window for another process to take it).
   */
  listenOn?: NetServer;
  /** Grace for in-flight requests at stop (ms). */
  stopGraceMs?: number;
}

export interface RunningService {
  url: string;
  databaseUrl: string;
  container: Container;
  server: RunningServer;
  /** Idempotent; the database goes last. */
  stop(): Promise<void>;
}

export async function startService(opts: ServiceOptions): Promise<RunningService> {
  const { config } = opts;
  const log = opts.overrides?.log ?? createLogger({ level: config.logLevel });
  let embedded: EmbeddedDatabase | undefined;
  let databaseUrl = config.databaseUrl;
  if (!databaseUrl) {
    if (!opts.embeddedDataDir) throw new Error('DATABASE_URL is unset and no embedded data directory was given');
    log.info({ dataDir: opts.embeddedDataDir }, 'starting embedded PostgreSQL');
    embedded = await startEmbeddedPostgres({
      dataDir: opts.embeddedDataDir,
      database: opts.embeddedDatabase,
      log: (line) => log.debug({ postgres: line }),
    });
    databaseUrl = embedded.url;
  }
  const orm = await openDatabase(
    databaseUrl,
    (names) => names.length && log.info({ migrations: names }, 'migrations applied'),
  );
  const container = await buildContainer({ config, orm, databaseUrl, overrides: { ...opts.overrides, log } });
  const server = await listen(
    buildApp(container, { routes: opts.routes, observe: opts.observe }),
    config.port,
    config.host,
    opts.listenOn,
    config.eventStreamsPerInstance + CONNECTIONS_BEYOND_STREAMS,
  );
  const url = `http://${config.host}:${(server.address() as AddressInfo).port}`;
  log.info({ url }, `listening on ${url}`);
  for (const w of container.workers) await w.start();

  let stopped: Promise<void> | undefined;
  const stop = () =>
    (stopped ??= (async () => {
      try {
        // Open event streams never finish by themselves: end them so the stop need not wait out its grace.
        await container.liveEvents.stop();
        await server.stop(opts.stopGraceMs);
        await container.close();
      } finally {
        await embedded
          ?.stop()
          .catch((err: unknown) => log.error(errorSummary(err), 'stopping the embedded PostgreSQL failed'));
      }
    })());
  return { url, databaseUrl, container, server, stop };
}
