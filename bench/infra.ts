/**
 * The benchmark's moving parts: its own embedded PostgreSQL (with pg_stat_statements, to
 * count the statements the server sends), server processes spawned with `node` (its own type
 * stripping; the service's own entry point, and the bare Koa floor), their resident memory, and the
 * real sign-in through the identity stand-in.
 */
import { spawnSync } from 'node:child_process';
import { cpus, totalmem, release } from 'node:os';
import type pg from 'pg';
import { freePort } from '../server/infra/database.ts';
import type { IdentityStandIn } from '../stand-ins/identity.stand-in.ts';
import { Browser } from '../harness/browser.ts';
import { ROOT } from './infra/process.infra.ts';

export * from './infra/database.infra.ts';
export * from './infra/process.infra.ts';

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

/**
 * The real sign-in: service -> identity stand-in consent (as `user`) -> callback -> session;
 * returns once the sign-in's background sync is done. `whileSyncing`, when given, is handed the
 * signed-in session before that wait (the user can list and open threads during the backfill).
 */
export async function signIn(
  serverUrl: string,
  webOrigin: string,
  identity: IdentityStandIn,
  user: { sub: string; email: string },
  pool: pg.Pool,
  syncTimeoutMs?: number,
  whileSyncing?: (session: SignedIn) => void,
): Promise<SignedIn> {
  identity.setCurrentUser(user);
  const browser = new Browser(serverUrl, webOrigin);
  const headers = { 'X-Forwarded-For': freshIp() };
  const start = await browser.fetch('/auth/provider', { headers });
  if (start.status !== 302) throw new Error(`GET /auth/provider answered ${start.status}`);
  const consent = await fetch(start.headers.get('location')!, { redirect: 'manual' });
  const callback = consent.headers.get('location');
  if (!callback) throw new Error(`consent answered ${consent.status}`);
  await (await browser.fetch(callback, { headers })).arrayBuffer();
  const session = (await (await browser.fetch('/auth/session', { headers })).json()) as {
    authenticated: boolean;
    csrfToken: string;
  };
  if (!session.authenticated) throw new Error(`sign-in of ${user.email} did not authenticate`);
  const { rows } = await pool.query<{ id: string }>('/*bench*/ select id from accounts where sub = $1', [user.sub]);
  const signedIn: SignedIn = {
    email: user.email,
    accountId: rows[0]!.id,
    cookie: browser.cookieHeader(),
    csrfToken: session.csrfToken,
    browser,
  };
  whileSyncing?.(signedIn);
  await backgroundSyncDone(pool, signedIn.accountId, syncTimeoutMs);
  return signedIn;
}

/**
 * Waits (bounded) until the account's background sync (the sign-in's backfill) is done — no
 * job waiting or running, no lease — so a scenario's own syncs meet no competitor. A server
 * without the job engine (an older --server-root) has no pgboss schema: nothing to wait for.
 */
export async function backgroundSyncDone(pool: pg.Pool, accountId: string, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let busy: boolean;
    try {
      const { rows } = await pool.query<{ busy: boolean }>(
        `/*bench*/ select exists (select 1 from pgboss.job where name = 'mail-sync' and state in ('created', 'retry', 'active') and singleton_key = $1)
            or exists (select 1 from sync_states where account_id = $1::uuid and lease_owner is not null) as busy`,
        [accountId],
      );
      busy = rows[0]!.busy;
    } catch {
      return;
    }
    if (!busy) return;
    if (Date.now() > deadline) throw new Error(`the background sync of account ${accountId} did not finish`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Waits (bounded) until the account's window in the service's quota ledger (`mail_quota_grants`,
 * the window plus the pacer's allowance, taken as a second) has room for `units` more under
 * `limit`: a measured call then meets no pacing wait left by the calls before it. A server
 * without the ledger (an older --server-root) has nothing to wait for.
 */
export async function quotaRoom(
  pool: pg.Pool,
  accountId: string,
  units: number,
  quota: { unitsPerWindow: number; windowMs: number },
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    let used: number;
    try {
      const { rows } = await pool.query<{ used: string }>(
        `/*bench*/ select coalesce(sum(units), 0) as used from mail_quota_grants where account_id = $1::uuid and granted_at > clock_timestamp() - make_interval(secs => $2)`,
        [accountId, quota.windowMs / 1000 + 1],
      );
      used = Number(rows[0]!.used);
    } catch {
      return;
    }
    if (used + units <= quota.unitsPerWindow || Date.now() > deadline) return;
    await new Promise((r) => setTimeout(r, 200));
  }
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
