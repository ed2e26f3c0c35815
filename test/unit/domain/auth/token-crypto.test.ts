/**
 * Provider tokens at rest (runtime-contract part 2, TOKEN_ENCRYPTION_KEY): AES-256-GCM with a
 * random IV and a pinned 16-byte tag, bound to its account and field, keyed by id so keys can
 * rotate; the first format (v1) still decrypts and counts as stale.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { createTokenCrypto, type TokenContext } from '../../../../server/domain/auth/token-crypto.ts';

const key = () => randomBytes(32);
const ALICE: TokenContext = { accountId: '6f9619ff-8b86-4d01-b42d-00cf4fc964ff', field: 'refresh' };

function mutate(stored: string, index: number): string {
  const parts = stored.split('.');
  const p = parts[index]!;
  parts[index] = (p[0] === 'A' ? 'B' : 'A') + p.slice(1);
  return parts.join('.');
}

/** A ciphertext as the first format wrote it: additional data only the key id. */
function v1(k: Buffer, keyId: string, plaintext: string): string {
  const iv = randomBytes(12);
  const c = createCipheriv('aes-256-gcm', k, iv);
  c.setAAD(Buffer.from(keyId));
  const ct = Buffer.concat([c.update(plaintext, 'utf8'), c.final()]);
  return ['v1', keyId, iv.toString('base64url'), c.getAuthTag().toString('base64url'), ct.toString('base64url')].join(
    '.',
  );
}

describe('createTokenCrypto', () => {
  it('round-trips, with a fresh IV per encryption and no plaintext in the output', () => {
    const crypto = createTokenCrypto([key()]);
    for (const plaintext of ['1//0refresh-token-value', 'ya29.access', '', 'ünïcödé ✓']) {
      const a = crypto.encrypt(plaintext, ALICE);
      const b = crypto.encrypt(plaintext, ALICE);
      assert.notEqual(a, b, 'random IV');
      assert.equal(crypto.decrypt(a, ALICE), plaintext);
      assert.equal(crypto.decrypt(b, ALICE), plaintext);
      if (plaintext) assert.ok(!a.includes(plaintext));
    }
  });

  it('is AES-256-GCM under the given key with the owner and field as additional data', () => {
    const k = key();
    const crypto = createTokenCrypto([k]);
    const [version, keyId, iv, tag, ct] = crypto.encrypt('secret', ALICE).split('.') as [
      string,
      string,
      string,
      string,
      string,
    ];
    assert.equal(version, 'v2');
    assert.equal(keyId, crypto.keyId);
    assert.equal(Buffer.from(iv, 'base64url').length, 12);
    assert.equal(Buffer.from(tag, 'base64url').length, 16);
    const d = createDecipheriv('aes-256-gcm', k, Buffer.from(iv, 'base64url'), { authTagLength: 16 });
    d.setAAD(Buffer.from(`v2|${keyId}|${ALICE.accountId}|refresh`));
    d.setAuthTag(Buffer.from(tag, 'base64url'));
    assert.equal(Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString(), 'secret');
  });

  it('binds a ciphertext to its account and field: moved to another row or field, it does not decrypt', () => {
    const crypto = createTokenCrypto([key()]);
    const stored = crypto.encrypt('victim-refresh-token', ALICE);
    assert.throws(
      () => crypto.decrypt(stored, { accountId: '00000000-0000-4000-8000-000000000000', field: 'refresh' }),
      /authenticate/,
    );
    assert.throws(() => crypto.decrypt(stored, { ...ALICE, field: 'access' }), /authenticate/);
  });

  it('detects tampering, refuses unknown versions or keys, and a tag of any length but 16', () => {
    const crypto = createTokenCrypto([key()]);
    const stored = crypto.encrypt('a token long enough to have several blocks of ciphertext', ALICE);
    for (const index of [2, 3, 4]) assert.throws(() => crypto.decrypt(mutate(stored, index), ALICE), `part ${index}`);
    assert.throws(() => crypto.decrypt(stored.replace(/^v2\./, 'v3.'), ALICE), /unknown key/);
    assert.throws(() => crypto.decrypt(stored.replace(crypto.keyId, 'ffffffffffff'), ALICE), /unknown key/);
    assert.throws(() => crypto.decrypt('garbage', ALICE));
    assert.throws(() => createTokenCrypto([key()]).decrypt(stored, ALICE), /unknown key/);
    const parts = stored.split('.');
    parts[3] = Buffer.from(parts[3]!, 'base64url').subarray(0, 12).toString('base64url');
    assert.throws(() => crypto.decrypt(parts.join('.'), ALICE), /authentication tag/);
  });

  it('reads the first format (v1), and calls it stale; a current v2 is not', () => {
    const k = key();
    const crypto = createTokenCrypto([k]);
    const old = v1(k, crypto.keyId, 'legacy-token');
    assert.equal(crypto.decrypt(old, ALICE), 'legacy-token');
    assert.equal(crypto.isStale(old), true);
    assert.equal(crypto.isStale(crypto.encrypt('x', ALICE)), false);
  });

  it('refuses the unbound first format (v1) when told to, still reading v2', () => {
    const k = key();
    const strict = createTokenCrypto([k], { acceptV1: false });
    assert.throws(() => strict.decrypt(v1(k, strict.keyId, 'legacy-token'), ALICE), /v1 format, refused/);
    assert.equal(strict.decrypt(strict.encrypt('current', ALICE), ALICE), 'current');
  });

  it('rotation: the first key encrypts, every key decrypts, older keys are stale', () => {
    const oldKey = key();
    const newKey = key();
    const before = createTokenCrypto([oldKey]);
    const during = createTokenCrypto([newKey, oldKey]);
    const after = createTokenCrypto([newKey]);
    const old = before.encrypt('old-token', ALICE);
    assert.equal(during.decrypt(old, ALICE), 'old-token');
    assert.equal(during.isStale(old), true);
    const fresh = during.encrypt('new-token', ALICE);
    assert.equal(during.keyId, after.keyId);
    assert.notEqual(during.keyId, before.keyId);
    assert.equal(after.decrypt(fresh, ALICE), 'new-token');
    assert.throws(() => after.decrypt(old, ALICE), /unknown key/);
  });

  it('refuses keys that are not 32 bytes, and an empty key list', () => {
    assert.throws(() => createTokenCrypto([]), /32-byte/);
    assert.throws(() => createTokenCrypto([randomBytes(16)]), /32-byte/);
    assert.throws(() => createTokenCrypto([key(), randomBytes(31)]), /32-byte/);
  });
});
