/**
 * Issue 31's row: one heavy thread (100 messages, each a text part, a big nested HTML part and
 * attachments) opened again and again by 10 clients, beside a normal user who lists their
 * inbox and opens one of their threads in a loop. Windows of the normal user alone (idle) and
 * with the heavy clients, interleaved: the server's event-loop delay (p99 and max, prom-client's
 * monitorEventLoopDelay read and reset through GET /metrics), its resident memory (peak), the
 * normal user's latency (p50, p99) and what the heavy opens answered. The heavy clients run in
 * a process of their own (bench/load/heavy-clients.ts), so that the normal user's client does
 * not wait behind their answers on the bench's own event loop.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import type { GmailStandIn } from '../../stand-ins/gmail.stand-in.ts';
import { ROOT, sampleRss, type NodeProcess, type SignedIn } from '../infra.ts';

export interface HeavyWindow {
  kind: 'idle' | 'heavy';
  seconds: number;
  loop: { p99Ms: number; maxMs: number };
  /** The same delay in a process beside the server that does nothing (bench/load/loop-canary.ts): the machine's floor. */
  idleProcessLoop: { p99Ms: number; maxMs: number };
  rssPeakMiB: number | null;
  normal: { requests: number; p50Ms: number | null; p99Ms: number | null; maxMs: number | null; non200: number };
  /** Heavy window only: opens of the heavy thread that finished, by status (0: failed or timed out). */
  heavy?: {
    opens: number;
    byStatus: Record<string, number>;
    p50Ms: number | null;
    maxMs: number | null;
    bytesMedian: number | null;
  };
}

export interface HeavyThreadResult {
  messages: number;
  htmlKiB: number;
  textKiB: number;
  attachments: number;
  clients: number;
  windows: HeavyWindow[];
  /** Normal user's p99, median of the heavy windows over the median of the idle ones (goal ≤ 2). */
  normalP99Ratio: number | null;
}

/** A nested HTML body of about `kib` KiB: blocks of nested divs and tables with text and links. */
export function heavyHtml(kib: number, seed: number): string {
  const block = (i: number) =>
    `<div class="b${i}"><div><div><table><tr><td><p>Paragraph ${seed}.${i}: <a href="https://example.com/${seed}/${i}">link</a> <b>bold</b> <i>and</i> some words to fill the line.</p></td></tr></table></div></div></div>\n`;
  const parts: string[] = ['<html><body>'];
  let size = 0;
  for (let i = 0; size < kib * 1024; i++) {
    const b = block(i);
    parts.push(b);
    size += b.length;
  }
  parts.push('</body></html>');
  return parts.join('');
}

/** The bodies of heavy threads, made once: many heavy threads (the heavy opens' row) share one copy of each in the stand-in. */
const bodies = new Map<string, string>();
const made = (key: string, make: () => string) => bodies.get(key) ?? bodies.set(key, make()).get(key)!;

/** Adds a heavy thread to `email`'s mailbox; its provider thread id. */
export function seedHeavyThread(
  gmail: GmailStandIn,
  email: string,
  opts: { messages: number; htmlKiB: number; textKiB: number; attachments: number },
): string {
  let threadId: string | undefined;
  const text = made(`text ${opts.textKiB}`, () =>
    'All work and no play makes a long message. '
      .repeat(Math.ceil((opts.textKiB * 1024) / 44))
      .slice(0, opts.textKiB * 1024),
  );
  for (let i = 0; i < opts.messages; i++) {
    const m = gmail.addMessage(email, {
      ...(threadId ? { threadId } : {}),
      subject: 'Heavy thread',
      bodyText: text,
      bodyHtml: made(`html ${opts.htmlKiB} ${i}`, () => heavyHtml(opts.htmlKiB, i)),
      attachments: Array.from({ length: opts.attachments }, (_, k) => ({
        filename: `file-${i}-${k}.pdf`,
        mimeType: 'application/pdf',
        size: 1_000_000 + k,
      })),
    });
    threadId ??= m.threadId;
  }
  return threadId!;
}

/** The nearest-rank quantile (null of none). */
export const rankQuantile = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]! : null;
};

/** A figure to one decimal (null stays null). */
export const round1 = (x: number | null) => (x === null ? null : Math.round(x * 10) / 10);

/** The normal user's requests of a window: how many, their latency quantiles, the answers other than 200. */
export function normalLatency(timings: { ms: number; status: number }[]): HeavyWindow['normal'] {
  const ms = timings.map((n) => n.ms);
  return {
    requests: timings.length,
    p50Ms: round1(rankQuantile(ms, 0.5)),
    p99Ms: round1(rankQuantile(ms, 0.99)),
    maxMs: round1(rankQuantile(ms, 1)),
    non200: timings.filter((n) => n.status !== 200).length,
  };
}

/** How a client sends a request to the server: the path, and the headers and signal to send with it. */
export type Send = (path: string, init: RequestInit) => Promise<Response>;

/** One request, read to its end and timed (status 0: it failed or timed out; a Retry-After as given). The heavy clients' processes use it too. */
export async function timed(
  send: Send,
  path: string,
  ip: string,
  timeoutMs: number,
): Promise<{ ms: number; status: number; bytes: number; retryAfter?: number }> {
  const t0 = performance.now();
  try {
    const res = await send(path, { headers: { 'X-Forwarded-For': ip }, signal: AbortSignal.timeout(timeoutMs) });
    const bytes = (await res.arrayBuffer()).byteLength;
    const retryAfter = res.headers.get('retry-after');
    return {
      ms: performance.now() - t0,
      status: res.status,
      bytes,
      ...(retryAfter === null ? {} : { retryAfter: Number(retryAfter) }),
    };
  } catch {
    return { ms: performance.now() - t0, status: 0, bytes: 0 };
  }
}

export async function heavyWindow(opts: {
  kind: 'idle' | 'heavy';
  seconds: number;
  server: NodeProcess;
  readLag(): Promise<{ p99Ms: number; maxMs: number }>;
  normal: { account: SignedIn; threadIds: string[] };
  heavy: { account: SignedIn; threadId: string; clients: number };
}): Promise<HeavyWindow> {
  const canary = await startCanary();
  await opts.readLag(); // resets the histogram
  const rss = sampleRss(opts.server.pid);
  const t0 = performance.now();
  const end = t0 + opts.seconds * 1000;
  const normal: { ms: number; status: number }[] = [];
  const heavy: { ms: number; status: number; bytes: number }[] = [];
  const send: Send = (path, init) => opts.normal.account.browser.fetch(path, init);
  const normalLoop = async () => {
    for (let i = 0; performance.now() < end; i++) {
      normal.push(await timed(send, '/api/mail/threads?limit=50', '10.31.0.1', 30_000));
      const id = opts.normal.threadIds[i % opts.normal.threadIds.length]!;
      normal.push(await timed(send, `/api/mail/threads/${id}`, '10.31.0.1', 30_000));
    }
  };
  const heavyClients = async () => {
    const { account, threadId, clients } = opts.heavy;
    const job = {
      url: account.browser.baseUrl,
      cookie: account.browser.cookieHeader(),
      path: `/api/mail/threads/${threadId}`,
      clients,
      until: Date.now() + (end - performance.now()),
      timeoutMs: 120_000,
    };
    heavy.push(
      ...(await benchChild<typeof heavy>('bench/load/heavy-clients.ts', { HEAVY: JSON.stringify(job) }).result()),
    );
  };
  await Promise.all([normalLoop(), ...(opts.kind === 'heavy' ? [heavyClients()] : [])]);
  const seconds = Math.round((performance.now() - t0) / 100) / 10;
  await new Promise((r) => setTimeout(r, 30)); // the monitor's next timer records the last turn
  const loop = await opts.readLag();
  const idleProcessLoop = await canary.stop();
  const mem = rss.stop();
  const byStatus: Record<string, number> = {};
  for (const h of heavy) byStatus[h.status] = (byStatus[h.status] ?? 0) + 1;
  return {
    kind: opts.kind,
    seconds,
    loop,
    idleProcessLoop,
    rssPeakMiB: mem.peak === null ? null : Math.round(mem.peak),
    normal: normalLatency(normal),
    ...(opts.kind === 'heavy'
      ? {
          heavy: {
            opens: heavy.length,
            byStatus,
            p50Ms: round1(
              rankQuantile(
                heavy.map((h) => h.ms),
                0.5,
              ),
            ),
            maxMs: round1(
              rankQuantile(
                heavy.map((h) => h.ms),
                1,
              ),
            ),
            bytesMedian: rankQuantile(
              heavy.map((h) => h.bytes),
              0.5,
            ),
          },
        }
      : {}),
  };
}

/**
 * A helper process of the bench (`node <script>`, `env` added to this one's): `result` awaits
 * its exit, 0, and parses the JSON it printed (after its "ready" line, if it printed one); `end`
 * closes its stdin, which a helper that runs until told stops on.
 */
export function benchChild<T>(script: string, env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [path.join(ROOT, script)], {
    env: { ...process.env, ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  return {
    /** Resolves on its "ready" line; rejects if it exits before. */
    ready: () =>
      new Promise<void>((resolve, reject) => {
        child.stdout.on('data', () => out.includes('ready\n') && resolve());
        void exited.then((code) => reject(new Error(`${script} exited with ${code} before it was ready`)));
      }),
    end: () => void child.stdin.end(),
    async result(): Promise<T> {
      const code = await exited;
      if (code !== 0) throw new Error(`${script} exited with ${code}`);
      const ready = out.indexOf('ready\n');
      return JSON.parse(ready < 0 ? out : out.slice(ready + 'ready\n'.length)) as T;
    },
  };
}

/** bench/load/loop-canary.ts, started (it has said "ready"); `stop` ends it and returns what it measured. */
export async function startCanary(): Promise<{ stop(): Promise<{ p99Ms: number; maxMs: number }> }> {
  // It ends when its stdin does: also when this process ends first (a window that threw).
  const canary = benchChild<{ p99Ms: number; maxMs: number }>('bench/load/loop-canary.ts');
  await canary.ready();
  return {
    stop() {
      canary.end();
      return canary.result();
    },
  };
}
