/** The status admin's credential (STATUS_ADMIN_TOKEN), checked in constant time; none configured refuses all. */
import { timingSafeEqual } from 'node:crypto';
import { sha256 } from '../hash.ts';

export interface StatusAdmin {
  allows(bearerToken: string | undefined): boolean;
}

export function createStatusAdmin(token: string | undefined): StatusAdmin {
  const expected = token ? sha256(token) : undefined;
  return {
    allows: (given) => !!expected && !!given && timingSafeEqual(expected, sha256(given)),
  };
}
