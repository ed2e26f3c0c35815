/**
 * Wires the feature areas into the container: their plain routes and background workers.
 * Kept apart from buildContainer so tests can build a container with overrides first.
 */
import type { Container } from './container.ts';
import { oauthRoutes } from './http/oauth.routes.ts';
import { createSyncService } from './domain/mail/sync.service.ts';
import { createThreadBodies } from './domain/mail/thread.service.ts';
import { installLiveInbox } from './domain/mail/live-inbox.ts';
import { createGmailFactory } from './providers/gmail.ts';

export function installFeatures(container: Container): void {
  container.extraRoutes.push(oauthRoutes({ config: container.config, auth: container.auth, sessions: container.sessions, orm: container.orm }));
  const gmail = createGmailFactory({ rootUrl: container.config.gmailApiUrl });
  container.sync = createSyncService({ orm: container.orm, gmail, credentials: container.credentials, log: container.log });
  container.threadBodies = createThreadBodies({ gmail, credentials: container.credentials });
  installLiveInbox(container, gmail);
}
