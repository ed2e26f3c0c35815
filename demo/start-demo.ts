/**
 * The demo: the real service wired to local stand-ins of the identity, mail, queue and AI
 * providers, with a seeded mailbox of a few hundred messages and a new message arriving
 * every so often (its notification goes through the Pub/Sub stand-in to the service's
 * poller), plus a small web client built with the typed client on the web origin.
 */
import path from 'node:path';
import { loadConfig } from '../server/config.ts';
import { withDevSecrets } from '../server/dev-secrets.ts';
import { startService } from '../server/service.ts';
import { startGmailStandIn } from '../stand-ins/gmail.stand-in.ts';
import { startIdentityStandIn } from '../stand-ins/identity.stand-in.ts';
import { startOpenAIStandIn } from '../stand-ins/openai.stand-in.ts';
import { startPubSubStandIn } from '../stand-ins/pubsub.stand-in.ts';
import { demoResponder } from './ai-responder.ts';
import { startWebClient } from './web-server.ts';
import { identityEnv } from '../stand-ins/stand-in-env.ts';

export interface DemoOptions {
  apiPort: number;
  webPort: number;
  dataDir: string;
  /** Use this database instead of an embedded one. */
  databaseUrl?: string;
  newMailEveryMs: number;
  seedMessages?: number;
  quiet?: boolean;
}

export const DEMO_USER = { sub: 'demo-user-alice', email: 'alice@example.com' };
const SUBJECTS = ['Quick question about the invoice', 'URGENT: production outage', 'Lunch on Friday?', 'Weekly digest — unsubscribe anytime', 'Can you review my draft?'];

export async function startDemo(opts: DemoOptions) {
  const USER = DEMO_USER;
  const identity = await startIdentityStandIn({ users: [USER] });
  const gmail = await startGmailStandIn({ authorize: (token) => identity.accessTokenOwner(token)?.email ?? null });
  gmail.seed(USER.email, opts.seedMessages ?? 300, { spanDays: 45 });
  const pubsub = await startPubSubStandIn({ projectId: 'demo-project' });
  pubsub.createTopic('mail');
  pubsub.createSubscription('mail', 'mail-sync', { ackDeadlineSeconds: 30 });
  gmail.onNotification((n) => pubsub.publish(n.topicName, { emailAddress: n.emailAddress, historyId: String(n.historyId) }));
  const openai = await startOpenAIStandIn({ latencyMs: 400 });
  openai.setResponder(demoResponder);

  const apiBase = `http://localhost:${opts.apiPort}`;
  const webOrigin = `http://localhost:${opts.webPort}`;
  const config = await withDevSecrets(
    loadConfig({
      ...process.env,
      PORT: String(opts.apiPort),
      HOST: '127.0.0.1',
      PUBLIC_BASE_URL: apiBase,
      WEB_ORIGIN: webOrigin,
      DATABASE_URL: opts.databaseUrl ?? process.env.DATABASE_URL,
      ...identityEnv(identity),
      GMAIL_API_URL: gmail.url,
      PUBSUB_PROJECT_ID: 'demo-project',
      PUBSUB_TOPIC: 'projects/demo-project/topics/mail',
      PUBSUB_SUBSCRIPTION: 'mail-sync',
      PUBSUB_EMULATOR_HOST: pubsub.host,
      OPENAI_API_KEY: openai.apiKey,
      OPENAI_BASE_URL: openai.baseUrl,
      STATUS_ADMIN_TOKEN: process.env.STATUS_ADMIN_TOKEN ?? 'demo-status-admin-token',
      LOG_LEVEL: opts.quiet ? 'warn' : (process.env.LOG_LEVEL ?? 'info'),
    }),
    opts.dataDir,
  );
  const service = await startService({ config, embeddedDataDir: path.join(opts.dataDir, 'demo-postgres'), embeddedDatabase: 'mia_demo', stopGraceMs: 2_000 });
  const web = await startWebClient({ port: opts.webPort, apiBase });

  let counter = 0;
  const ticker = setInterval(() => {
    const subject = SUBJECTS[counter++ % SUBJECTS.length];
    gmail.addMessage(USER.email, { subject, from: { name: 'Demo Sender', address: 'sender@example.org' }, bodyText: `${subject}\n\nThis message arrived live at ${new Date().toLocaleTimeString()}. Could you take a look?` });
  }, opts.newMailEveryMs);

  return {
    apiBase,
    webOrigin,
    config,
    gmail,
    async close() {
      clearInterval(ticker);
      await service.stop();
      await Promise.all([web.close(), identity.close(), gmail.close(), pubsub.close(), openai.close()]);
    },
  };
}
