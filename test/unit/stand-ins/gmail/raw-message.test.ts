/**
 * The Gmail stand-in's RFC 822 -> Gmail payload conversion (stand-ins/gmail/raw-message.ts)
 * on crafted messages, and the same messages served over the REST API by addRawMessage.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { gmail, type gmail_v1 } from '@googleapis/gmail';
import { OAuth2Client } from 'google-auth-library';
import { convertRawMessage } from '../../../../stand-ins/gmail/raw-message.ts';
import {
  DEFAULT_MAILBOX,
  startGmailStandIn,
  type GmailStandIn,
  type WirePart,
} from '../../../../stand-ins/gmail.stand-in.ts';

const convert = (raw: Buffer | string) => convertRawMessage(raw, () => 'm1');
const bytes = (data: string | null | undefined) => Buffer.from(data ?? '', 'base64url');
const header = (p: { headers?: { name?: string | null; value?: string | null }[] | null } | undefined, name: string) =>
  p?.headers?.find((h) => h.name?.toLowerCase() === name.toLowerCase())?.value;
const find = (p: WirePart, partId: string): WirePart | undefined =>
  p.partId === partId ? p : p.parts?.map((c) => find(c, partId)).find(Boolean);

const ENCODED_SUBJECT = [
  'From: =?UTF-8?B?SsO8cmdlbg==?= <j@example.de>',
  'To: alice@example.com',
  'Subject: =?ISO-8859-1?Q?Gr=FC=DFe?= aus',
  '  =?UTF-8?Q?M=C3=BCnchen?=',
  'X-Latin1: caf\xe9',
  'X-Utf8: caf\xc3\xa9',
  'Date: Tue, 05 Mar 2024 10:00:00 +0100',
  'Message-ID: <a1@example.de>',
  'Content-Type: text/plain; charset=iso-8859-1',
  'Content-Transfer-Encoding: quoted-printable',
  '',
  'Sch=F6ne Gr=FC=DFe, <b>&',
  'soft=',
  'wrap',
  '',
].join('\n');

const NESTED = [
  'From: Dana <dana@example.net>',
  'Subject: nested',
  'Date: Wed, 06 Mar 2024 09:30:00 -0500',
  'MIME-Version: 1.0',
  'Content-Type: multipart/mixed; boundary="outer"',
  '',
  'This is a multi-part message in MIME format.',
  '--outer',
  'Content-Type: multipart/alternative; boundary=inner',
  '',
  '--inner',
  'Content-Type: text/plain; charset=windows-1252',
  'Content-Transfer-Encoding: 8bit',
  '',
  'price \x80 5',
  '--inner',
  'Content-Type: text/html; charset=utf-8',
  'Content-Transfer-Encoding: base64',
  '',
  Buffer.from('<p>price \u20ac 5</p>').toString('base64'),
  '--inner--',
  '',
  '--outer',
  'Content-Type: application/pdf; name="=?UTF-8?Q?r=C3=A9sum=C3=A9.pdf?="',
  'Content-Disposition: attachment',
  'Content-Transfer-Encoding: base64',
  '',
  Buffer.from('%PDF-1.4 binary \x00\xff', 'latin1').toString('base64'),
  '--outer',
  'Content-Type: image/png',
  "Content-Disposition: inline; filename*=utf-8''logo%20%C3%A9.png",
  'Content-Transfer-Encoding: base64',
  '',
  Buffer.from([0x89, 0x50, 0x4e, 0x47]).toString('base64'),
  '--outer--',
  'epilogue is no part',
  '',
].join('\r\n');

describe('raw RFC 822 -> Gmail payload', () => {
  it('keeps headers as sent: unfolded, encoded words encoded, 8-bit as UTF-8 when valid else Latin-1', () => {
    const c = convert(Buffer.from(ENCODED_SUBJECT, 'latin1'));
    const p = c.raw.payload;
    assert.equal(p.partId, '');
    assert.equal(p.mimeType, 'text/plain');
    assert.equal(header(p, 'Subject'), '=?ISO-8859-1?Q?Gr=FC=DFe?= aus  =?UTF-8?Q?M=C3=BCnchen?=');
    assert.equal(header(p, 'From'), '=?UTF-8?B?SsO8cmdlbg==?= <j@example.de>');
    assert.equal(header(p, 'X-Latin1'), 'caf\u00e9', 'invalid UTF-8: byte for byte');
    assert.equal(header(p, 'X-Utf8'), 'caf\u00e9', 'valid UTF-8: decoded');
    assert.deepEqual(
      p.headers.map((h) => h.name),
      [
        'From',
        'To',
        'Subject',
        'X-Latin1',
        'X-Utf8',
        'Date',
        'Message-ID',
        'Content-Type',
        'Content-Transfer-Encoding',
      ],
    );
    assert.equal(c.date, Date.UTC(2024, 2, 5, 9, 0));
    // The convenience fields are decoded.
    assert.equal(c.subject, 'Grüße aus  München', 'the blanks between a plain and an encoded word stay');
    assert.deepEqual(c.from, { name: 'Jürgen', address: 'j@example.de' });
    assert.equal(c.messageIdHeader, '<a1@example.de>');
  });

  it('transfer-decodes a quoted-printable body but keeps its charset; CRLF line ends; snippet decoded', () => {
    const c = convert(Buffer.from(ENCODED_SUBJECT, 'latin1'));
    const body = bytes(c.raw.payload.body.data);
    assert.deepEqual(
      body,
      Buffer.from('Sch\xf6ne Gr\xfc\xdfe, <b>&\r\nsoftwrap\r\n', 'latin1'),
      'ISO-8859-1 bytes, not UTF-8',
    );
    assert.equal(c.raw.payload.body.size, body.length);
    assert.equal(c.snippet, 'Schöne Grüße, <b>& softwrap');
    assert.equal(c.raw.sizeEstimate, ENCODED_SUBJECT.replace(/\n/g, '\r\n').length, 'bytes, after CRLF');
  });

  it('splits nested multiparts into a partId tree; attachments carry attachmentId and keep their bytes', () => {
    const c = convert(Buffer.from(NESTED, 'latin1'));
    const p = c.raw.payload;
    assert.equal(p.mimeType, 'multipart/mixed');
    assert.deepEqual(p.body, { size: 0 });
    assert.deepEqual(
      p.parts!.map((x) => [x.partId, x.mimeType, x.filename]),
      [
        ['0', 'multipart/alternative', ''],
        ['1', 'application/pdf', 'résumé.pdf'],
        ['2', 'image/png', 'logo é.png'],
      ],
    );
    const plain = find(p, '0.0')!;
    const html = find(p, '0.1')!;
    assert.equal(plain.mimeType, 'text/plain');
    assert.deepEqual(bytes(plain.body.data), Buffer.from('price \x80 5', 'latin1'), 'windows-1252 byte kept');
    assert.equal(header(plain, 'Content-Type'), 'text/plain; charset=windows-1252');
    assert.equal(bytes(html.body.data).toString('utf8'), '<p>price \u20ac 5</p>');
    const pdf = find(p, '1')!;
    assert.equal(pdf.body.data, undefined);
    assert.match(pdf.body.attachmentId!, /^ANGjdJ/);
    assert.equal(pdf.body.size, 18);
    assert.deepEqual(
      bytes(c.raw.attachmentData[pdf.body.attachmentId!]),
      Buffer.from('%PDF-1.4 binary \x00\xff', 'latin1'),
    );
    assert.deepEqual(
      c.attachments.map((a) => [a.filename, a.mimeType, a.size]),
      [
        ['résumé.pdf', 'application/pdf', 18],
        ['logo é.png', 'image/png', 4],
      ],
    );
    assert.equal(c.snippet, 'price € 5', 'snippet from the plain leaf in its charset');
    assert.equal(c.date, Date.UTC(2024, 2, 6, 14, 30));
  });

  it('serves broken mail with what can be split, never throwing', () => {
    const unclosed = convert(
      'Subject: x\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nfirst\n--b\nContent-Type: text/html\n\n<p>cut',
    );
    assert.deepEqual(
      unclosed.raw.payload.parts!.map((x) => x.mimeType),
      ['text/plain', 'text/html'],
    );
    assert.equal(bytes(unclosed.raw.payload.parts![1]!.body.data).toString(), '<p>cut');
    const wrongBoundary = convert(
      'Subject: y\nContent-Type: multipart/alternative; boundary="nope"\n\n--other\n\nbody text\n',
    );
    assert.equal(wrongBoundary.raw.payload.mimeType, 'text/plain', 'nothing to split: one text leaf');
    assert.equal(bytes(wrongBoundary.raw.payload.body.data).toString(), '--other\r\n\r\nbody text\r\n');
    const noBoundary = convert('Content-Type: multipart/mixed\n\nhello');
    assert.equal(noBoundary.raw.payload.mimeType, 'text/plain');
    const garbage = convert('From somebody Mon Jan 1\n\x00\x01 not a header\nSubject: later');
    assert.deepEqual(garbage.raw.payload.headers, [], 'the body starts at the first line that is no header');
    const badB64 = convert('Content-Type: text/plain\nContent-Transfer-Encoding: base64\n\n!!!aGVsbG8=@@');
    assert.equal(bytes(badB64.raw.payload.body.data).toString(), 'hello');
    assert.equal(convert('').raw.payload.body.size, 0);
    assert.equal(convert('Date: not a date\n\nx').date, undefined);
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.constantFrom(
              '--b',
              '--b--',
              'Content-Type: multipart/mixed; boundary=b',
              'Content-Type: message/rfc822',
              'Content-Transfer-Encoding: quoted-printable',
              '',
              ' folded',
              '=?x?Q?=ZZ?=',
              'Content-Disposition: attachment; filename*0*=bad%ZZ',
            ),
            fc.string(),
          ),
          { maxLength: 30 },
        ),
        (lines) => {
          const c = convert(lines.join('\n'));
          assert.equal(typeof c.raw.payload.mimeType, 'string');
        },
      ),
      { numRuns: 300, seed: 17 },
    );
  });
});

describe('addRawMessage over the Gmail REST API', () => {
  let s: GmailStandIn;
  let api: gmail_v1.Gmail;
  before(async () => {
    s = await startGmailStandIn();
    const auth = new OAuth2Client();
    auth.setCredentials({ access_token: 'token-alice' });
    api = gmail({ version: 'v1', auth, rootUrl: s.url });
  });
  after(() => s.close());

  it('serves metadata, full, thread, list, history and attachment bytes as converted', async () => {
    const start = s.historyId(DEFAULT_MAILBOX);
    const first = s.addRawMessage(DEFAULT_MAILBOX, Buffer.from(NESTED, 'latin1'));
    const reply = s.addRawMessage(
      DEFAULT_MAILBOX,
      'From: a@x.com\nSubject: Re: nested\nIn-Reply-To: <nope@x>\nReferences: <a1@example.de>\n\n<hi> & bye',
      { internalDate: 1_700_000_000_000 },
    );
    const root = s.addRawMessage(DEFAULT_MAILBOX, Buffer.from(ENCODED_SUBJECT, 'latin1'), { labelIds: ['INBOX'] });
    const late = s.addRawMessage(DEFAULT_MAILBOX, 'Subject: late\nIn-Reply-To: <a1@example.de>\n\nok');
    assert.equal(first.internalDate, Date.UTC(2024, 2, 6, 14, 30));
    assert.equal(reply.threadId, reply.id, 'the message it names arrived later: a thread of its own');
    assert.equal(late.threadId, root.threadId, 'threaded by In-Reply-To');
    assert.ok(Date.now() - s.getMessage(DEFAULT_MAILBOX, late.id)!.internalDate < 60_000, 'no Date header: now');

    const meta = (
      await api.users.messages.get({
        userId: 'me',
        id: root.id,
        format: 'metadata',
        metadataHeaders: ['Subject', 'From'],
      })
    ).data;
    assert.deepEqual(meta.payload?.headers, [
      { name: 'From', value: '=?UTF-8?B?SsO8cmdlbg==?= <j@example.de>' },
      { name: 'Subject', value: '=?ISO-8859-1?Q?Gr=FC=DFe?= aus  =?UTF-8?Q?M=C3=BCnchen?=' },
    ]);
    assert.equal(meta.internalDate, String(Date.UTC(2024, 2, 5, 9, 0)));
    assert.deepEqual(meta.labelIds, ['INBOX']);
    assert.equal(meta.snippet, 'Schöne Grüße, &lt;b&gt;&amp; softwrap', 'HTML-escaped like Gmail');
    assert.equal(meta.sizeEstimate, s.getMessage(DEFAULT_MAILBOX, root.id)!.raw!.sizeEstimate);

    const full = (await api.users.messages.get({ userId: 'me', id: first.id, format: 'full' })).data;
    assert.deepEqual(
      full.payload?.parts?.map((p) => p.partId),
      ['0', '1', '2'],
    );
    const attachmentId = full.payload!.parts![1]!.body!.attachmentId!;
    const att = (await api.users.messages.attachments.get({ userId: 'me', messageId: first.id, id: attachmentId }))
      .data;
    assert.deepEqual(bytes(att.data), Buffer.from('%PDF-1.4 binary \x00\xff', 'latin1'));
    assert.equal(att.size, 18);

    const thread = (await api.users.threads.get({ userId: 'me', id: root.threadId, format: 'full' })).data;
    assert.deepEqual(
      thread.messages?.map((m) => m.id),
      [late.id, root.id].sort(
        (a, b) => s.getMessage(DEFAULT_MAILBOX, a)!.internalDate - s.getMessage(DEFAULT_MAILBOX, b)!.internalDate,
      ),
    );
    assert.equal(
      bytes(thread.messages!.find((m) => m.id === root.id)!.payload!.body!.data).toString('latin1'),
      'Sch\xf6ne Gr\xfc\xdfe, <b>&\r\nsoftwrap\r\n',
    );

    const list = (await api.users.messages.list({ userId: 'me', labelIds: ['INBOX'] })).data;
    assert.deepEqual(new Set(list.messages?.map((m) => m.id)), new Set([first.id, reply.id, root.id, late.id]));
    const history = (await api.users.history.list({ userId: 'me', startHistoryId: String(start) })).data;
    assert.deepEqual(
      history.history?.flatMap((h) => h.messagesAdded?.map((a) => a.message?.id) ?? []),
      [first.id, reply.id, root.id, late.id],
    );
    assert.equal(history.historyId, String(s.historyId(DEFAULT_MAILBOX)));
  });
});
