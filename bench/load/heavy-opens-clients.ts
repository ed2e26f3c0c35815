/**
 * The heavy opens' clients (issue 44; heavy-opens.scenario.ts), in a process of their own as
 * item 13's heavy clients are: every account's clients open a set of heavy threads never opened
 * before, all at once (10 per account: 40 at once for 4 accounts). An open refused with 503 and
 * a Retry-After is tried again after it, as a client would, until it is served or the window
 * ends; once every open of the set has ended, the next set begins, while the window lasts and
 * sets are left. At the window's end no open starts or is tried again; those in progress are
 * awaited (the server's work drains before the process exits).
 *
 *   HEAVY_OPENS='{"url":…,"accounts":[{"cookie":…,"sets":[[path,…],…]}],"until":<epoch ms>,"timeoutMs":300000}' node bench/load/heavy-opens-clients.ts
 *
 * Prints one JSON { attempts, opens, sets } when done: each request { account, set, ms, status,
 * bytes, retryAfter? } (status 0: failed or timed out), each open's outcome ('served', 'refused':
 * its last answer a 503, 'failed': another status) with its tries and time from its first try,
 * and each set's seconds.
 */
import { timed, type Send } from '../scenarios/heavy-thread.scenario.ts';

export interface HeavyOpensJob {
  url: string;
  accounts: { cookie: string; sets: string[][] }[];
  until: number;
  timeoutMs: number;
}

export interface HeavyOpensOutput {
  attempts: { account: number; set: number; ms: number; status: number; bytes: number; retryAfter?: number }[];
  opens: { account: number; set: number; outcome: 'served' | 'refused' | 'failed'; tries: number; ms: number }[];
  sets: { set: number; seconds: number }[];
}

const job = JSON.parse(process.env.HEAVY_OPENS ?? '{}') as HeavyOpensJob;
const out: HeavyOpensOutput = { attempts: [], opens: [], sets: [] };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const sender =
  (cookie: string): Send =>
  (path, init) => {
    const headers = new Headers(init.headers);
    headers.set('Cookie', cookie);
    return fetch(`${job.url}${path}`, { ...init, headers });
  };

/** One open: tried until served, or refused past the window's end. */
async function open(account: number, set: number, client: number, path: string): Promise<void> {
  const send = sender(job.accounts[account]!.cookie);
  const t0 = performance.now();
  for (let tries = 1; ; tries++) {
    const a = await timed(send, path, `10.32.${account}.${client + 1}`, job.timeoutMs);
    out.attempts.push({ account, set, ...a });
    const again = a.status === 503 && a.retryAfter !== undefined && Date.now() + a.retryAfter * 1000 < job.until;
    if (!again) {
      out.opens.push({
        account,
        set,
        outcome: a.status === 200 ? 'served' : a.status === 503 ? 'refused' : 'failed',
        tries,
        ms: performance.now() - t0,
      });
      return;
    }
    await sleep(a.retryAfter! * 1000);
  }
}

// The first set always: on a loaded machine this process can start after a short window ended.
const sets = Math.max(...job.accounts.map((a) => a.sets.length));
for (let set = 0; set < sets && (set === 0 || Date.now() < job.until); set++) {
  const t0 = performance.now();
  await Promise.all(
    job.accounts.flatMap((a, account) => (a.sets[set] ?? []).map((path, client) => open(account, set, client, path))),
  );
  out.sets.push({ set, seconds: Math.round((performance.now() - t0) / 100) / 10 });
}
process.stdout.write(JSON.stringify(out));
