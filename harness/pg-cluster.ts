/**
 * A PostgreSQL cluster of the harness's own, in a temporary directory, that can be stopped
 * and started again on the same port (an outage the service has to ride out), and a one-off
 * SQL session to look at what the service stored.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { openDatabase, startEmbeddedPostgres, type EmbeddedDatabase } from '../server/infra/database.ts';

export interface Cluster {
  readonly port: number;
  /** URL of a database on this cluster (default: the migrated `mia` database). */
  url(database?: string): string;
  /** Creates an empty database and applies the migrations; returns its URL. */
  createDatabase(name?: string): Promise<string>;
  running(): boolean;
  /** Fast shutdown (SIGINT): open sessions are terminated, committed data is kept. */
  stop(): Promise<void>;
  /** Starts the same data directory again on the same port. */
  start(): Promise<void>;
  close(): Promise<void>;
}

/**
 * A cluster of its own in a temporary directory. `durable: false` turns fsync and
 * synchronous commit off (tests); the load benchmark keeps PostgreSQL's defaults.
 */
export async function startCluster(opts: { durable?: boolean } = {}): Promise<Cluster> {
  const dir = await mkdtemp(path.join(tmpdir(), 'mia-resilience-'));
  await chmod(dir, 0o755);
  const dataDir = path.join(dir, 'data');
  const fast = !opts.durable;
  let db: EmbeddedDatabase | undefined = await startEmbeddedPostgres({ dataDir, database: 'mia', fast });
  const first = db;
  await (await openDatabase(first.url)).close(true);
  const base = new URL(first.url);
  const urlOf = (database = 'mia') => {
    const u = new URL(base);
    u.pathname = `/${database}`;
    return u.toString();
  };
  const cluster: Cluster = {
    port: first.port,
    url: urlOf,
    async createDatabase(name = `r_${randomBytes(5).toString('hex')}`) {
      const admin = new pg.Client({ connectionString: urlOf('postgres') });
      await admin.connect();
      try {
        await admin.query(`create database ${name}`);
      } finally {
        await admin.end();
      }
      await (await openDatabase(urlOf(name))).close(true);
      return urlOf(name);
    },
    running: () => db !== undefined,
    async stop() {
      const d = db;
      db = undefined;
      await d?.stop();
    },
    async start() {
      if (db) return;
      db = await startEmbeddedPostgres({ dataDir, database: 'mia', port: first.port, fast });
    },
    async close() {
      await cluster.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
  return cluster;
}

/** A one-off SQL session (its own connection, closed at once). */
export async function sql<T = Record<string, unknown>>(
  url: string,
  text: string,
  params: unknown[] = [],
): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text, params)).rows as T[];
  } finally {
    await c.end();
  }
}
