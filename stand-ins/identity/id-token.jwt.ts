/**
 * Signs the identity stand-in's RS256 id_tokens and publishes the key as a JWKS; one RSA key per
 * process, generated on first use. Also the random token text the stand-in hands out.
 */
import { generateKeyPair, randomBytes, sign as cryptoSign, type KeyObject } from 'node:crypto';

export const random = (bytes = 32) => randomBytes(bytes).toString('base64url');

// One RSA key per process for id_token signing, generated on first use (keygen is slow-ish).
let signingKeyPromise: Promise<{ privateKey: KeyObject; jwk: Record<string, unknown> }> | undefined;
export function signingKey() {
  signingKeyPromise ??= new Promise((resolve, reject) => {
    generateKeyPair('rsa', { modulusLength: 2048 }, (err, publicKey, privateKey) => {
      if (err) return reject(err);
      const jwk = { ...publicKey.export({ format: 'jwk' }), kid: random(12), alg: 'RS256', use: 'sig' };
      resolve({ privateKey, jwk });
    });
  });
  return signingKeyPromise;
}

export async function signJwt(payload: Record<string, unknown>): Promise<string> {
  const { privateKey, jwk } = await signingKey();
  const header = { alg: 'RS256', kid: jwk['kid'], typ: 'JWT' };
  const input = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(payload)).toString('base64url')}`;
  return `${input}.${cryptoSign('sha256', Buffer.from(input), privateKey).toString('base64url')}`;
}
