/**
 * The mixed load's clients: the accounts they use (signed in, seeded and synced for real), one
 * address and a shuffled 50-request schedule each, and the sending of one scheduled request
 * with its outcome recorded as a sample.
 */
import { randomUUID } from 'node:crypto';
import { request, type Agent } from 'node:http';
import type { Browser } from '../../harness/browser.ts';
import { csrf, signIn } from '../../harness/client.ts';
import type { ServiceProcess } from '../../harness/service-process.ts';
import type { StandIns, user } from '../../harness/stand-ins.ts';
import { MIX, ROUTES, shuffled, type Account, type Route, type Sample } from './mixed-load.model.ts';

export interface Client {
  ip: string;
  account: Account;
  schedule: Route[];
  n: number;
}

/** Signs every user in after seeding its mailbox, waits for the sign-in's background sync to store it; returns the accounts with their threads. */
export async function signInAccounts(
  service: ServiceProcess,
  providers: StandIns,
  users: ReturnType<typeof user>[],
  seed: number,
): Promise<Account[]> {
  const gmail = providers.gmail;
  // Accounts: sign in, seed, sync to the end, remember the threads.
  const accounts: Account[] = [];
  for (const [i, u] of users.entries()) {
    providers.identity.setCurrentUser(u.email);
    gmail.seed(u.email, seed, { sentReplies: false });
    const b: Browser = service.browser();
    const ip = { 'X-Forwarded-For': `172.16.${i}.1` };
    const { csrfToken } = await signIn(b, { headers: ip });
    const threads = new Set(gmail.inbox(u.email).map((m) => m.threadId)).size;
    let list = { total: 0, threads: [] as { id: string }[] };
    for (let k = 0; k < 300 && list.total < threads; k++) {
      if (k) await new Promise((r) => setTimeout(r, 100));
      list = await (
        await b.fetch('/api/mail/threads?limit=100', { headers: { 'X-Forwarded-For': `172.17.${i}.${k % 250}` } })
      ).json();
    }
    if (list.total < threads)
      throw new Error(`the background sync of ${u.email} stored ${list.total} of ${threads} threads`);
    accounts.push({
      email: u.email,
      cookie: b.cookieHeader(),
      csrfToken,
      threads: list.threads.map((t: { id: string }) => t.id),
    });
  }
  return accounts;
}

export function makeClients(count: number, accounts: Account[]): Client[] {
  return Array.from({ length: count }, (_, i) => ({
    ip: `10.${100 + Math.floor(i / 62500)}.${Math.floor(i / 250) % 250}.${(i % 250) + 1}`,
    account: accounts[i % accounts.length]!,
    schedule: shuffled(
      ROUTES.flatMap((r) => Array<Route>(MIX[r]).fill(r)),
      i + 1,
    ),
    n: 0,
  }));
}

/** Sends clients' next requests to the service, recording each outcome in `samples`. */
export function createSender(url: URL, agent: Agent, now: () => number, requestTimeoutMs: number, samples: Sample[]) {
  let inflight = 0;
  const send = (client: Client): void => {
    const route = client.schedule[client.n++ % client.schedule.length]!;
    const acc = client.account;
    const headers: Record<string, string> = { 'X-Forwarded-For': client.ip };
    let method = 'GET';
    let p = '';
    let body: string | undefined;
    let key: string | undefined;
    switch (route) {
      case 'list':
        p = '/api/mail/threads?limit=20';
        break;
      case 'detail':
        p = `/api/mail/threads/${acc.threads[Math.floor(Math.random() * acc.threads.length)]}`;
        break;
      case 'session':
        p = '/auth/session';
        break;
      case 'health':
        p = '/health';
        break;
      case 'analytics':
        method = 'POST';
        p = '/api/analytics/event';
        key = randomUUID();
        body = JSON.stringify({ event: 'page_view', anonymousId: key, properties: { path: `/load/${key}` } });
        headers['Content-Type'] = 'application/json';
        break;
      case 'sync':
        method = 'POST';
        p = '/api/mail/sync';
        Object.assign(headers, csrf(acc.csrfToken));
        break;
      case 'analyze':
        method = 'POST';
        p = `/api/mail/threads/${acc.threads[Math.floor(Math.random() * Math.min(10, acc.threads.length))]}/analyze`;
        Object.assign(headers, csrf(acc.csrfToken));
        break;
    }
    if (route !== 'health' && route !== 'analytics') headers.Cookie = acc.cookie;
    if (body) headers['Content-Length'] = String(Buffer.byteLength(body));
    const t = now();
    inflight++;
    let done = false;
    const finish = (s: Omit<Sample, 't' | 'route' | 'ms' | 'key'>) => {
      if (done) return;
      done = true;
      inflight--;
      samples.push({ t, route, ms: now() - t, key, ...s });
    };
    const req = request({ host: url.hostname, port: url.port, method, path: p, headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (e) => finish({ status: 0, failure: e.message }));
      res.on('end', () => {
        const status = res.statusCode ?? 0;
        let code: string | undefined;
        if (status >= 400) {
          try {
            code = JSON.parse(Buffer.concat(chunks).toString('utf8'))?.error?.code;
          } catch {
            code = 'non-json';
          }
        } else if (route === 'list' && status === 200) {
          // Keep the account's thread pool current (new mail creates threads).
          try {
            const ids = (JSON.parse(Buffer.concat(chunks).toString('utf8')).threads as { id: string }[]).map(
              (x) => x.id,
            );
            acc.threads = [...new Set([...ids, ...acc.threads])].slice(0, 100);
          } catch {
            /* counted as ok; the pool stays */
          }
        }
        finish({ status, code, retryAfter: res.headers['retry-after'] !== undefined });
      });
    });
    req.setTimeout(requestTimeoutMs, () => {
      finish({ status: 0, failure: 'timeout' });
      req.destroy();
    });
    req.on('error', (e) => finish({ status: 0, failure: (e as NodeJS.ErrnoException).code ?? e.message }));
    req.end(body);
  };
  return { send, inflight: () => inflight };
}
