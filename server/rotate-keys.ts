/**
 * `npm run rotate-keys`: re-encrypts every stored provider token under the newest key of
 * TOKEN_ENCRYPTION_KEY (the first of the comma-separated list). Rotation: put the new key
 * first and keep the old one after it, deploy, run this, then remove the old key. Reads the
 * same environment as `npm start` (DATABASE_URL, or the embedded PostgreSQL in .data/).
 * Exits 1 if any row could not be read with the configured keys (those rows are left as
 * they are; their accounts reconnect). It reads v1 ciphertexts whatever TOKEN_ACCEPT_V1 says:
 * rewriting them as v2, bound to their account, is what lets production refuse them.
 */
import path from 'node:path';
import { loadConfig, ConfigError } from './infra/config.ts';
import { openDatabase, startEmbeddedPostgres } from './infra/database.ts';
import { withDevSecrets } from './infra/dev-secrets.ts';
import { createCredentialsService } from './domain/auth/credentials.service.ts';
import { createTokenCrypto } from './domain/auth/token-crypto.ts';
import { createLogger } from './infra/logger.ts';
import { createOAuthProvider } from './providers/oauth.ts';

const DATA_DIR = path.resolve(process.env.MIA_DATA_DIR ?? '.data');

async function main(): Promise<number> {
  const config = await withDevSecrets(loadConfig(process.env), DATA_DIR);
  const log = createLogger({ level: config.logLevel });
  const embedded = config.databaseUrl
    ? undefined
    : await startEmbeddedPostgres({ dataDir: path.join(DATA_DIR, 'postgres') });
  const orm = await openDatabase(config.databaseUrl ?? embedded!.url);
  try {
    const crypto = createTokenCrypto(config.tokenKeys!, { acceptV1: true });
    const credentials = createCredentialsService({ orm, crypto, oauth: createOAuthProvider(config), log });
    const counts = await credentials.rotateAll(orm.em.fork());
    log.info({ ...counts, keyId: crypto.keyId }, 'provider tokens re-encrypted under the newest key');
    process.stdout.write(
      `rotated ${counts.rotated}, already current ${counts.current}, unreadable ${counts.unreadable} (newest key ${crypto.keyId})\n`,
    );
    return counts.unreadable ? 1 : 0;
  } finally {
    await orm.close(true);
    await embedded?.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(
      `${err instanceof ConfigError ? err.message : `rotate-keys failed: ${err instanceof Error ? err.message : String(err)}`}\n`,
    );
    process.exit(1);
  },
);
