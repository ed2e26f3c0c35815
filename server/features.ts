/**
 * Wires the feature areas into the container: their plain routes and background workers.
 * Kept apart from buildContainer so tests can build a container with overrides first.
 */
import type { Container } from './container.ts';
import { oauthRoutes } from './http/oauth.routes.ts';

export function installFeatures(container: Container): void {
  container.extraRoutes.push(oauthRoutes({ config: container.config, auth: container.auth, sessions: container.sessions, orm: container.orm }));
}
