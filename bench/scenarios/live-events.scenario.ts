/**
 * Live events (issue 30), against a server's GET /api/mail/events: the memory an idle open
 * stream costs the server (resident set and retained heap with N streams open, next to none),
 * and end-to-end freshness: from the provider storing a change (the Gmail stand-in's
 * `addMessage`, whose watch notifies Pub/Sub) to the `threads` event arriving on the account's
 * open stream, through intake, job, sync, pg_notify and the hub; p50/p99 at a fixed rate over
 * many accounts with one stream each, and the server's CPU per event it delivered.
 */
import http from 'node:http';
import type { GmailStandIn } from '../../stand-ins/gmail.stand-in.ts';

export interface MemoryReading {
  rss: number;
  heapUsed: number;
}

export interface LiveEventsResult {
  memory: {
    streams: number;
    sessions: number;
    openMs: number;
    before: MemoryReading;
    after: MemoryReading;
    rssPerStreamBytes: number;
    heapPerStreamBytes: number;
  } | null;
  freshness: {
    accounts: number;
    perSecond: number;
    seconds: number;
    changes: number;
    delivered: number;
    p50Ms: number | null;
    p99Ms: number | null;
    maxMs: number | null;
    /** Events the clients received during the phase (all types), and `threads` ones. */
    events: number;
    threadsEvents: number;
    cpuMs: Record<string, number>;
  } | null;
}

interface Stream {
  close(): void;
  listen(fn: (type: string, at: number) => void): void;
}

// One socket per stream, as browsers each hold theirs.
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });

/** Opens a stream; resolves at its first event (the `sync` it starts with). */
function openStream(url: string, cookie: string): Promise<Stream> {
  return new Promise((resolve, reject) => {
    let listener: ((type: string, at: number) => void) | undefined;
    const req = http.get(
      `${url}/api/mail/events`,
      { agent, headers: { Cookie: cookie, Accept: 'text/event-stream' } },
      (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`GET /api/mail/events answered ${res.statusCode}`));
          return;
        }
        res.setEncoding('utf8');
        let buffer = '';
        let opened = false;
        res.on('data', (chunk: string) => {
          const at = Date.now();
          buffer += chunk;
          let i: number;
          while ((i = buffer.indexOf('\n\n')) >= 0) {
            const type = /^event: (\w+)$/m.exec(buffer.slice(0, i))?.[1];
            buffer = buffer.slice(i + 2);
            if (!type) continue;
            if (!opened) {
              opened = true;
              resolve({ close: () => req.destroy(), listen: (fn) => (listener = fn) });
            }
            listener?.(type, at);
          }
        });
        res.on('error', () => undefined);
      },
    );
    req.on('error', (err) => reject(err));
  });
}

/** Opens one stream per cookie, `parallel` at a time. */
async function openAll(url: string, cookies: string[], parallel = 50): Promise<Stream[]> {
  const out: Stream[] = new Array(cookies.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(parallel, cookies.length) }, async () => {
      while (next < cookies.length) {
        const i = next++;
        out[i] = await openStream(url, cookies[i]!);
      }
    }),
  );
  return out;
}

/** The server's memory with `streamsPerSession` idle streams for each session, next to none; the streams are closed after. */
export async function idleStreamMemory(opts: {
  url: string;
  sessions: string[];
  streams: number;
  read: () => Promise<MemoryReading>;
}): Promise<NonNullable<LiveEventsResult['memory']>> {
  const cookies = Array.from({ length: opts.streams }, (_, i) => opts.sessions[i % opts.sessions.length]!);
  const before = await opts.read();
  const t0 = performance.now();
  const streams = await openAll(opts.url, cookies);
  const openMs = performance.now() - t0;
  const after = await opts.read();
  for (const s of streams) s.close();
  const per = (k: keyof MemoryReading) => Math.round((after[k] - before[k]) / opts.streams);
  return {
    streams: opts.streams,
    sessions: opts.sessions.length,
    openMs,
    before,
    after,
    rssPerStreamBytes: per('rss'),
    heapPerStreamBytes: per('heapUsed'),
  };
}

const quantile = (sorted: number[], q: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]! : null;

/** Changes at `perSecond` for `seconds`, round-robin over the accounts, each timed to the `threads` event on that account's stream. */
export async function streamFreshness(opts: {
  url: string;
  accounts: { email: string; cookie: string }[];
  gmail: GmailStandIn;
  perSecond: number;
  seconds: number;
  timeoutMs: number;
  cpu: () => Record<string, number>;
}): Promise<NonNullable<LiveEventsResult['freshness']>> {
  const { accounts, gmail } = opts;
  const streams = await openAll(
    opts.url,
    accounts.map((a) => a.cookie),
  );
  const pending = new Map<string, number[]>();
  const delays: number[] = [];
  let events = 0;
  let threadsEvents = 0;
  let left = 0;
  let changing = true;
  let allDelivered: () => void = () => undefined;
  const delivered = new Promise<void>((resolve) => (allDelivered = resolve));
  streams.forEach((s, i) => {
    const email = accounts[i]!.email;
    s.listen((type, at) => {
      events++;
      if (type !== 'threads') return;
      threadsEvents++;
      const queue = pending.get(email) ?? [];
      // The event was sent after the sync that stored every change made before it committed.
      while (queue.length && queue[0]! <= at) {
        delays.push(at - queue.shift()!);
        if (--left === 0 && changing === false) allDelivered();
      }
    });
  });
  const cpuBefore = opts.cpu();
  const total = Math.round(opts.perSecond * opts.seconds);
  const t0 = Date.now();
  for (let i = 0; i < total; i++) {
    const wait = t0 + (i * 1000) / opts.perSecond - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const email = accounts[i % accounts.length]!.email;
    gmail.addMessage(email, { subject: `live ${i}` });
    left++;
    pending.set(email, [...(pending.get(email) ?? []), Date.now()]);
  }
  changing = false;
  if (left === 0) allDelivered();
  const timeout = new Promise<void>((r) => setTimeout(r, opts.timeoutMs).unref());
  await Promise.race([delivered, timeout]);
  const cpuAfter = opts.cpu();
  for (const s of streams) s.close();
  const sorted = delays.sort((a, b) => a - b);
  return {
    accounts: accounts.length,
    perSecond: opts.perSecond,
    seconds: opts.seconds,
    changes: total,
    delivered: sorted.length,
    p50Ms: quantile(sorted, 0.5),
    p99Ms: quantile(sorted, 0.99),
    maxMs: sorted.at(-1) ?? null,
    events,
    threadsEvents,
    cpuMs: Object.fromEntries(Object.entries(cpuAfter).map(([k, v]) => [k, Math.round(v - (cpuBefore[k] ?? 0))])),
  };
}

const kib = (b: number) => `${(b / 1024).toFixed(1)} KiB`;
const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
const ok = (b: boolean) => (b ? 'yes' : '**no**');

/** The Markdown of bench item 14. */

export function renderLiveEvents(r: LiveEventsResult): string[] {
  const out: string[] = ['## 14. Live events — GET /api/mail/events', ''];
  if (r.memory) {
    const m = r.memory;
    out.push(
      `Memory per idle open stream: ${m.streams} streams of ${m.sessions} sessions opened in ${(m.openMs / 1000).toFixed(1)} s, on a server of their own (full GC before each reading).`,
    );
    out.push('');
    out.push('| | none open | all open | per stream |');
    out.push('|---|---:|---:|---:|');
    out.push(`| resident set | ${mib(m.before.rss)} | ${mib(m.after.rss)} | ${kib(m.rssPerStreamBytes)} |`);
    out.push(`| heap used | ${mib(m.before.heapUsed)} | ${mib(m.after.heapUsed)} | ${kib(m.heapPerStreamBytes)} |`);
    out.push('');
    out.push(
      `Goal (issue 30): ≤ 32 KiB per stream at 10,000 streams: ${m.streams >= 10_000 ? ok(m.rssPerStreamBytes <= 32 * 1024) : `not judged at ${m.streams} streams`} (resident set).`,
    );
    out.push('');
  }
  if (r.freshness) {
    const f = r.freshness;
    const cpuRows = Object.entries(f.cpuMs)
      .map(([k, v]) => `${k} ${(v / Math.max(1, f.events)).toFixed(2)}`)
      .join(', ');
    out.push(
      `Freshness to the client: ${f.perSecond} changes/s for ${f.seconds} s over ${f.accounts} accounts, each with one open stream; from the provider storing the change to the \`threads\` event arriving on the account's stream (intake, job, sync, pg_notify, the hub, the socket).`,
    );
    out.push('');
    out.push(
      '| changes | delivered | p50 ms | p99 ms | max ms | events received (threads) | CPU ms per event received |',
    );
    out.push('|---:|---:|---:|---:|---:|---:|---|');
    out.push(
      `| ${f.changes} | ${f.delivered} | ${f.p50Ms ?? 'n/a'} | ${f.p99Ms ?? 'n/a'} | ${f.maxMs ?? 'n/a'} | ${f.events} (${f.threadsEvents}) | ${cpuRows} |`,
    );
    out.push('');
    out.push(
      `Goal (issue 30): p99 ≤ 1 s: ${ok(f.p99Ms != null && f.p99Ms <= 1000 && f.delivered === f.changes)}. The CPU per event covers everything that made it (the syncs included), not the fan-out alone; the server row is the instance that held the streams (the other shares the syncs).`,
    );
    out.push('');
  }
  return out;
}
