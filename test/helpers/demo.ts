/**
 * `npm run demo` for a browser test: the real demo (service, stand-ins, web client) on free
 * ports, its own database and data directory, no timed new mail, closed after the test.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startDemo } from '../../demo/start-demo.ts';
import { freePort } from '../../server/infra/database.ts';
import { createTestDatabase } from './database.ts';

export async function startTestDemo(
  t: { after(fn: () => unknown): void },
  opts: { seedMessages: number; dataDirPrefix: string },
) {
  const db = await createTestDatabase();
  const demo = await startDemo({
    apiPort: await freePort(),
    webPort: await freePort(),
    dataDir: mkdtempSync(path.join(tmpdir(), opts.dataDirPrefix)),
    databaseUrl: db.url,
    newMailEveryMs: 60 * 60_000,
    seedMessages: opts.seedMessages,
    quiet: true,
  });
  t.after(async () => {
    await demo.close();
    await db.drop();
  });
  return demo;
}
