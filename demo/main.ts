/**
 * `npm run demo`: the service with local stand-ins of every provider, a seeded mailbox and
 * live mail arriving, plus the demo web client. Nothing here needs an account anywhere.
 */
import path from 'node:path';
import { DEMO_USER, startDemo } from './start-demo.ts';

const newMailEveryMs = Number(process.env.DEMO_NEW_MAIL_MS ?? 30_000);
const demo = await startDemo({
  apiPort: Number(process.env.DEMO_API_PORT ?? 3000),
  webPort: Number(process.env.DEMO_WEB_PORT ?? 5173),
  dataDir: path.resolve(process.env.MIA_DATA_DIR ?? '.data'),
  newMailEveryMs,
});

console.log(`
Mail Inbox Assistant demo
  web client   ${demo.webOrigin}            <- open this, press "Sign in"
  API          ${demo.apiBase}   (/, /health, /status, /docs, /openapi.json)
  mailbox      ${DEMO_USER.email}: 300 seeded messages, a new one every ${Math.round(newMailEveryMs / 1000)} s
  status admin Authorization: Bearer ${demo.config.statusAdminToken}
Ctrl-C stops everything.
`);

let stopping = false;
async function stop() {
  if (stopping) return;
  stopping = true;
  await demo.close();
  process.exit(0);
}
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
