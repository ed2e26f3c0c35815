/**
 * What a bench run measures against: its PostgreSQL, the identity, Gmail and Pub/Sub stand-ins
 * (Gmail's watch notifications forwarded into Pub/Sub while the notification phase asks for it), the
 * server and the bare handler as their own processes, and the list statement the floor runs.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { startGmailStandIn, type GmailStandIn } from '../../stand-ins/gmail.stand-in.ts';
import { startIdentityStandIn, type IdentityStandIn } from '../../stand-ins/identity.stand-in.ts';
import { startPubSubStandIn, type PubSubStandIn } from '../../stand-ins/pubsub.stand-in.ts';
import { identityEnv } from '../../stand-ins/stand-in-env.ts';
import { freePort, ROOT, spawnNode, startDatabase, type BenchDatabase, type NodeProcess } from '../infra.ts';
import type { ListStatement } from '../scenarios.ts';
import { forPg } from '../sql.ts';
import { args, settings, step, WEB_ORIGIN } from './bench.settings.ts';

/** A server's quota environment: the 2026 profile, the bench's window, `unitsPerWindow` per account (0: pacing off, calls only counted). */
export const quotaEnv = (unitsPerWindow: number): Record<string, string> => ({
  GMAIL_QUOTA_PROFILE: settings.quotaProfile,
  GMAIL_QUOTA_WINDOW_SECONDS: String(settings.quotaWindowSeconds),
  // Per window: the variable's minute, scaled down with GMAIL_QUOTA_WINDOW_SECONDS.
  GMAIL_USER_UNITS_PER_MINUTE: String(unitsPerWindow),
});

/** The bench server's credential for GET /metrics (METRICS_TOKEN; also its status-admin one). */
export const BENCH_ADMIN_TOKEN = 'bench-status-admin-token-0123456789';

export interface BenchWorld {
  db: BenchDatabase;
  identity: IdentityStandIn;
  gmail: GmailStandIn;
  pubsub: PubSubStandIn;
  subscription: string;
  server: NodeProcess;
  bare: NodeProcess;
  serverLog: string;
  serverRoot: string;
  listStatement: ListStatement;
  /** Starts another instance of the server: same configuration (plus `env`), database and subscription, its own port and log file (`server-<name>.log`). */
  startSecondServer(opts?: {
    name?: string;
    env?: Record<string, string>;
    nodeArgs?: string[];
  }): Promise<{ server: NodeProcess; logFile: string }>;
  /**
   * A database of its own in the same cluster (`<db>_<name>`, migrated by the first server started
   * on it) and a Pub/Sub topic and subscription of its own (`mail-<name>`): `env` puts a server
   * started with startSecondServer there, so that the main server takes none of its accounts' jobs.
   * Its `drop` ends the pool and drops the database (also pushed onto the run's cleanups).
   */
  isolated(name: string): Promise<IsolatedStore>;
  /** Starts the sync floor (bench/floor/sync-floor.server.ts) once; later calls return the same process. */
  startSyncFloor(): Promise<NodeProcess>;
  /** A Gmail stand-in access token for `email` that only the floor uses (the service's tokens stay the identity stand-in's). */
  floorToken(email: string): string;
  /** Starts (zeroing the count) or stops forwarding Gmail's notifications; returns how many were published. */
  setForwarding(on: boolean): () => number;
}

export interface IsolatedStore {
  pool: pg.Pool;
  env: Record<string, string>;
  drop(): Promise<void>;
}

/** Starts everything; each part's stop is pushed onto `cleanups` as soon as it runs. */
export async function startWorld(work: string, cleanups: (() => Promise<unknown>)[]): Promise<BenchWorld> {
  const db = await startDatabase({ url: args['database-url'] });
  cleanups.push(() => db.stop());
  step(
    `PostgreSQL ${db.version} (${args['database-url'] ? 'given' : 'embedded'}; pg_stat_statements ${db.statements ? 'on' : 'off'})`,
  );
  // The server applies the migrations when it starts (before it answers /health).

  const identity = await startIdentityStandIn();
  const floorTokens = new Map<string, string>();
  const gmail = await startGmailStandIn({
    authorize: (token) => floorTokens.get(token) ?? identity.accessTokenOwner(token)?.email ?? null,
  });
  // Pulls wait for messages as the real service's do (return_immediately=false), up to 5 s.
  const pubsub = await startPubSubStandIn({ projectId: 'bench-project', pullWaitMs: 5_000 });
  cleanups.push(() => Promise.all([identity.close(), gmail.close(), pubsub.close()]));
  pubsub.createTopic('mail');
  const subscription = pubsub.createSubscription('mail', 'mail-sync', { ackDeadlineSeconds: 30 });
  let forwarding = false;
  let published = 0;
  const setForwarding = (on: boolean) => {
    forwarding = on;
    if (on) published = 0;
    return () => published;
  };
  gmail.onNotification((n) => {
    if (!forwarding) return;
    published++;
    pubsub.publish(n.topicName, { emailAddress: n.emailAddress, historyId: String(n.historyId) });
  });

  const port = await freePort();
  const serverLog = path.join(work, 'server.log');
  const env: Record<string, string> = {
    NODE_ENV: settings.nodeEnv,
    PORT: String(port),
    HOST: '127.0.0.1',
    // Production refuses an http base URL: the service is described as served behind TLS, and
    // the OAuth redirect comes back to it directly.
    PUBLIC_BASE_URL: 'https://api.bench.example',
    GOOGLE_REDIRECT_URI: `http://127.0.0.1:${port}/auth/provider/callback`,
    WEB_ORIGIN,
    SESSION_SECRET: randomBytes(33).toString('base64url'),
    TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    DATABASE_URL: db.url,
    // The bench signs in and syncs many accounts from one machine: a client address per call.
    TRUST_PROXY: 'true',
    // The load run is one client: the global bucket must not refuse it.
    RATE_LIMIT_MAX: String(settings.rateLimitMax),
    RATE_LIMIT_WINDOW_SECONDS: '60',
    // The mixed load posts ~1,200 anonymous page_views a minute: the deployment's budget must not drop them.
    ANALYTICS_ANONYMOUS_PER_MINUTE: '1000000',
    // Google's 2026 quota, its per-user limit counted in a scaled-down window (bench.settings.ts):
    // every account is paced within it; the backfill and resync phases' stand-in enforces the same.
    ...quotaEnv(settings.quotaUnitsPerWindow),
    LOG_LEVEL: settings.logLevel,
    STATUS_ADMIN_TOKEN: BENCH_ADMIN_TOKEN,
    METRICS_TOKEN: BENCH_ADMIN_TOKEN,
    MIA_DATA_DIR: path.join(work, 'data'),
    ...identityEnv(identity),
    GMAIL_API_URL: gmail.url,
    PUBSUB_PROJECT_ID: 'bench-project',
    PUBSUB_TOPIC: 'projects/bench-project/topics/mail',
    PUBSUB_SUBSCRIPTION: 'mail-sync',
    PUBSUB_EMULATOR_HOST: pubsub.host,
    ...Object.fromEntries(
      (args['server-env']?.split(/\s+/).filter(Boolean) ?? []).map((kv) => [
        kv.slice(0, kv.indexOf('=')),
        kv.slice(kv.indexOf('=') + 1),
      ]),
    ),
  };
  step('starting the server and the bare handler');
  const serverRoot = path.resolve(args['server-root'] ?? ROOT);
  // Where the list's statement lives: the feature folders' place, else a checkout's from before them (d85a9c3).
  const threadServicePath = ['server/domain/mail/threads/thread.service.ts', 'server/domain/mail/thread.service.ts']
    .map((p) => path.join(serverRoot, p))
    .find((p) => existsSync(p));
  if (!threadServicePath) throw new Error(`no thread service in ${serverRoot}`);
  const threadService = (await import(threadServicePath)) as {
    LIST_THREADS?: { text: string };
    /** Checkouts before the list became a prepared statement: the SQL with `?` placeholders. */
    LIST_THREADS_SQL?: string;
    listThreadsParams: ListStatement['params'];
  };
  const ormConfig = (await import(path.join(serverRoot, 'db/mikro-orm.config.ts'))) as {
    ormOptions(url: string): { driverOptions?: { options?: string } };
  };
  const startupOptions = ormConfig.ormOptions(db.url).driverOptions?.options ?? '';
  const listStatement: ListStatement = {
    sql: threadService.LIST_THREADS?.text ?? forPg(threadService.LIST_THREADS_SQL!),
    params: threadService.listThreadsParams,
    settings: [...startupOptions.matchAll(/-c\s*([\w.]+)=(\S+)/g)].map((m) => [m[1]!, m[2]!]),
  };
  const nodeArgs = args.profile ? ['--cpu-prof', `--cpu-prof-dir=${path.join(work, 'profiles')}`] : [];
  const serverNodeArgs = args['server-node-args']?.split(/\s+/).filter(Boolean) ?? [];
  const barePort = await freePort();
  const started = await Promise.allSettled([
    spawnNode({
      script: 'server/main.ts',
      env,
      port,
      logFile: serverLog,
      readyPath: '/health',
      nodeArgs: [...nodeArgs, ...serverNodeArgs],
      cwd: serverRoot,
    }),
    spawnNode({
      script: 'bench/bare-server.ts',
      env: { DATABASE_URL: db.url, PORT: String(barePort) },
      port: barePort,
      logFile: path.join(work, 'bare.log'),
      readyPath: '/health',
      nodeArgs,
      cwd: serverRoot,
    }),
  ]);
  for (const s of started) if (s.status === 'fulfilled') cleanups.push(() => s.value.stop());
  const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected');
  if (failed) throw failed.reason;
  const [server, bare] = started.map((s) => (s as PromiseFulfilledResult<NodeProcess>).value) as [
    NodeProcess,
    NodeProcess,
  ];

  const startSecondServer = async (opts: { name?: string; env?: Record<string, string>; nodeArgs?: string[] } = {}) => {
    const secondPort = await freePort();
    const logFile = path.join(work, `server-${opts.name ?? '2'}.log`);
    // Its own OAuth callback: a sign-in through it ends on it (and in its DATABASE_URL, when given one).
    const own = { GOOGLE_REDIRECT_URI: `http://127.0.0.1:${secondPort}/auth/provider/callback` };
    const second = await spawnNode({
      script: 'server/main.ts',
      env: { ...env, ...own, ...opts.env, PORT: String(secondPort) },
      port: secondPort,
      logFile,
      readyPath: '/health',
      nodeArgs: [...nodeArgs, ...serverNodeArgs, ...(opts.nodeArgs ?? [])],
      cwd: serverRoot,
    });
    cleanups.push(() => second.stop());
    return { server: second, logFile };
  };

  const isolated = async (name: string): Promise<IsolatedStore> => {
    const database = `${db.name}_${name}`;
    await db.pool.query(`create database "${database}"`);
    const url = new URL(db.url);
    url.pathname = `/${database}`;
    const pool = new pg.Pool({ connectionString: url.toString(), max: 3 });
    pool.on('error', () => undefined);
    pubsub.createTopic(`mail-${name}`);
    pubsub.createSubscription(`mail-${name}`, `mail-${name}`, { ackDeadlineSeconds: 30 });
    let dropped = false;
    const drop = async () => {
      if (dropped) return;
      dropped = true;
      await pool.end();
      await db.pool.query(`drop database if exists "${database}" with (force)`);
    };
    cleanups.push(drop);
    return {
      pool,
      env: {
        DATABASE_URL: url.toString(),
        PUBSUB_TOPIC: `projects/bench-project/topics/mail-${name}`,
        PUBSUB_SUBSCRIPTION: `mail-${name}`,
      },
      drop,
    };
  };

  let floor: Promise<NodeProcess> | undefined;
  const startSyncFloor = () =>
    (floor ??= freePort().then(async (floorPort) => {
      const p = await spawnNode({
        script: 'bench/floor/sync-floor.server.ts',
        env: { DATABASE_URL: db.url, PORT: String(floorPort), GMAIL_API_URL: gmail.url },
        port: floorPort,
        logFile: path.join(work, 'sync-floor.log'),
        readyPath: '/health',
        nodeArgs,
      });
      cleanups.push(() => p.stop());
      return p;
    }));
  const floorToken = (email: string) => {
    const token = `floor-${randomBytes(12).toString('hex')}`;
    floorTokens.set(token, email);
    return token;
  };

  return {
    db,
    identity,
    gmail,
    pubsub,
    subscription,
    server,
    bare,
    serverLog,
    serverRoot,
    listStatement,
    setForwarding,
    startSecondServer,
    isolated,
    startSyncFloor,
    floorToken,
  };
}
