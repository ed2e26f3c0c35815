/**
 * Provider tokens at rest: AES-256-GCM under TOKEN_ENCRYPTION_KEY, with a 16-byte tag (pinned
 * on both sides). Each ciphertext is bound to its owner and its field: the additional data is
 * `v2|keyId|accountId|field`, so a ciphertext copied into another account's row, or from the
 * refresh field into the access field, does not decrypt. The first key encrypts; every
 * configured key decrypts, found by the key id stored with the ciphertext, so keys rotate:
 * add the new key first, re-encrypt (`npm run rotate-keys`, and lazily on use), then drop
 * the old one. Ciphertexts of the first format (v1: additional data only the key id, so not
 * bound to their account) decrypt only while `acceptV1` allows (TOKEN_ACCEPT_V1; off by
 * default in production, where `npm run rotate-keys`, which always reads them, rewrites them
 * as v2), and count as stale so they are rewritten on use.
 */
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

export type TokenField = 'refresh' | 'access';

/** Whose token, and which one: the additional data every ciphertext is bound to. */
export interface TokenContext {
  accountId: string;
  field: TokenField;
}

export interface TokenCrypto {
  /** The id of the key that encrypts (the newest). */
  keyId: string;
  encrypt(plaintext: string, context: TokenContext): string;
  decrypt(stored: string, context: TokenContext): string;
  /** True when a stored value is of the old format or under an older key: re-encrypt it. */
  isStale(stored: string): boolean;
}

const TAG_BYTES = 16;
const idOf = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 12);
const aad = (keyId: string, c: TokenContext) => Buffer.from(`v2|${keyId}|${c.accountId}|${c.field}`);

export interface TokenCryptoOptions {
  /** Decrypt v1 ciphertexts, which any account's row could hold (default true). */
  acceptV1?: boolean;
}

export function createTokenCrypto(keys: Buffer[], options: TokenCryptoOptions = {}): TokenCrypto {
  const acceptV1 = options.acceptV1 ?? true;
  if (!keys.length || keys.some((k) => k.length !== 32)) throw new Error('token encryption needs 32-byte keys');
  const byId = new Map(keys.map((k) => [idOf(k), k]));
  const current = keys[0]!;
  const keyId = idOf(current);
  return {
    keyId,
    encrypt(plaintext, context) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', current, iv, { authTagLength: TAG_BYTES });
      cipher.setAAD(aad(keyId, context));
      const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return [
        'v2',
        keyId,
        iv.toString('base64url'),
        cipher.getAuthTag().toString('base64url'),
        ct.toString('base64url'),
      ].join('.');
    },
    decrypt(stored, context) {
      const [version, id = '', iv = '', tag = '', ct = ''] = stored.split('.');
      const key = byId.get(id);
      if (version === 'v1' && !acceptV1)
        throw new Error('token is of the unbound v1 format, refused (TOKEN_ACCEPT_V1)');
      if ((version !== 'v1' && version !== 'v2') || !key) throw new Error('token was encrypted with an unknown key');
      const authTag = Buffer.from(tag, 'base64url');
      if (authTag.length !== TAG_BYTES) throw new Error('token has a malformed authentication tag');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), { authTagLength: TAG_BYTES });
      decipher.setAAD(version === 'v2' ? aad(id, context) : Buffer.from(id));
      decipher.setAuthTag(authTag);
      return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
    },
    isStale(stored) {
      const [version, id] = stored.split('.');
      return version !== 'v2' || id !== keyId;
    },
  };
}
