import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { decodeWords } from 'postal-mime';
import { cleanMailText, MAIL_LIMITS, snippetText } from '../../../../server/providers/mail/mail-text.ts';
import {
  extractBodies,
  htmlToText,
  SANITIZER_VERSION,
  sanitizeMailHtml,
} from '../../../../server/providers/mail/message-body.ts';
import { firstMailbox, toMessageMeta } from '../../../../server/providers/mail/message-meta.ts';
import type { WirePart } from '../../../../server/providers/gmail.ts';

const b64 = (s: string, enc: BufferEncoding = 'utf8') => Buffer.from(s, enc).toString('base64url');
const text = (mimeType: string, content: string, charset = 'UTF-8', enc: BufferEncoding = 'utf8'): WirePart => ({
  mimeType,
  filename: '',
  headers: [{ name: 'Content-Type', value: `${mimeType}; charset="${charset}"` }],
  body: { size: content.length, data: b64(content, enc) },
});

describe('address and header parsing', () => {
  it('parses the usual From shapes', () => {
    assert.deepEqual(firstMailbox('Bob Example <bob@example.com>'), {
      name: 'Bob Example',
      address: 'bob@example.com',
    });
    assert.deepEqual(firstMailbox('"Doe, Jane \\"JD\\"" <jane@example.com>'), {
      name: 'Doe, Jane "JD"',
      address: 'jane@example.com',
    });
    assert.deepEqual(firstMailbox('<noreply@example.com>'), { name: '', address: 'noreply@example.com' });
    assert.deepEqual(firstMailbox('solo@example.com'), { name: '', address: 'solo@example.com' });
    assert.deepEqual(firstMailbox('solo@example.com (Solo Person)'), {
      name: 'Solo Person',
      address: 'solo@example.com',
    });
    assert.deepEqual(firstMailbox('=?UTF-8?B?SsO8cmdlbg==?= <j@example.de>'), {
      name: 'Jürgen',
      address: 'j@example.de',
    });
    assert.deepEqual(firstMailbox(undefined), { name: '', address: '' });
    assert.deepEqual(firstMailbox('a@x.com, b@y.com'), { name: '', address: 'a@x.com' });
    assert.deepEqual(
      firstMailbox('Team: Ann <ann@x.com>, b@y.com;'),
      { name: 'Ann', address: 'ann@x.com' },
      'groups unwrapped',
    );
    assert.deepEqual(
      firstMailbox('=?utf-8?B?AA==?=Eve\u0000 <eve@x.com>'),
      { name: 'Eve', address: 'eve@x.com' },
      'no NUL, decoded or raw',
    );
  });

  it('decodes RFC 2047 subjects (B and Q, any charset, adjacent words joined), one line, NUL-free', () => {
    const subject = (value: string) =>
      toMessageMeta({
        id: 'm',
        threadId: 't',
        labelIds: [],
        snippet: '',
        payload: { headers: [{ name: 'Subject', value }] },
      }).subject;
    assert.equal(subject('=?UTF-8?B?w6l0w6k=?='), 'été');
    assert.equal(subject('=?ISO-8859-1?Q?Caf=E9_cr=E8me?='), 'Café crème');
    assert.equal(subject('Re: =?UTF-8?Q?a?= =?UTF-8?Q?b?= end'), 'Re: ab end');
    assert.equal(subject('=?ks_c_5601-1987?B?vsiz58fPvLy/5A==?='), '안녕하세요', 'a mail alias of a WHATWG charset');
    assert.equal(subject('plain\r\n  folded\tsubject'), 'plain folded subject');
    assert.match(
      subject('=?utf-8?B?AA==?=x=?utf-8?B?7aCA?='),
      /^x\ufffd+$/,
      'NUL removed; surrogate bytes (CESU-8) replaced',
    );
    assert.equal(subject('s'.repeat(20_000)).length, MAIL_LIMITS.subject);
    assert.equal(decodeWords('plain subject'), 'plain subject');
  });

  it("unescapes the provider's HTML-escaped snippets and bounds every string on a code point", () => {
    assert.equal(snippetText('It&#39;s &lt;b&gt; &amp; &quot;x&quot; &#x263A; &bogus;'), 'It\'s <b> & "x" ☺ &bogus;');
    assert.equal(cleanMailText('ab\ud83d\ude00', 3), 'ab', 'never half a pair');
    assert.equal(cleanMailText('a\u0000b\udc00'), 'ab\ufffd');
  });

  it('builds stored metadata from a metadata-format message', () => {
    const meta = toMessageMeta({
      id: 'm1',
      threadId: 't1',
      labelIds: ['INBOX', 'UNREAD', 'INBOX'],
      snippet: 'Don&#39;t forget',
      internalDate: '1767225600000',
      payload: {
        headers: [
          { name: 'subject', value: ' Lunch? ' },
          { name: 'FROM', value: 'Ann <ann@example.com>' },
        ],
      },
    });
    assert.deepEqual(meta, {
      providerMessageId: 'm1',
      providerThreadId: 't1',
      labelIds: ['INBOX', 'UNREAD'],
      fromName: 'Ann',
      fromAddress: 'ann@example.com',
      subject: 'Lunch?',
      snippet: "Don't forget",
      sentAt: new Date(1767225600000),
      bulk: false,
    });
    // Bulk by its headers (RFC 2369 List-Unsubscribe, or Precedence bulk/list/junk), whatever its case.
    const bulk = (headers: { name: string; value: string }[]) =>
      toMessageMeta({ id: 'b', threadId: 'b', labelIds: [], snippet: '', payload: { headers } }).bulk;
    assert.equal(bulk([{ name: 'list-unsubscribe', value: '<mailto:u@example.com>' }]), true);
    assert.equal(bulk([{ name: 'Precedence', value: ' Bulk ' }]), true);
    assert.equal(bulk([{ name: 'Precedence', value: 'list' }]), true);
    assert.equal(bulk([{ name: 'Precedence', value: 'first-class' }]), false);
    assert.equal(bulk([{ name: 'List-Unsubscribe', value: '  ' }]), false);
    const dated = toMessageMeta({
      id: 'm2',
      threadId: 't2',
      labelIds: [],
      snippet: '',
      payload: { headers: [{ name: 'Date', value: 'Thu, 01 Jan 2026 10:00:00 +0000' }] },
    });
    assert.equal(dated.sentAt.toISOString(), '2026-01-01T10:00:00.000Z');
  });
});

describe('bodies', () => {
  it('walks nested multiparts: text, HTML and attachment metadata', async () => {
    const payload: WirePart = {
      mimeType: 'multipart/mixed',
      parts: [
        {
          mimeType: 'multipart/alternative',
          parts: [text('text/plain', 'Grüße\r\nline two'), text('text/html', '<p>Grüße</p>')],
        },
        {
          mimeType: 'application/pdf',
          filename: 'report.pdf',
          headers: [{ name: 'Content-Disposition', value: 'attachment; filename="report.pdf"' }],
          body: { attachmentId: 'ANGj', size: 1234 },
        },
        {
          mimeType: 'image/png',
          filename: '',
          headers: [{ name: 'Content-Disposition', value: 'attachment' }],
          body: { attachmentId: 'X', size: 9 },
        },
      ],
    };
    assert.deepEqual(await extractBodies(payload), {
      bodyText: 'Grüße\nline two',
      bodyHtml: '<p>Grüße</p>',
      attachments: [
        { filename: 'report.pdf', mimeType: 'application/pdf', size: 1234 },
        { filename: 'attachment', mimeType: 'image/png', size: 9 },
      ],
    });
  });

  it('decodes the part charset and derives text from HTML-only messages', async () => {
    const latin = await extractBodies(text('text/plain', 'Café', 'iso-8859-1', 'latin1'));
    assert.equal(latin.bodyText, 'Café');
    const htmlOnly = await extractBodies(
      text('text/html', '<div>Hi&nbsp;<b>you</b><br>next</div><script>x()</script><p>Para &lt;3</p>'),
    );
    assert.equal(htmlOnly.bodyText, 'Hi you\nnext\nPara <3');
    assert.deepEqual(await extractBodies(undefined), { bodyText: '', bodyHtml: '', attachments: [] });
    assert.deepEqual(await extractBodies({ mimeType: 'text/plain', body: { size: 0 } }), {
      bodyText: '',
      bodyHtml: '',
      attachments: [],
    });
  });

  it('leaves no NUL in any body; unknown charsets fall back; bodies and attachment lists are bounded', async () => {
    const cyrillic = await extractBodies({
      ...text('text/plain', ''),
      headers: [{ name: 'Content-Type', value: 'text/plain; charset=windows-1251' }],
      body: { data: Buffer.from([0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2]).toString('base64url') },
    });
    assert.equal(cyrillic.bodyText, 'Привет');
    const bogus = await extractBodies(text('text/html', '<p>caf\u00e9\u0000</p>', 'x-bogus-8', 'latin1'));
    assert.equal(bogus.bodyHtml, '<p>café</p>');
    const huge = await extractBodies(text('text/plain', 'x'.repeat(MAIL_LIMITS.part + 10)));
    assert.equal(huge.bodyText.length, MAIL_LIMITS.body);
    const parts = (n: number) =>
      Array.from({ length: n }, (_, i) => ({
        mimeType: 'image/png',
        filename: `=?utf-8?Q?a${i}?=\u0000.png`,
        body: { size: i },
      }));
    const many = await extractBodies({ mimeType: 'multipart/mixed', parts: parts(MAIL_LIMITS.attachments + 50) });
    assert.equal(many.attachments.length, MAIL_LIMITS.attachments);
    assert.equal(many.attachments[7]!.filename, 'a7.png');
    // Every attachment a real message carries is listed: 500 are 500, in order, none cut.
    const five = await extractBodies({ mimeType: 'multipart/mixed', parts: parts(500) });
    assert.equal(five.attachments.length, 500);
    assert.deepEqual(five.attachments[499], { filename: 'a499.png', mimeType: 'image/png', size: 499 });
    assert.ok(MAIL_LIMITS.attachments >= 500);
  });

  it('decodes at most MAIL_LIMITS.leaves text leaves, and their bytes up to MAIL_LIMITS.part together', async () => {
    const leaves = await extractBodies({
      mimeType: 'multipart/mixed',
      parts: Array.from({ length: 100 }, (_, i) => text('text/plain', `L${i}`)),
    });
    assert.deepEqual(
      leaves.bodyText.split('\n'),
      Array.from({ length: MAIL_LIMITS.leaves }, (_, i) => `L${i}`),
    );
    // A first leaf of the whole byte budget (half as many characters, all sanitised away) leaves nothing for the next one.
    const spent = `<script>${'é'.repeat(MAIL_LIMITS.part / 2)}</script>`;
    const html = await extractBodies({
      mimeType: 'multipart/mixed',
      parts: [text('text/html', spent), text('text/html', '<p>never decoded</p>')],
    });
    assert.equal(html.bodyHtml, '');
    const within = await extractBodies({
      mimeType: 'multipart/mixed',
      parts: [text('text/html', '<script>é</script>'), text('text/html', '<p>decoded</p>')],
    });
    assert.equal(within.bodyHtml, '<p>decoded</p>');
  });

  it('keeps remote images unloadable (tracking pixels, srcset, CSS url()) in a form a client can restore; cid: stays', () => {
    const out = sanitizeMailHtml(
      '<img src="https://track.example/p.gif" width="1" height="1"><img srcset="https://e.com/a.png 1x, https://e.com/b.png 2x" alt="logo">' +
        '<img src="cid:part1@mail"><div style="background:url(https://track.example/bg.png)">x</div><table background="https://track.example/t.png"><tr><td>y</td></tr></table>' +
        '<img src="//track.example/proto-relative.gif"><img src="javascript:bad()">',
    );
    assert.ok(!/\ssrc="(https?:)?\/\//i.test(out) && !/\ssrcset=/.test(out), `nothing remote loads: ${out}`);
    assert.ok(!out.includes('url(') && !out.includes('background='), out);
    assert.match(out, /<img width="1" height="1" data-remote-src="https:\/\/track.example\/p.gif" \/>/);
    assert.match(out, /data-remote-srcset="https:\/\/e.com\/a.png 1x, https:\/\/e.com\/b.png 2x"/);
    assert.match(out, /<img src="cid:part1@mail" \/>/);
    assert.ok(!out.includes('javascript:') && !out.includes('proto-relative'), out);
  });

  it('drops relative and schemeless image sources, and checks a sender-written data-remote-src/srcset', () => {
    const out = sanitizeMailHtml(
      '<img src="pixel.gif" alt="rel"><img src="/abs/path.gif"><img src="track.example/p.gif"><img src="\\\\evil\\p.gif"><img src="ftp://e.com/i.png">' +
        '<img data-remote-src="javascript:alert(1)"><img data-remote-src="/relative.png"><img data-remote-src="HTTPS://ok.example/a b.png">' +
        '<img data-remote-srcset="https://ok.example/1.png 1x, /rel.png 2x"><img srcset="https://ok.example/s.png 2x, data:x 1x">' +
        '<img data-remote-srcset="https://ok.example/1.png 1x, https://ok.example/2.png 2x"><img src="rel.png" data-remote-src="https://ok.example/shadow.png">',
    );
    for (const bad of [
      'pixel.gif',
      '/abs/path',
      'track.example',
      'evil',
      'ftp:',
      'javascript',
      'relative.png',
      '/rel.png',
      'data:x',
      'shadow.png',
    ]) {
      assert.ok(!out.includes(bad), `${bad} in ${out}`);
    }
    assert.match(out, /<img alt="rel" \/>/, 'the image stays, without a source');
    assert.match(
      out,
      /<img data-remote-src="https:\/\/ok.example\/a%20b.png" \/>/,
      'a sender-written one that is a URL is kept, normalised',
    );
    assert.match(out, /<img data-remote-srcset="https:\/\/ok.example\/1.png 1x, https:\/\/ok.example\/2.png 2x" \/>/);
    assert.equal(sanitizeMailHtml(out), out, 'sanitising the output again changes nothing');
  });

  it('keeps an href only on absolute http(s) and mailto links: relative, fragment, protocol-relative and other schemes are inert', () => {
    const inert = [
      '/auth/logout',
      '../api/mail/sync',
      '#top',
      '?connected=1',
      '//evil.example/x',
      'tel:+15550100',
      'ftp://e.com/f',
      'https:no-slashes',
      'data:text/html,x',
      '&#x2f;auth&#x2f;logout',
    ];
    const out = sanitizeMailHtml(
      inert.map((href, i) => `<a href="${href}" rel="opener" target="_self">link${i}</a>`).join(''),
    );
    assert.equal(
      out,
      inert.map((_, i) => `<a>link${i}</a>`).join(''),
      'each link keeps its text and loses its href, rel and target',
    );
    const kept = sanitizeMailHtml(
      '<a href=" https://e.com/a?b=1#c ">h</a><a href="HTTP://e.com/">u</a><a href="mailto:bob@e.com?subject=hi">m</a><a href="MAILTO:x@e.com">M</a>',
    );
    assert.equal(
      kept,
      '<a href="https://e.com/a?b=1#c" rel="noopener noreferrer nofollow" target="_blank">h</a><a href="HTTP://e.com/" rel="noopener noreferrer nofollow" target="_blank">u</a>' +
        '<a href="mailto:bob@e.com?subject=hi" rel="noopener noreferrer nofollow" target="_blank">m</a><a href="MAILTO:x@e.com" rel="noopener noreferrer nofollow" target="_blank">M</a>',
    );
    assert.equal(sanitizeMailHtml(kept), kept, 'sanitising the output again changes nothing');
    assert.ok(SANITIZER_VERSION >= 3, 'bodies stored before links were made inert are sanitised again');
  });

  it('sanitises HTML: no scripts, event handlers or javascript: URLs', () => {
    const out = sanitizeMailHtml(
      '<p onclick="x()" style="color:red">ok</p><script>bad()</script><a href="javascript:bad()">a</a><a href=" JaVaScRiPt:bad()">b</a>' +
        '<img src="data:image/png;base64,AAAA" onload="bad()"><img src="https://e.com/i.png"><a href="https://e.com">c</a><svg><script>bad()</script></svg>',
    );
    for (const bad of ['<script', 'bad()', 'onclick', 'onload', 'javascript:', 'style=', '<svg', ' src="https:'])
      assert.equal(out.toLowerCase().includes(bad.toLowerCase()), false, `${bad} in ${out}`);
    assert.match(out, /<p>ok<\/p>/);
    assert.match(out, /<img src="data:image\/png;base64,AAAA" \/>/, 'data: images may stay');
    assert.match(out, /<img data-remote-src="https:\/\/e.com\/i.png" \/>/, 'a remote image is kept, not loadable');
    assert.match(out, /<a href="https:\/\/e.com" rel="noopener noreferrer nofollow" target="_blank">c<\/a>/);
    assert.equal(htmlToText('<style>p{}</style><ul><li>one</li><li>two</li></ul>'), 'one\ntwo');
    assert.equal(
      htmlToText('<p>Hello&nbsp;<b>Bob</b> &amp; co</p><script>alert(1)</script><div>Line 2<br>Line 3</div>'),
      'Hello Bob & co\nLine 2\nLine 3',
    );
  });
});
