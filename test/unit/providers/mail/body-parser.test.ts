import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createBodyParser } from '../../../../server/providers/mail/body-parser.ts';
import type { WirePart } from '../../../../server/providers/gmail.ts';

const leaf = (mimeType: string, content: string): WirePart => ({
  mimeType,
  headers: [{ name: 'Content-Type', value: `${mimeType}; charset=utf-8` }],
  body: { data: Buffer.from(content).toString('base64url') },
});

describe('body parser', () => {
  const parser = createBodyParser({ inlineChars: 1024 });
  const impatient = createBodyParser({ inlineChars: 1024, timeoutMs: 1 });
  after(() => Promise.all([parser.close(), impatient.close()]));

  it('parses small messages inline and big ones on a worker thread, with the same result', async () => {
    const small = await parser.parse(leaf('text/html', '<p onclick="x()">hi <script>x()</script></p>'));
    assert.deepEqual(small, { bodyText: 'hi', bodyHtml: '<p>hi </p>', attachments: [] });
    assert.equal(parser.offloaded, 0);
    const html = `<div>${'<p>row <img src="https://t.example/p.gif"></p>'.repeat(200)}</div>`;
    const big = await parser.parse({ mimeType: 'multipart/mixed', parts: [leaf('text/html', html), { mimeType: 'application/pdf', filename: 'a.pdf', body: { size: 3 } }] });
    assert.equal(parser.offloaded, 1);
    assert.equal(big.bodyHtml.match(/data-remote-src=/g)?.length, 200);
    assert.ok(!big.bodyHtml.includes(' src='), 'sanitised on the worker as inline');
    assert.deepEqual(big.attachments, [{ filename: 'a.pdf', mimeType: 'application/pdf', size: 3 }]);
  });

  it('a parse that outlasts its time gives the plain text and attachments, without the HTML', async () => {
    const deep = `${'<div>'.repeat(20_000)}deep`;
    const got = await impatient.parse({ mimeType: 'multipart/mixed', parts: [{ mimeType: 'multipart/alternative', parts: [leaf('text/plain', 'the plain part'), leaf('text/html', deep)] }, { mimeType: 'image/png', filename: 'x.png', body: { size: 1 } }] });
    assert.equal(impatient.offloaded, 1);
    assert.deepEqual(got, { bodyText: 'the plain part', bodyHtml: '', attachments: [{ filename: 'x.png', mimeType: 'image/png', size: 1 }] });
  });
});
