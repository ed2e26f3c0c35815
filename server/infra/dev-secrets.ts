/**
 * Outside production, a missing SESSION_SECRET or TOKEN_ENCRYPTION_KEY is generated once
 * and kept in `.data/secrets.json` (mode 0600), so restarts keep sessions and can decrypt
 * stored tokens. Production refuses to start without them (see config.ts).
 */
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Config } from './config.ts';

export async function withDevSecrets(config: Readonly<Config>, dataDir: string): Promise<Readonly<Config>> {
  if (config.sessionKeys && config.tokenKeys) return config;
  const file = path.join(dataDir, 'secrets.json');
  let stored: { sessionSecret?: string; tokenKey?: string } = {};
  try {
    stored = JSON.parse(await readFile(file, 'utf8'));
  } catch {
    // first start: nothing stored yet
  }
  stored.sessionSecret ??= randomBytes(32).toString('base64url');
  stored.tokenKey ??= randomBytes(32).toString('base64');
  await mkdir(dataDir, { recursive: true });
  await writeFile(file, JSON.stringify(stored, null, 2), { mode: 0o600 });
  return Object.freeze({
    ...config,
    sessionKeys: config.sessionKeys ?? [stored.sessionSecret],
    tokenKeys: config.tokenKeys ?? [Buffer.from(stored.tokenKey, 'base64')],
  });
}
