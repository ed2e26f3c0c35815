/** The demo's "Show images" restores only absolute http(s) image addresses. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { restorableSrc, restorableSrcset } from '../../../demo/web/remote-images.ts';

describe('restorable remote images', () => {
  it('restores absolute http(s) addresses only', () => {
    assert.equal(restorableSrc('https://e.example/a.png'), 'https://e.example/a.png');
    assert.equal(restorableSrc(' http://e.example/a b.png '), 'http://e.example/a%20b.png');
    for (const bad of [
      null,
      '',
      'a.png',
      '/a.png',
      '//e.example/a.png',
      'e.example/a.png',
      'javascript:alert(1)',
      'data:image/png;base64,AA',
      'file:///etc/passwd',
      'ftp://e.example/a',
    ]) {
      assert.equal(restorableSrc(bad), null, String(bad));
    }
  });

  it('restores a srcset only when every candidate is one', () => {
    assert.equal(
      restorableSrcset('https://e.example/1.png 1x, https://e.example/2.png 2x'),
      'https://e.example/1.png 1x, https://e.example/2.png 2x',
    );
    assert.equal(restorableSrcset('https://e.example/w.png 640w'), 'https://e.example/w.png 640w');
    for (const bad of [
      null,
      'https://e.example/1.png 1x, /2.png 2x',
      'https://e.example/1.png huge',
      'javascript:x 1x',
    ])
      assert.equal(restorableSrcset(bad), null, String(bad));
  });
});
