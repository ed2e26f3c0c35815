/**
 * Provider tokens at rest (runtime-contract part 2, TOKEN_ENCRYPTION_KEY): AES-256-GCM with a
 * random IV, authenticated (tampering is detected), keyed by id so keys can rotate.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createDecipheriv, randomBytes } from 'node:crypto';
import { createTokenCrypto } from '../../../../server/domain/auth/token-crypto.ts';

const key = () => randomBytes(32);

function mutate(stored: string, index: number): string {
  const parts = stored.split('.');
  const p = parts[index];
  parts[index] = (p[0] === 'A' ? 'B' : 'A') + p.slice(1);
  return parts.join('.');
}

describe('createTokenCrypto', () => {
  it('round-trips, with a fresh IV per encryption and no plaintext in the output', () => {
    const crypto = createTokenCrypto([key()]);
    for (const plaintext of ['1//0refresh-token-value', 'ya29.access', '', 'ünïcödé ✓']) {
      const a = crypto.encrypt(plaintext);
      const b = crypto.encrypt(plaintext);
      assert.notEqual(a, b, 'random IV');
      assert.equal(crypto.decrypt(a), plaintext);
      assert.equal(crypto.decrypt(b), plaintext);
      if (plaintext) assert.ok(!a.includes(plaintext));
    }
  });

  it('is AES-256-GCM under the given key (decryptable with the standard primitives)', () => {
    const k = key();
    const crypto = createTokenCrypto([k]);
    const [version, keyId, iv, tag, ct] = crypto.encrypt('secret').split('.');
    assert.equal(version, 'v1');
    assert.equal(keyId, crypto.keyId);
    assert.equal(Buffer.from(iv, 'base64url').length, 12);
    assert.equal(Buffer.from(tag, 'base64url').length, 16);
    const d = createDecipheriv('aes-256-gcm', k, Buffer.from(iv, 'base64url'));
    d.setAAD(Buffer.from(keyId));
    d.setAuthTag(Buffer.from(tag, 'base64url'));
    assert.equal(Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString(), 'secret');
  });

  it('detects tampering with the IV, tag or ciphertext, and refuses unknown versions or keys', () => {
    const crypto = createTokenCrypto([key()]);
    const stored = crypto.encrypt('a token long enough to have several blocks of ciphertext');
    for (const index of [2, 3, 4]) assert.throws(() => crypto.decrypt(mutate(stored, index)), `part ${index}`);
    assert.throws(() => crypto.decrypt(stored.replace(/^v1\./, 'v2.')), /unknown key/);
    assert.throws(() => crypto.decrypt(stored.replace(crypto.keyId, 'ffffffffffff')), /unknown key/);
    assert.throws(() => crypto.decrypt('garbage'));
    assert.throws(() => createTokenCrypto([key()]).decrypt(stored), /unknown key/);
  });

  it('rotation: the first key encrypts, every key decrypts', () => {
    const oldKey = key();
    const newKey = key();
    const before = createTokenCrypto([oldKey]);
    const during = createTokenCrypto([newKey, oldKey]);
    const after = createTokenCrypto([newKey]);
    const old = before.encrypt('old-token');
    assert.equal(during.decrypt(old), 'old-token');
    const fresh = during.encrypt('new-token');
    assert.equal(during.keyId, after.keyId);
    assert.notEqual(during.keyId, before.keyId);
    assert.equal(after.decrypt(fresh), 'new-token');
    assert.throws(() => after.decrypt(old), /unknown key/);
  });

  it('refuses keys that are not 32 bytes, and an empty key list', () => {
    assert.throws(() => createTokenCrypto([]), /32-byte/);
    assert.throws(() => createTokenCrypto([randomBytes(16)]), /32-byte/);
    assert.throws(() => createTokenCrypto([key(), randomBytes(31)]), /32-byte/);
  });
});
