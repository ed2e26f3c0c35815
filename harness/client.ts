/**
 * What a browser does against a running service: sign in through the real redirect flow,
 * send the CSRF headers, run the sync route until the mailbox is listed, and wait until no
 * background sync of an account runs.
 */
import type { Browser } from './browser.ts';
import { sql } from './pg-cluster.ts';
import { WEB_ORIGIN } from './service-process.ts';
import { eventually } from './wait.ts';

/** Signs `browser` in through the real redirect flow as the identity stand-in's current user. */
export async function signIn(browser: Browser, init: RequestInit = {}): Promise<{ csrfToken: string; email: string }> {
  const start = await browser.fetch('/auth/provider', init);
  if (start.status !== 302) throw new Error(`GET /auth/provider answered ${start.status}: ${await start.text()}`);
  const consent = await fetch(start.headers.get('location')!, { redirect: 'manual' });
  const callback = consent.headers.get('location');
  if (!callback) throw new Error(`consent answered ${consent.status}`);
  const done = await browser.fetch(callback, init);
  if (!/connected=1/.test(done.headers.get('location') ?? ''))
    throw new Error(`callback redirected to ${done.headers.get('location')}`);
  const session = await (await browser.fetch('/auth/session', init)).json();
  if (!session.authenticated) throw new Error('sign-in did not authenticate');
  return { csrfToken: session.csrfToken, email: session.email };
}

export function csrf(csrfToken: string, extra: Record<string, string> = {}): Record<string, string> {
  return { 'X-CSRF-Token': csrfToken, Origin: WEB_ORIGIN, ...extra };
}

/** Waits (bounded) until no background sync of the account runs or waits: no pg-boss job, no lease. */
export async function waitSyncIdle(databaseUrl: string, email: string, timeoutMs = 30_000): Promise<void> {
  const idle = await eventually(
    async () => {
      const [row] = await sql<{ jobs: number; leased: boolean }>(
        databaseUrl,
        `select (select count(*)::int from pgboss.job j where j.name = 'mail-sync' and j.state in ('created', 'retry', 'active') and j.singleton_key = a.id::text) as jobs,
              coalesce((select s.lease_owner is not null from sync_states s where s.account_id = a.id), false) as leased
         from accounts a where a.email = $1`,
        [email],
      );
      return row !== undefined && row.jobs === 0 && !row.leased;
    },
    timeoutMs,
    100,
  );
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
    if (res.status === 429 && body.error?.code === 'RATE_LIMITED' && res.headers.get('ratelimit-remaining') !== '0')
      await idle();
    else throw new Error(`sync answered ${res.status} ${JSON.stringify(body)}`);
  }
  throw new Error('the sync did not finish in 20 calls');
}
