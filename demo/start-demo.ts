/**
 * The demo: the real service wired to local stand-ins of the identity, mail, queue and AI
 * providers, with a seeded mailbox of a few hundred messages and a new message arriving
 * every so often (its notification goes through the Pub/Sub stand-in to the service's
 * intake), plus a small web client built with the typed client on the web origin, which
 * follows the account's live events (no polling, so the default rate limit suits it).
 *
 * Restarts: the database is kept in the data directory, and so is the mailbox (see
 * mailbox-journal.ts): the stand-in is re-seeded with the first start's parameters and
 * the live messages are replayed, so the kept database and the mailbox agree. A data
 * directory without a journal (a first start, or one from an older demo) gets a fresh
 * embedded database too; the old one is moved aside, never deleted.
 *
 * The account starts with triage of new mail on (demo-account.ts), set at its first sign-in.
 */
import { existsSync, renameSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../server/infra/config.ts';
import { withDevSecrets } from '../server/infra/dev-secrets.ts';
import { startService } from '../server/start-service.ts';
import { startGmailStandIn, type NewMessage, type StandInMessage } from '../stand-ins/gmail.stand-in.ts';
import { startIdentityStandIn } from '../stand-ins/identity.stand-in.ts';
import { startOpenAIStandIn } from '../stand-ins/openai.stand-in.ts';
import { startPubSubStandIn } from '../stand-ins/pubsub.stand-in.ts';
import { identityEnv } from '../stand-ins/stand-in-env.ts';
import { demoResponder } from './ai-responder.ts';
import { demoAccountDefaults } from './demo-account.ts';
import { liveMessage } from './live-mail.ts';
import { openMailboxJournal } from './mailbox-journal.ts';
import { CONSENT_PATH, startWebClient } from './web-server.ts';

export interface DemoOptions {
  apiPort: number;
  webPort: number;
  /** Address both servers bind (default 127.0.0.1; 0.0.0.0 in a container). */
  host?: string;
  dataDir: string;
  /** Use this database instead of an embedded one. */
  databaseUrl?: string;
  newMailEveryMs: number;
  /** Messages seeded at the first start (a restart keeps the first start's mailbox). */
  seedMessages?: number;
  quiet?: boolean;
}

export const DEMO_USER = { sub: 'demo-user-alice', email: 'alice@example.com' };
const EMBEDDED_DIR = 'demo-postgres';

/** The host name a browser uses to reach a server bound to `host`. */
export function browserHost(host: string): string {
  if (host === '0.0.0.0' || host === '::' || host === '127.0.0.1' || host === '::1' || host === 'localhost')
    return 'localhost';
  return host.includes(':') ? `[${host}]` : host;
}

/**
 * A new mailbox needs a new database: the threads of an old embedded one belong to a mailbox
 * nobody can rebuild. Moves it aside (never deletes it); returns where, or null if there was none.
 */
export function setAsideDatabase(embeddedDir: string, now = Date.now()): string | null {
  if (!existsSync(embeddedDir)) return null;
  const aside = `${embeddedDir}.stale-${now}`;
  renameSync(embeddedDir, aside);
  return aside;
}

export async function startDemo(opts: DemoOptions) {
  const USER = DEMO_USER;
  const host = opts.host ?? '127.0.0.1';
  const log = (line: string) => opts.quiet || console.log(line);
  const databaseUrl = opts.databaseUrl ?? process.env.DATABASE_URL;
  const journal = openMailboxJournal(opts.dataDir, {
    email: USER.email,
    seed: 1,
    count: opts.seedMessages ?? 300,
    spanDays: 45,
  });
  const embeddedDir = path.join(opts.dataDir, EMBEDDED_DIR);
  const aside = journal.fresh && !databaseUrl ? setAsideDatabase(embeddedDir) : null;
  if (aside) log(`demo: the mailbox is new, so the demo database that was there is now ${aside}`);

  const identity = await startIdentityStandIn({ users: [USER] });
  const gmail = await startGmailStandIn({
    seed: journal.seed.seed,
    authorize: (token) => identity.accessTokenOwner(token)?.email ?? null,
  });
  gmail.seed(USER.email, journal.seed.count, { spanDays: journal.seed.spanDays, now: journal.seed.now });
  for (const m of journal.live) gmail.addMessage(USER.email, m);
  const pubsub = await startPubSubStandIn({ projectId: 'demo-project' });
  pubsub.createTopic('mail');
  pubsub.createSubscription('mail', 'mail-sync', { ackDeadlineSeconds: 30 });
  gmail.onNotification((n) =>
    pubsub.publish(n.topicName, { emailAddress: n.emailAddress, historyId: String(n.historyId) }),
  );
  const openai = await startOpenAIStandIn({ latencyMs: 400 });
  openai.setResponder(demoResponder);

  const apiBase = `http://${browserHost(host)}:${opts.apiPort}`;
  const webOrigin = `http://${browserHost(host)}:${opts.webPort}`;
  const config = await withDevSecrets(
    loadConfig({
      AI_DAILY_TOKEN_BUDGET: '200000',
      ...process.env,
      PORT: String(opts.apiPort),
      HOST: host,
      PUBLIC_BASE_URL: apiBase,
      WEB_ORIGIN: webOrigin,
      DATABASE_URL: databaseUrl,
      ...identityEnv(identity),
      // The consent page is relayed by the web client's server: the stand-in itself listens on 127.0.0.1 only.
      GOOGLE_AUTH_URL: `${webOrigin}${CONSENT_PATH}`,
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
  const defaults = demoAccountDefaults(USER.sub, log);
  const service = await startService({
    config,
    embeddedDataDir: embeddedDir,
    embeddedDatabase: 'mia_demo',
    stopGraceMs: 2_000,
    overrides: { mailWatch: defaults.mailWatch },
  });
  // Before the web client starts: every sign-in passes its consent relay, so none comes earlier.
  await defaults.attach(service.container).catch(async (err: unknown) => {
    await service.stop();
    throw err;
  });
  const web = await startWebClient({ port: opts.webPort, host, apiBase, consentUrl: identity.authUrl });

  /** Delivers a message to the mailbox as the provider would, and journals it (restarts replay it). */
  function deliver(partial: NewMessage): StandInMessage {
    const m = gmail.addMessage(USER.email, partial);
    journal.append({ ...partial, id: m.id, internalDate: m.internalDate });
    return m;
  }
  const ticker = setInterval(() => deliver(liveMessage(journal.live.length)), opts.newMailEveryMs);

  return {
    apiBase,
    webOrigin,
    config,
    gmail,
    openai,
    journal,
    deliver,
    async close() {
      clearInterval(ticker);
      await service.stop();
      await Promise.all([web.close(), identity.close(), gmail.close(), pubsub.close(), openai.close()]);
    },
  };
}
