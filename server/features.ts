/**
 * Wires the feature areas into the container: their plain routes and background workers.
 * Kept apart from buildContainer so tests can build a container with overrides first.
 */
import type { Container } from './container.ts';

export function installFeatures(_container: Container): void {
  // OAuth redirect routes, the sync service and the notification poller plug in here.
}
