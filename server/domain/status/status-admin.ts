/** The status admin's credential (STATUS_ADMIN_TOKEN), checked in constant time; none configured refuses all. */
import { timingSafeEqual } from 'node:crypto';
import { sha256 } from '../hash.ts';

export interface StatusAdmin {
  allows(bearerToken: string | undefined): boolean;
  /** Who wrote, for the audit line: a fingerprint of the credential (never the credential). */
  actorOf(bearerToken: string | undefined): string;
}

export function createStatusAdmin(token: string | undefined): StatusAdmin {
  const expected = token ? sha256(token) : undefined;
  return {
    allows: (given) => !!expected && !!given && timingSafeEqual(expected, sha256(given)),
    actorOf: (given) => (given ? `admin:${sha256(given).toString('hex').slice(0, 8)}` : 'anonymous'),
  };
}
