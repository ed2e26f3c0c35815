/**
 * `npm run demo`: the service with local stand-ins of every provider, a seeded mailbox and
 * live mail arriving, plus the demo web client. Nothing here needs an account anywhere.
 *
 * Ports and address: the API listens on DEMO_API_PORT, else PORT, else 3000; the web client
 * on DEMO_WEB_PORT, else 5173; both bind HOST (default 127.0.0.1; 0.0.0.0 in a container).
 */
import path from 'node:path';
import { firstStopSignal } from '../server/infra/signals.ts';
import { DEMO_USER, startDemo } from './start-demo.ts';

const port = (value: string | undefined, name: string) => {
  if (value === undefined || value === '') return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0 || n > 65_535)
    throw new Error(`${name} must be a port number (0-65535), got ${JSON.stringify(value)}`);
  return n;
};

// Before anything starts: a Ctrl-C during start-up stops the demo once it is up.
const stopSignal = firstStopSignal();
const newMailEveryMs = Number(process.env.DEMO_NEW_MAIL_MS ?? 30_000);
const demo = await startDemo({
  apiPort: port(process.env.DEMO_API_PORT, 'DEMO_API_PORT') ?? port(process.env.PORT, 'PORT') ?? 3000,
  webPort: port(process.env.DEMO_WEB_PORT, 'DEMO_WEB_PORT') ?? 5173,
  host: process.env.HOST || '127.0.0.1',
  dataDir: path.resolve(process.env.MIA_DATA_DIR ?? '.data'),
  newMailEveryMs,
});

const { seed, live } = demo.journal;
console.log(`
Mail Inbox Assistant demo
  web client   ${demo.webOrigin}            <- open this, press "Sign in"
  API          ${demo.apiBase}   (/, /health, /status, /docs, /openapi.json)
  mailbox      ${DEMO_USER.email}: ${seed.count} seeded messages${live.length ? ` and ${live.length} that arrived earlier` : ''}, a new one every ${Math.round(newMailEveryMs / 1000)} s
               (kept in ${demo.journal.file} with the database; delete the data directory to start over)
  status admin Authorization: Bearer ${demo.config.statusAdminToken}
Ctrl-C stops everything.
`);

await stopSignal;
await demo.close();
process.exit(0);
