/**
 * Generated hostile mail, the provider-side twin of the API fuzzer: fast-check
 * builds raw messages with hostile headers (NULs and CESU surrogates in encoded words, unknown
 * charsets, 30 KB runs of blanks or `a@`, groups, garbage) and MIME trees (deep, wide, broken
 * boundaries, every transfer encoding, scripts, handlers, remote images and CSS in HTML, NULs
 * in bodies and filenames, sizes from empty to a few hundred KB). The Gmail stand-in serves
 * them raw; the service syncs them through the route and, in a live world, through
 * notifications and the job engine. Invariants: no 5xx, every message stored once with the
 * checkpoint at the mailbox's history, every thread opens with 200, no U+0000 or lone
 * surrogate in any answer, nothing executable or remote in any bodyHtml.
 *
 * HOSTILE_SEED=<n> replays a run (the seed is printed as a diagnostic).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import { csrfHeaders } from '../../helpers/providers.ts';
import type { Browser } from '../../../harness/browser.ts';
import { startLiveWorld, SUBSCRIPTION, waitFor } from '../live/live-harness.ts';
import { ALICE, startMailApp } from './mail-app.ts';
import { htmlProblems, textProblems } from './mail-invariants.ts';

const SEED = Number(process.env.HOSTILE_SEED ?? Math.floor(Math.random() * 2 ** 31));
const MESSAGES = 40;

const bytes = (s: string) => Buffer.from(s, 'latin1').toString('latin1');
const encodedWord = fc
  .tuple(
    fc.constantFrom('utf-8', 'iso-8859-1', 'windows-1252', 'ks_c_5601-1987', 'utf-7', 'x-unknown-42', 'UTF-8*en', ''),
    fc.constantFrom('B', 'Q', 'b', 'X'),
    fc.oneof(
      fc.uint8Array({ maxLength: 40 }),
      fc.constant(new Uint8Array([0])),
      fc.constant(new Uint8Array([0xed, 0xa0, 0x80])),
    ),
  )
  .map(([charset, enc, data]) => {
    const text =
      enc.toUpperCase() === 'B'
        ? Buffer.from(data).toString('base64')
        : [...data].map((b) => `=${b.toString(16).padStart(2, '0').toUpperCase()}`).join('');
    return `=?${charset}?${enc}?${text}?=`;
  });
const headerText = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.string({ unit: 'binary', maxLength: 60 }).map((s) => s.replace(/[\r\n]/g, ' ')),
  fc.array(encodedWord, { minLength: 1, maxLength: 6 }).map((w) => w.join(' ')),
  fc.constantFrom(
    ' '.repeat(30_000),
    'a@'.repeat(15_000),
    `${'x'.repeat(2_000)}\u0000`,
    '"unclosed <a@b',
    'Group: a@b.c, <d@e.f>;',
    '(comment only)',
  ),
);
const address = fc.oneof(
  fc.tuple(headerText, fc.emailAddress()).map(([name, addr]) => `${name.replace(/[<>"]/g, '')} <${addr}>`),
  fc.emailAddress(),
  headerText,
);

const htmlBody = fc
  .array(
    fc.constantFrom(
      '<script>alert(1)</script>',
      '<img src="https://t.example/p.gif" onload="x()">',
      '<img srcset="https://t.example/a.png 1x, //t.example/b.png 2x">',
      '<div style="background:url(https://t.example/bg)">bg</div>',
      '<a href="javascript:alert(1)">j</a><a href=" JaVaScRiPt:x()">k</a>',
      '<a href="/auth/logout">o</a><a href="../api/mail/sync">s</a><a href="#top">t</a><a href="?connected=1">c</a><a href="//e.example/p">p</a>',
      '<a href="https://e.example/ok">h</a><a href="mailto:a@e.example">m</a>',
      '<iframe src="https://e.example"></iframe><form action="https://e.example"><input></form>',
      '<meta http-equiv="refresh" content="0;url=https://e.example"><base href="https://e.example/">',
      '<svg><script>x()</script></svg><math><mi xlink:href="javascript:x()">m</mi></math>',
      '<p>text \u0000 with a NUL</p>',
      '<table background="https://t.example/t.png"><tr><td>cell</td></tr></table>',
      '<div>'.repeat(300),
      '<p>plain paragraph &amp; entities &#0; &#xD800; &bogus;</p>',
    ),
    { maxLength: 12 },
  )
  .map((parts) => `<html><body>${parts.join('\n')}</body></html>`);

type Leaf = { kind: 'leaf'; type: string; charset: string; encoding: string; content: string; filename?: string };
type Tree = Leaf | { kind: 'multi'; subtype: string; boundary: string; children: Tree[]; broken: boolean };

const leaf: fc.Arbitrary<Tree> = fc.record({
  kind: fc.constant('leaf' as const),
  type: fc.constantFrom(
    'text/plain',
    'text/html',
    'application/octet-stream',
    'image/png',
    'message/rfc822',
    'text/x-unknown',
  ),
  charset: fc.constantFrom('utf-8', 'iso-8859-1', 'x-unknown-42', 'utf-16', 'gb2312', ''),
  encoding: fc.constantFrom('base64', 'quoted-printable', '8bit', '7bit', 'x-uuencode', ''),
  content: fc.oneof(
    { weight: 4, arbitrary: fc.string({ unit: 'binary', maxLength: 300 }) },
    { weight: 3, arbitrary: htmlBody },
    { weight: 1, arbitrary: fc.constantFrom('x'.repeat(200_000), '<p>big</p>'.repeat(20_000), '') },
  ),
  filename: fc.option(
    headerText.map((h) => `${h.slice(0, 80)}\u0000.bin`),
    { nil: undefined },
  ),
});
const tree: fc.Arbitrary<Tree> = fc.letrec<{ tree: Tree }>((tie) => ({
  tree: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.record({
      kind: fc.constant('multi' as const),
      subtype: fc.constantFrom('mixed', 'alternative', 'related', 'x-weird'),
      boundary: fc.constantFrom('b1', 'b2', '==b3==', 'b1'),
      children: fc.array(tie('tree'), { maxLength: 5 }),
      broken: fc.boolean(),
    }),
  ),
})).tree;

function encode(l: Leaf): string {
  const raw = Buffer.from(l.content, 'utf8');
  if (l.encoding === 'base64') return raw.toString('base64').replace(/.{76}/g, '$&\r\n');
  if (l.encoding === 'quoted-printable')
    return bytes(l.content).replace(
      /[^\x20-\x3c\x3e-\x7e]/g,
      (c) => `=${c.charCodeAt(0).toString(16).padStart(2, '0').toUpperCase()}`,
    );
  return l.content;
}

function render(t: Tree): string {
  if (t.kind === 'leaf') {
    const name = t.filename === undefined ? '' : `; name="${t.filename}"`;
    const disposition = t.filename === undefined ? '' : `Content-Disposition: attachment; filename="${t.filename}"\r\n`;
    return `Content-Type: ${t.type}${t.charset ? `; charset=${t.charset}` : ''}${name}\r\n${disposition}Content-Transfer-Encoding: ${t.encoding}\r\n\r\n${encode(t)}`;
  }
  const parts = t.children.map((c) => `--${t.boundary}\r\n${render(c)}\r\n`).join('');
  return `Content-Type: multipart/${t.subtype}; boundary="${t.boundary}"\r\n\r\n${parts}${t.broken ? '' : `--${t.boundary}--\r\n`}`;
}

const message = fc
  .record({
    from: address,
    subject: headerText,
    date: fc.constantFrom('Tue, 24 Nov 2026 10:00:00 +0000', 'garbage', 'Fri, 26 Jul 0102 18:03:12 +0900', ''),
    body: tree,
  })
  .map((m, i = 0) =>
    Buffer.from(
      `From: ${m.from}\r\nTo: owner@example.com\r\nSubject: ${m.subject}\r\nDate: ${m.date}\r\nMessage-ID: <hostile-${i}-${Math.random()}@example>\r\nMIME-Version: 1.0\r\n${render(m.body)}`,
      'utf8',
    ),
  );

const generate = (seed: number) => fc.sample(message, { seed, numRuns: MESSAGES });

/** Opens every thread of the inbox; returns what broke an invariant. */
async function openEverything(browser: Browser): Promise<string[]> {
  const problems: string[] = [];
  const threads: { id: string }[] = [];
  for (let offset = 0; ; offset += 100) {
    const res = await browser.fetch(`/api/mail/threads?limit=100&offset=${offset}`);
    const text = await res.text();
    problems.push(...textProblems(text).map((p) => `list: ${p}`));
    assert.equal(res.status, 200, text.slice(0, 300));
    const body = JSON.parse(text);
    threads.push(...body.threads);
    if (!body.hasMore) break;
  }
  for (const t of threads) {
    const res = await browser.fetch(`/api/mail/threads/${t.id}`);
    const text = await res.text();
    if (res.status !== 200) problems.push(`thread ${t.id}: ${res.status} ${text.slice(0, 200)}`);
    problems.push(...textProblems(text).map((p) => `thread ${t.id}: ${p}`));
    for (const m of res.status === 200 ? JSON.parse(text).messages : [])
      problems.push(...htmlProblems(m.bodyHtml ?? '').map((p) => `thread ${t.id}: bodyHtml: ${p}`));
  }
  return problems;
}

describe(`generated hostile mail (HOSTILE_SEED=${SEED})`, () => {
  it('through the sync route: every message stored once, every thread opens, every answer clean', async (t) => {
    t.diagnostic(`HOSTILE_SEED=${SEED}`);
    const mail = await startMailApp(t, { env: { RATE_LIMIT_MAX: '100000' } });
    const raws = generate(SEED);
    const has = (re: RegExp) => raws.filter((r) => re.test(r.toString('latin1'))).length;
    t.diagnostic(
      `${raws.length} messages, ${Math.round(raws.reduce((n, r) => n + r.length, 0) / 1024)} KB; with <script ${has(/<script/i)}, a NUL ${has(/\u0000|=00|AA==/)}, multipart ${has(/multipart\//)}, a 30 KB header ${has(/(?: {30000}|(?:a@){15000})/)}`,
    );
    const added = raws.map((raw) => mail.gmail.addRawMessage(ALICE, raw));
    for (let i = 0; i < 20; i++) {
      const res = await mail.browser.fetch('/api/mail/sync', {
        method: 'POST',
        headers: csrfHeaders(mail.csrfToken, WEB_ORIGIN),
      });
      const text = await res.text();
      assert.equal(res.status, 200, `sync #${i + 1}: ${text.slice(0, 300)}`);
      assert.deepEqual(textProblems(text), []);
      if (!JSON.parse(text).hasMore) break;
    }
    const rows = await mail.sql<{ pid: string }>('select provider_message_id as pid from mail_messages');
    assert.deepEqual(rows.map((r) => r.pid).sort(), added.map((m) => m.id).sort(), 'every message stored, once');
    assert.equal(
      (await mail.app.syncState())!.history_id,
      String(mail.gmail.historyId(ALICE)),
      'the checkpoint is the mailbox history',
    );
    assert.deepEqual(await openEverything(mail.browser), []);
  });

  it('through notifications and the job engine: the same invariants', async (t) => {
    const w = await startLiveWorld(t);
    await w.idle();
    const messages = generate(SEED + 1);
    for (const raw of messages) w.gmail.addRawMessage(ALICE, raw);
    // Each add publishes its notification on the next turn; every one is acknowledged once its job is stored.
    await waitFor(
      () => w.published === messages.length && w.pubsub.stats(SUBSCRIPTION).acked >= messages.length,
      'every notification taken in',
      30_000,
    );
    await w.drained(60_000);
    const stored = await w.stored();
    assert.deepEqual(stored.inbox, w.providerInbox(), 'the stored inbox is the provider inbox');
    assert.equal(stored.rows, stored.distinct, 'no duplicate');
    assert.equal(await w.checkpoint(), BigInt(w.gmail.historyId(ALICE)));
    assert.equal((await w.syncState())?.last_error_code ?? null, null, 'no background sync failure recorded');
    assert.deepEqual(await openEverything(w.browser), []);
  });
});
