/**
 * What a page_view keeps (server/domain/analytics/page-view.ts): the path up to its query or
 * fragment and at most 512 UTF-8 bytes (cut between characters), and the referrer's origin (scheme, host, port other than the scheme's default),
 * nothing for a referrer that is no http(s) URL or whose host is longer than a DNS name.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { referrerOrigin, storedPageView } from '../../../../server/domain/analytics/page-view.ts';

describe('storedPageView', () => {
  it('cuts the path at its query or fragment, whichever comes first', () => {
    assert.equal(storedPageView({ path: '/inbox' }).path, '/inbox');
    assert.equal(
      storedPageView({ path: '/auth/provider/callback?code=4/0Ab&state=x' }).path,
      '/auth/provider/callback',
    );
    assert.equal(storedPageView({ path: '/t/1#reply?x=1' }).path, '/t/1');
    assert.equal(storedPageView({ path: '/a\n?b\nc' }).path, '/a\n');
    assert.equal(storedPageView({ path: '?only=query' }).path, '');
  });

  it('keeps a path of 512 ASCII characters whole; cuts one of wider characters at 512 bytes, between characters', () => {
    const ascii = `/${'a'.repeat(511)}`;
    assert.equal(storedPageView({ path: ascii }).path, ascii);
    const wide = '/' + '€'.repeat(511); // 1 + 3 × 511 bytes
    const cut = storedPageView({ path: wide }).path;
    assert.equal(cut, '/' + '€'.repeat(170), '1 + 3 × 170 = 511 bytes: the 171st would pass 512');
    assert.equal(
      storedPageView({ path: '/' + '😀'.repeat(200) }).path,
      '/' + '😀'.repeat(127),
      '1 + 4 × 127 = 509 bytes',
    );
    assert.equal(
      storedPageView({ path: 'ab' + '€'.repeat(170) }).path,
      'ab' + '€'.repeat(170),
      'exactly 512 bytes is kept',
    );
  });

  it('keeps the referrer as its origin, and no referrer key when it has none to keep', () => {
    assert.deepEqual(storedPageView({ path: '/', referrer: 'https://www.google.com/search?q=private+words' }), {
      path: '/',
      referrer: 'https://www.google.com',
    });
    assert.deepEqual(storedPageView({ path: '/', referrer: '' }), { path: '/' });
    assert.deepEqual(storedPageView({ path: '/' }), { path: '/' });
  });
});

describe('referrerOrigin', () => {
  it('scheme, host and a non-default port; no user, path, query or fragment', () => {
    assert.equal(referrerOrigin('HTTPS://Example.COM:443/a/b?c#d'), 'https://example.com');
    assert.equal(referrerOrigin('http://example.com:8080/x'), 'http://example.com:8080');
    assert.equal(referrerOrigin('https://alice:secret@example.com/'), 'https://example.com');
    assert.equal(referrerOrigin('http://[2001:db8::1]:3000/p'), 'http://[2001:db8::1]:3000');
    assert.equal(referrerOrigin('https://bücher.example/'), 'https://xn--bcher-kva.example');
  });

  it('nothing for what is no http(s) URL, or names a host no DNS name can be', () => {
    for (const r of [
      '',
      'not a url',
      '/relative/path',
      'r'.repeat(2048),
      'android-app://com.google.android.gm/',
      'file:///etc/passwd',
      'javascript:alert(1)',
      'data:text/html,x',
    ]) {
      assert.equal(referrerOrigin(r), undefined, r.slice(0, 40));
    }
    const longHost = Array.from({ length: 5 }, () => 'a'.repeat(60)).join('.');
    assert.equal(referrerOrigin(`https://${longHost}/`), undefined, 'a 304-character host');
    assert.equal(
      referrerOrigin(`https://${longHost.slice(0, 253)}/`),
      `https://${longHost.slice(0, 253)}`,
      'a 253-character host is kept',
    );
  });
});
