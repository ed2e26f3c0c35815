/**
 * Resilience harness: the service run the way an operator runs it — `node server/main.ts`
 * (Node's own type stripping, as `npm start` does) as a child process, configured by
 * environment only — on a PostgreSQL cluster of its own that can be stopped and started
 * again on the same port, with the stand-in providers living in the test process.
 *
 * Also used by bench/load/mixed.ts. Not a test file (no `.test.ts`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { freePort, openDatabase, startEmbeddedPostgres, type EmbeddedDatabase } from '../../../server/infra/database.ts';
import { Browser } from '../../helpers/browser.ts';
import { startGmailStandIn, type GmailStandIn } from '../../../stand-ins/gmail.stand-in.ts';
import { startIdentityStandIn, type IdentityStandIn, type StandInUser } from '../../../stand-ins/identity.stand-in.ts';
import { startOpenAIStandIn, type OpenAIStandIn } from '../../../stand-ins/openai.stand-in.ts';
import { startPubSubStandIn, type PubSubStandIn } from '../../../stand-ins/pubsub.stand-in.ts';
import { identityEnv } from '../../../stand-ins/stand-in-env.ts';

export const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const WEB_ORIGIN = 'http://web.test:5173';
export const ADMIN_TOKEN = 'resilience-admin-token-0123456789';
export const TOPIC = 'projects/test-project/topics/mail';
export const SUBSCRIPTION = 'mail-sync';

interface Cleanup {
  after(fn: () => unknown): void;
}

// ------------------------------------------------------------------ PostgreSQL cluster

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
export async function sql<T = Record<string, unknown>>(url: string, text: string, params: unknown[] = []): Promise<T[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(text, params)).rows as T[];
  } finally {
    await c.end();
  }
}

// ------------------------------------------------------------------ stand-in providers

export interface StandIns {
  identity: IdentityStandIn;
  gmail: GmailStandIn;
  openai: OpenAIStandIn;
  pubsub: PubSubStandIn;
  /** Service environment pointing at the stand-ins. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startStandIns(opts: { users?: StandInUser[]; ackDeadlineSeconds?: number; openaiLatencyMs?: number } = {}): Promise<StandIns> {
  const identity = await startIdentityStandIn({ users: opts.users });
  const gmail = await startGmailStandIn({ authorize: (token) => identity.accessTokenOwner(token)?.email ?? null });
  const openai = await startOpenAIStandIn({ latencyMs: opts.openaiLatencyMs });
  const pubsub = await startPubSubStandIn({ projectId: 'test-project' });
  pubsub.createTopic('mail');
  pubsub.createSubscription('mail', SUBSCRIPTION, { ackDeadlineSeconds: opts.ackDeadlineSeconds ?? 10 });
  // The mail provider publishes its change notifications to the watch topic.
  gmail.onNotification((n) => {
    try {
      pubsub.publish(n.topicName, { emailAddress: n.emailAddress, historyId: String(n.historyId) });
    } catch {
      /* the stand-in may be closing */
    }
  });
  let closed = false;
  return {
    identity,
    gmail,
    openai,
    pubsub,
    env: {
      ...identityEnv(identity),
      GMAIL_API_URL: gmail.url,
      GMAIL_QUOTA_UNITS_PER_SECOND: '0',
      OPENAI_API_KEY: openai.apiKey,
      OPENAI_BASE_URL: openai.baseUrl,
      PUBSUB_PROJECT_ID: 'test-project',
      PUBSUB_TOPIC: TOPIC,
      PUBSUB_SUBSCRIPTION: SUBSCRIPTION,
      PUBSUB_EMULATOR_HOST: pubsub.host,
    },
    async close() {
      if (closed) return;
      closed = true;
      // Some may have been closed already by a test (a provider refusing connections).
      await Promise.allSettled([identity.close(), gmail.close(), openai.close(), pubsub.close()]);
    },
  };
}

// ------------------------------------------------------------------ the service process

export type LogLine = Record<string, unknown> & { level?: string; msg?: string };

export interface ServiceProcess {
  readonly name: string;
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  readonly child: ChildProcess;
  /** Parsed JSON log lines (stdout), in order. */
  readonly logs: LogLine[];
  /** Every log line counted by `level msg`. */
  readonly logCounts: Map<string, number>;
  /** Non-JSON output (stderr and stray stdout). */
  readonly stderr: string[];
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly alive: boolean;
  browser(): Browser;
  /** Resolves with the first log line (already written or future) matching `pred`. */
  waitForLog(pred: (l: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (graceful stop), then waits for the exit; SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resident set size of the process, from /proc (bytes). */
  rss(): Promise<number>;
  /** CPU time the process has used so far (user + system), from /proc (seconds). */
  cpuSeconds(): Promise<number>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** Environment every instance shares (the secrets must match for two instances to share sessions). */
export function sharedSecrets(): Record<string, string> {
  return {
    SESSION_SECRET: randomBytes(24).toString('base64url'),
    TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    STATUS_ADMIN_TOKEN: ADMIN_TOKEN,
    WEB_ORIGIN,
  };
}

export async function startService(
  t: Cleanup | null,
  opts: {
    databaseUrl: string;
    env: Record<string, string>;
    name?: string;
    port?: number;
    startTimeoutMs?: number;
    nodeArgs?: string[];
    /** Which parsed log lines to keep in `logs` (default all); `logCounts` counts every line by level and message. */
    keepLog?: (l: LogLine) => boolean;
    /** Called with every output line that is not a JSON log line (then not kept in `stderr`). */
    onOutput?: (line: string) => void;
  },
): Promise<ServiceProcess> {
  const port = opts.port ?? (await freePort());
  const name = opts.name ?? `svc-${port}`;
  const dataDir = await mkdtemp(path.join(tmpdir(), 'mia-svc-'));
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), 'server/main.ts'], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      MIA_DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: 'info',
      ...opts.env,
      DATABASE_URL: opts.databaseUrl,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const logs: LogLine[] = [];
  const logCounts = new Map<string, number>();
  const stderr: string[] = [];
  const waiters = new Set<{ pred: (l: LogLine) => boolean; resolve: (l: LogLine) => void }>();
  let alive = true;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      alive = false;
      live.delete(child);
      resolve({ code, signal });
    });
  });
  void exited.then(() => rm(dataDir, { recursive: true, force: true }));
  const lines = (stream: NodeJS.ReadableStream, onLine: (line: string) => void) => {
    let buf = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      buf += chunk;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.trim()) onLine(line);
      }
    });
  };
  lines(child.stdout!, (line) => {
    let parsed: LogLine;
    try {
      parsed = JSON.parse(line);
    } catch {
      if (opts.onOutput) opts.onOutput(line);
      else stderr.push(line);
      return;
    }
    const key = `${parsed.level} ${parsed.msg}`;
    logCounts.set(key, (logCounts.get(key) ?? 0) + 1);
    if (!opts.keepLog || opts.keepLog(parsed) || String(parsed.msg).startsWith('listening on ')) logs.push(parsed);
    for (const w of [...waiters]) {
      if (w.pred(parsed)) {
        waiters.delete(w);
        w.resolve(parsed);
      }
    }
  });
  lines(child.stderr!, (line) => stderr.push(line));

  const waitForLog = (pred: (l: LogLine) => boolean, timeoutMs = 30_000) => {
    const seen = logs.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise<LogLine>((resolve, reject) => {
      const w = {
        pred,
        resolve: (l: LogLine) => {
          clearTimeout(timer);
          resolve(l);
        },
      };
      const timer = setTimeout(() => {
        waiters.delete(w);
        reject(new Error(`${name}: no matching log line within ${timeoutMs} ms (alive: ${alive}; stderr: ${stderr.slice(-5).join(' | ')})`));
      }, timeoutMs);
      waiters.add(w);
      void exited.then(() => {
        if (!waiters.has(w)) return;
        waiters.delete(w);
        clearTimeout(timer);
        reject(new Error(`${name} exited before the expected log line; stderr: ${stderr.slice(-10).join(' | ')}`));
      });
    });
  };

  const url = `http://127.0.0.1:${port}`;
  const proc: ServiceProcess = {
    name,
    url,
    port,
    pid: child.pid!,
    child,
    logs,
    logCounts,
    stderr,
    exited,
    get alive() {
      return alive;
    },
    browser: () => new Browser(url, WEB_ORIGIN),
    waitForLog,
    async kill() {
      if (alive) child.kill('SIGKILL');
      await exited;
    },
    async stop(graceMs = 15_000) {
      if (alive) child.kill('SIGTERM');
      const timer = setTimeout(() => alive && child.kill('SIGKILL'), graceMs);
      const r = await exited;
      clearTimeout(timer);
      return r;
    },
    async rss() {
      const { readFile } = await import('node:fs/promises');
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1] ?? NaN);
      return kb * 1024;
    },
    async cpuSeconds() {
      const { readFile } = await import('node:fs/promises');
      const fields = (await readFile(`/proc/${child.pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
      return (Number(fields[11]) + Number(fields[12])) / 100;
    },
  };
  t?.after(() => proc.kill());
  await waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('listening on '), opts.startTimeoutMs ?? 60_000);
  return proc;
}

// ------------------------------------------------------------------ clients

/** Signs `browser` in through the real redirect flow as the identity stand-in's current user. */
export async function signIn(browser: Browser, init: RequestInit = {}): Promise<{ csrfToken: string; email: string }> {
  const start = await browser.fetch('/auth/provider', init);
  if (start.status !== 302) throw new Error(`GET /auth/provider answered ${start.status}: ${await start.text()}`);
  const consent = await fetch(start.headers.get('location')!, { redirect: 'manual' });
  const callback = consent.headers.get('location');
  if (!callback) throw new Error(`consent answered ${consent.status}`);
  const done = await browser.fetch(callback, init);
  if (!/connected=1/.test(done.headers.get('location') ?? '')) throw new Error(`callback redirected to ${done.headers.get('location')}`);
  const session = await (await browser.fetch('/auth/session', init)).json();
  if (!session.authenticated) throw new Error('sign-in did not authenticate');
  return { csrfToken: session.csrfToken, email: session.email };
}

export function csrf(csrfToken: string, extra: Record<string, string> = {}): Record<string, string> {
  return { 'X-CSRF-Token': csrfToken, Origin: WEB_ORIGIN, ...extra };
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits (bounded) until no background sync of the account runs or waits: no pg-boss job, no lease. */
export async function waitSyncIdle(databaseUrl: string, email: string, timeoutMs = 30_000): Promise<void> {
  const idle = await eventually(async () => {
    const [row] = await sql<{ jobs: number; leased: boolean }>(
      databaseUrl,
      `select (select count(*)::int from pgboss.job j where j.name = 'mail-sync' and j.state in ('created', 'retry', 'active') and j.singleton_key = a.id::text) as jobs,
              coalesce((select s.lease_owner is not null from sync_states s where s.account_id = a.id), false) as leased
         from accounts a where a.email = $1`,
      [email],
    );
    return row !== undefined && row.jobs === 0 && !row.leased;
  }, timeoutMs, 100);
  if (!idle) throw new Error(`the background sync of ${email} did not finish`);
}

/**
 * Runs the sync route until it has nothing more to list. Sign-in and new mail queue background
 * syncs, so the route may find the account's lease held (429 RATE_LIMITED with quota left):
 * then this waits for the background sync to finish and asks again.
 */
export async function syncToEnd(browser: Browser, csrfToken: string, idle: () => Promise<void>): Promise<void> {
  for (let i = 0; i < 20; i++) {
    const res = await browser.fetch('/api/mail/sync', { method: 'POST', headers: csrf(csrfToken) });
    const body = await res.json();
    if (res.status === 200 && !body.hasMore) return;
    if (res.status === 200) continue;
    if (res.status === 429 && body.error?.code === 'RATE_LIMITED' && res.headers.get('ratelimit-remaining') !== '0') await idle();
    else throw new Error(`sync answered ${res.status} ${JSON.stringify(body)}`);
  }
  throw new Error('the sync did not finish in 20 calls');
}

/** Polls `fn` until it returns a truthy value or `timeoutMs` passes (then returns the last value). */
export async function eventually<T>(fn: () => Promise<T>, timeoutMs: number, everyMs = 200): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T;
  for (;;) {
    try {
      last = await fn();
    } catch (err) {
      if (Date.now() >= deadline) throw err;
      await sleep(everyMs);
      continue;
    }
    if (last || Date.now() >= deadline) return last;
    await sleep(everyMs);
  }
}

export const user = (n: number | string): StandInUser => ({ sub: `user-${n}`, email: `user${n}@example.com`, email_verified: true });
export const uuid = () => randomUUID();

// ------------------------------------------------------------------ a switchable TCP proxy

export type ProxyMode = 'forward' | 'hang' | 'garbage' | 'refuse';

export interface TcpProxy {
  readonly host: string;
  readonly port: number;
  /** Drops every open connection, then treats new ones the new way ('refuse' stops listening: ECONNREFUSED). */
  setMode(mode: ProxyMode): Promise<void>;
  close(): Promise<void>;
}

/**
 * A TCP proxy in front of `target` that can forward, accept and never answer (a provider
 * that times out), answer bytes that are no protocol at all, or refuse connections.
 */
export async function startTcpProxy(target: { host: string; port: number }): Promise<TcpProxy> {
  const net = await import('node:net');
  let mode: ProxyMode = 'forward';
  const sockets = new Set<import('node:net').Socket>();
  const track = (s: import('node:net').Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  const server = net.createServer((client) => {
    track(client);
    if (mode === 'hang') return;
    if (mode === 'garbage') {
      client.end('HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/html\r\n\r\n<html>upstream hiccup</html>\x00\xff\xfe');
      return;
    }
    const upstream = net.connect(target.port, target.host);
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    upstream.on('close', () => client.destroy());
    client.on('close', () => upstream.destroy());
  });
  const listen = (port: number) => new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  await listen(0);
  const port = (server.address() as { port: number }).port;
  return {
    host: `127.0.0.1:${port}`,
    port,
    async setMode(next) {
      const wasListening = server.listening;
      mode = next;
      for (const s of sockets) s.destroy();
      if (next === 'refuse' && wasListening) await new Promise<void>((r) => server.close(() => r()));
      if (next !== 'refuse' && !wasListening) await listen(port);
    },
    async close() {
      for (const s of sockets) s.destroy();
      if (server.listening) await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
