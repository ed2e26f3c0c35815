/**
 * The bench's PostgreSQL: the given URL or an embedded cluster with durable defaults and
 * pg_stat_statements preloaded, and snapshots of the statements the server sent between two points.
 */
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedDatabase } from '../../server/infra/database.ts';

export interface BenchDatabase {
  url: string;
  name: string;
  /** Whether pg_stat_statements is loaded (statement counts are reported only then). */
  statements: boolean;
  version: string;
  /** The cluster's postmaster on this machine (null for a remote one): its backends are this run's. */
  postmasterPid: number | null;
  pool: pg.Pool;
  stop(): Promise<void>;
}

/** The parent of one of our backends, when it runs on this machine: the postmaster. */
async function postmasterOf(pool: pg.Pool): Promise<number | null> {
  const pid = (await pool.query<{ pid: number }>('select pg_backend_pid() as pid')).rows[0]!.pid;
  try {
    const m = /^PPid:\s+(\d+)$/m.exec(await readFile(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/**
 * A PostgreSQL for the run: the given URL as is, or an embedded cluster in a temporary
 * directory with default (durable) settings, restarted once to preload pg_stat_statements.
 */
export async function startDatabase(opts: { url?: string; log?: (line: string) => void }): Promise<BenchDatabase> {
  let embedded: EmbeddedDatabase | undefined;
  let dir: string | undefined;
  let url = opts.url;
  if (!url) {
    dir = await mkdtemp(path.join(tmpdir(), 'mia-bench-pg-'));
    await chmod(dir, 0o755);
    const dataDir = path.join(dir, 'data');
    const first = await startEmbeddedPostgres({ dataDir, database: 'mia_bench', log: opts.log });
    const admin = new pg.Client({ connectionString: first.url });
    await admin.connect();
    await admin.query(`alter system set shared_preload_libraries = 'pg_stat_statements'`);
    await admin.query(`alter system set pg_stat_statements.track = 'top'`);
    await admin.end();
    await first.stop();
    embedded = await startEmbeddedPostgres({ dataDir, database: 'mia_bench', port: first.port, log: opts.log });
    url = embedded.url;
  }
  const pool = new pg.Pool({ connectionString: url, max: 3 });
  // pool.end() lets idle connections close in the background: one still open when the
  // cluster stops reports the shutdown here, which must not crash the run.
  pool.on('error', () => undefined);
  let statements = false;
  try {
    await pool.query('create extension if not exists pg_stat_statements');
    await pool.query('select pg_stat_statements_reset()');
    statements = true;
  } catch {
    statements = false;
  }
  const version = (await pool.query<{ v: string }>("select current_setting('server_version') as v")).rows[0]!.v;
  return {
    url,
    name: decodeURIComponent(new URL(url).pathname.slice(1)),
    statements,
    version,
    postmasterPid: await postmasterOf(pool),
    pool,
    async stop() {
      await pool.end();
      await embedded?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    },
  };
}

export interface StatementSnapshot {
  byQuery: Map<string, number>;
}

/** Calls per normalised statement of the bench database so far (pg_stat_statements). */
export async function statementSnapshot(db: BenchDatabase): Promise<StatementSnapshot | null> {
  if (!db.statements) return null;
  const { rows } = await db.pool.query<{ query: string; calls: string }>(
    `select query, calls from pg_stat_statements where dbid = (select oid from pg_database where datname = current_database())`,
  );
  const byQuery = new Map<string, number>();
  for (const r of rows) byQuery.set(r.query, (byQuery.get(r.query) ?? 0) + Number(r.calls));
  return { byQuery };
}

/** Statements run between two snapshots, the bench's own queries (pg_stat_statements, seeding) left out. */
export function statementDelta(
  before: StatementSnapshot | null,
  after: StatementSnapshot | null,
): { query: string; calls: number }[] | null {
  if (!before || !after) return null;
  const out: { query: string; calls: number }[] = [];
  for (const [query, calls] of after.byQuery) {
    const d = calls - (before.byQuery.get(query) ?? 0);
    if (d > 0 && !/pg_stat_statements|\/\*bench\*\//.test(query)) out.push({ query, calls: d });
  }
  return out.sort((a, b) => b.calls - a.calls);
}
