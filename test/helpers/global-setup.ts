/**
 * One embedded PostgreSQL per `node --test` run (node --test-global-setup), so one per shard
 * under test/run.ts. Migrations and the job engine's schema and queues are applied once to a
 * template database; each test file clones its own database from it. Run on its own, the
 * teardown prints the run's OpenAPI conformance tally in one line (conformance-tally.ts).
 */
import { rmSync } from 'node:fs';
import { mkdtemp, chmod } from 'node:fs/promises';
import path from 'node:path';
import { startEmbeddedPostgres, openDatabase } from '../../server/infra/database.ts';
import { createLogger } from '../../server/infra/logger.ts';
import { startJobEngine } from '../../server/jobs/engine.ts';
import { clusterRoot, stopClusterNow } from './clusters.ts';
import { readTally, startTallyRun, summariseTally } from './conformance-tally.ts';

let dir: string | undefined;

export async function globalSetup() {
  startTallyRun();
  dir = await mkdtemp(path.join(clusterRoot(), 'mia-test-pg-'));
  await chmod(dir, 0o755);
  const db = await startEmbeddedPostgres({ dataDir: path.join(dir, 'data'), database: 'mia_template', fast: true });
  const orm = await openDatabase(db.url);
  await orm.close(true);
  const engine = await startJobEngine({ databaseUrl: db.url, log: createLogger({ level: 'silent' }) });
  await engine.stop();
  process.env.MIA_TEST_TEMPLATE_URL = db.url;
}

/**
 * Synchronous: under --test-force-exit node:test calls the teardown and exits without
 * waiting for it, so an awaited stop never finished and every run left its data directory
 * behind (and, when the exit came first, its cluster running).
 */
export function globalTeardown() {
  // Under test/run.ts the runner prints the tally of all its shards instead.
  const conformance = process.env.MIA_TEST_SHARDED ? undefined : summariseTally(readTally());
  if (conformance) console.log(conformance);
  if (!dir) return;
  stopClusterNow(path.join(dir, 'data'));
  rmSync(dir, { recursive: true, force: true });
}
