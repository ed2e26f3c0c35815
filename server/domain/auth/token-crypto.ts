/**
 * Provider tokens at rest: AES-256-GCM under TOKEN_ENCRYPTION_KEY. The first key encrypts;
 * every configured key decrypts, found by the key id stored with the ciphertext, so keys
 * can rotate (add the new key first, keep the old one until re-encrypted).
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export interface TokenCrypto {
  keyId: string;
  encrypt(plaintext: string): string;
  decrypt(stored: string): string;
}

const idOf = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 12);

export function createTokenCrypto(keys: Buffer[]): TokenCrypto {
  if (!keys.length || keys.some((k) => k.length !== 32)) throw new Error('token encryption needs 32-byte keys');
  const byId = new Map(keys.map((k) => [idOf(k), k]));
  const current = keys[0];
  const keyId = idOf(current);
  return {
    keyId,
    encrypt(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', current, iv);
      cipher.setAAD(Buffer.from(keyId));
      const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return ['v1', keyId, iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
    },
    decrypt(stored) {
      const [version, id, iv, tag, ct] = stored.split('.');
      const key = byId.get(id);
      if (version !== 'v1' || !key) throw new Error('token was encrypted with an unknown key');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(id));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}
