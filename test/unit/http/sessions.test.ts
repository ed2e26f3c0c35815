/**
 * The session cookie's signer: Keygrip's signatures, so cookies signed before it
 * (HMAC-SHA1 of `name=value`, base64url, by the service's own code) still verify; key rotation
 * as Keygrip ranks keys; a remembered cookie accepts its own signature only.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import Keygrip from 'keygrip';
import { cookieKeys } from '../../../server/http/sessions.ts';

/** How the service signed cookies before it used Keygrip. */
const earlierSignature = (data: string, key: string) => createHmac('sha1', key).update(data).digest('base64url');

describe('cookieKeys', () => {
  const [newest, older] = [randomBytes(32).toString('hex'), randomBytes(32).toString('hex')];
  const cookie = () => `mia_session=${randomBytes(32).toString('base64url')}`;

  it('signs as Keygrip and as the earlier signer did, with the newest key', () => {
    const keys = cookieKeys([newest, older]);
    for (let i = 0; i < 20; i++) {
      const data = cookie();
      assert.equal(keys.sign(data), new Keygrip([newest]).sign(data));
      assert.equal(keys.sign(data), earlierSignature(data, newest));
    }
  });

  it('accepts cookies signed earlier, ranks an older key second and refuses a forged or altered signature', () => {
    const keys = cookieKeys([newest, older]);
    const data = cookie();
    assert.equal(keys.index(data, earlierSignature(data, newest)), 0);
    assert.equal(keys.index(data, earlierSignature(data, newest)), 0, 'again, remembered');
    const other = cookie();
    assert.equal(keys.index(other, earlierSignature(other, older)), 1);
    assert.equal(
      keys.index(other, earlierSignature(other, older)),
      1,
      'an older key stays second (the cookie is re-signed)',
    );
    assert.equal(keys.index(data, earlierSignature(data, randomBytes(32).toString('hex'))), -1);
    assert.equal(
      keys.index(data, earlierSignature(data, newest).slice(0, -1)),
      -1,
      'a remembered cookie with another signature',
    );
    assert.equal(keys.index(data, earlierSignature(data, newest)), 0, 'the remembered one still');
    assert.equal(keys.verify(cookie(), 'x'.repeat(27)), false);
  });
});
