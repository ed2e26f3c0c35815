/**
 * The benchmark's moving parts: its own embedded PostgreSQL (with pg_stat_statements, to
 * count the statements the server sends), server processes spawned with `node --import tsx`
 * (the service's own entry point, and the bare Koa floor), their resident memory, and the
 * real sign-in through the identity stand-in.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { cpus, tmpdir, totalmem, release } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort, startEmbeddedPostgres, type EmbeddedDatabase } from '../server/database.ts';
import { Browser } from '../test/helpers/browser.ts';
import type { IdentityStandIn } from '../stand-ins/identity.stand-in.ts';

export const ROOT = path.resolve(import.meta.dirname, '..');

export interface BenchDatabase {
  url: string;
  name: string;
  /** Whether pg_stat_statements is loaded (statement counts are reported only then). */
  statements: boolean;
  version: string;
  pool: pg.Pool;
  stop(): Promise<void>;
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
export function statementDelta(before: StatementSnapshot | null, after: StatementSnapshot | null): { query: string; calls: number }[] | null {
  if (!before || !after) return null;
  const out: { query: string; calls: number }[] = [];
  for (const [query, calls] of after.byQuery) {
    const d = calls - (before.byQuery.get(query) ?? 0);
    if (d > 0 && !/pg_stat_statements|\/\*bench\*\//.test(query)) out.push({ query, calls: d });
  }
  return out.sort((a, b) => b.calls - a.calls);
}

export interface NodeProcess {
  url: string;
  pid: number;
  child: ChildProcess;
  /** Resident set size in MiB (from /proc), or null when not readable. */
  rss(): number | null;
  stop(): Promise<void>;
}

export function rssMiB(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/**
 * Whether `script` in `cwd` must run under tsx: the service runs on Node's own type stripping
 * (as `npm start`) where its checkout's start script says so; other scripts and older
 * checkouts run under tsx.
 */
function needsTsx(script: string, cwd: string): boolean {
  if (script !== 'server/main.ts') return true;
  const pkg = JSON.parse(readFileSync(path.join(cwd, 'package.json'), 'utf8')) as { scripts?: { start?: string } };
  return (pkg.scripts?.start ?? '').includes('tsx');
}

/**
 * Spawns `node [--import tsx] <script>` with `env` (stdout and stderr to `logFile`), and
 * waits until `readyPath` answers over HTTP.
 */
export async function spawnNode(opts: { script: string; env: Record<string, string>; port: number; logFile: string; readyPath: string; timeoutMs?: number; nodeArgs?: string[]; cwd?: string }): Promise<NodeProcess> {
  const fd = openSync(opts.logFile, 'a');
  const cwd = opts.cwd ?? ROOT;
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), ...(needsTsx(opts.script, cwd) ? ['--import', 'tsx'] : []), opts.script], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...opts.env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const url = `http://127.0.0.1:${opts.port}`;
  let exited: number | null = null;
  child.once('exit', (code) => (exited = code ?? -1));
  const deadline = Date.now() + (opts.timeoutMs ?? 30_000);
  for (;;) {
    if (exited !== null) throw new Error(`${opts.script} exited with ${exited} during start-up; see ${opts.logFile}`);
    try {
      const res = await fetch(url + opts.readyPath, { signal: AbortSignal.timeout(1_000) });
      await res.arrayBuffer();
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`${opts.script} did not answer within ${opts.timeoutMs ?? 30_000} ms; see ${opts.logFile}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    pid: child.pid!,
    child,
    rss: () => rssMiB(child.pid!),
    async stop() {
      if (exited !== null) return;
      const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await done;
      clearTimeout(timer);
    },
  };
}

/** CPU time (user + system) a process has used so far, in ms (from /proc; clock ticks of 10 ms). */
export function cpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/** CPU time so far of each PostgreSQL backend serving `database` (process title `postgres: user database …`), in ms. */
export function postgresCpu(database: string): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (!title.startsWith('postgres: ') || !title.split(/[\s\0]+/).includes(database)) continue;
      const ms = cpuMs(Number(entry));
      if (ms !== null) out.set(Number(entry), ms);
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/** CPU the backends used between two snapshots (backends that exited meanwhile are missed; new ones count whole). */
export function postgresCpuDelta(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - Math.min(ms, before.get(pid) ?? 0);
  return total;
}

/** Samples a process's RSS every `everyMs` until stopped: peak and mean in MiB. */
export function sampleRss(pid: number, everyMs = 100) {
  const samples: number[] = [];
  const take = () => {
    const v = rssMiB(pid);
    if (v !== null) samples.push(v);
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop() {
      clearInterval(timer);
      take();
      return {
        peak: samples.length ? Math.max(...samples) : null,
        mean: samples.length ? samples.reduce((a, b) => a + b, 0) / samples.length : null,
        samples: samples.length,
      };
    },
  };
}

let nextIp = 0;
/** A fresh client address (the server trusts X-Forwarded-For in the bench): its own rate-limit buckets. */
export const freshIp = () => {
  nextIp++;
  return `10.${(nextIp >> 16) & 255}.${(nextIp >> 8) & 255}.${nextIp & 255}`;
};

export interface SignedIn {
  email: string;
  accountId: string;
  cookie: string;
  csrfToken: string;
  browser: Browser;
}

/** The real sign-in: service -> identity stand-in consent (as `user`) -> callback -> session. */
export async function signIn(serverUrl: string, webOrigin: string, identity: IdentityStandIn, user: { sub: string; email: string }, pool: pg.Pool): Promise<SignedIn> {
  identity.setCurrentUser(user);
  const browser = new Browser(serverUrl, webOrigin);
  const headers = { 'X-Forwarded-For': freshIp() };
  const start = await browser.fetch('/auth/provider', { headers });
  if (start.status !== 302) throw new Error(`GET /auth/provider answered ${start.status}`);
  const consent = await fetch(start.headers.get('location')!, { redirect: 'manual' });
  const callback = consent.headers.get('location');
  if (!callback) throw new Error(`consent answered ${consent.status}`);
  await (await browser.fetch(callback, { headers })).arrayBuffer();
  const session = (await (await browser.fetch('/auth/session', { headers })).json()) as { authenticated: boolean; csrfToken: string };
  if (!session.authenticated) throw new Error(`sign-in of ${user.email} did not authenticate`);
  const { rows } = await pool.query<{ id: string }>('/*bench*/ select id from accounts where sub = $1', [user.sub]);
  return { email: user.email, accountId: rows[0]!.id, cookie: browser.cookieHeader(), csrfToken: session.csrfToken, browser };
}

export { freePort };

export function machine() {
  const cpu = cpus();
  let commit = 'unknown';
  let dirty = false;
  try {
    const git = (args: string[]) => spawnSyncText('git', args).trim();
    commit = git(['rev-parse', '--short', 'HEAD']) || 'unknown';
    dirty = git(['status', '--porcelain', '--untracked-files=no']).length > 0;
  } catch {
    /* not a git checkout */
  }
  return {
    cpuModel: cpu[0]?.model.trim() ?? 'unknown',
    cores: cpu.length,
    memoryGiB: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    os: `${process.platform} ${release()}`,
    commit,
    dirty,
  };
}

function spawnSyncText(cmd: string, args: string[]): string {
  const r = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return r.stdout;
}
