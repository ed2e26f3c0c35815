/**
 * The demo account starts with triage of new mail on (`autoTriage`, issue 45), so a fresh
 * `npm run demo` shows the feature without a trip to the settings. The account only exists
 * once the browser signs in, and the one call a sign-in makes with the account's id after
 * its commit is the mail watch's registration: the demo wraps the service's own watch
 * control (a container override) and, after it, turns the setting on through the
 * service's settings service, as PATCH /api/settings does, never by writing the row.
 *
 * Only for an account this run's database did not hold at start, and once: after that the
 * user's choice stands (a later sign-in, a Reconnect, a restart on the kept database).
 */
import { Account } from '../db/entities/index.ts';
import type { Container } from '../server/container.ts';
import type { MailWatchControl } from '../server/domain/auth/auth.service.ts';
import { errorSummary } from '../server/infra/logger.ts';

export function demoAccountDefaults(sub: string, log: (line: string) => void) {
  const ready = Promise.withResolvers<{ container: Container; existed: boolean }>();
  ready.promise.catch(() => {}); // a failed attach fails the start itself (attach throws)
  let done = false;

  async function turnOn(accountId: string): Promise<void> {
    const { container, existed } = await ready.promise;
    if (existed || done) return;
    const em = container.orm.em.fork();
    const account = await em.findOne(Account, { id: accountId });
    if (account?.sub !== sub) return;
    done = true;
    try {
      await container.services.settings.update(em, accountId, { autoTriage: true });
      log(`demo: triage of new mail is on for ${account.email} ("Triage new mail" above the list turns it off)`);
    } catch (err) {
      container.log.warn({ accountId, ...errorSummary(err) }, 'demo: turning autoTriage on failed');
    }
  }

  /** The service's watch control, with the demo's defaults applied after a sign-in's registration. */
  const mailWatch: MailWatchControl = {
    async register(accountId) {
      try {
        await (await ready.promise).container.liveInbox.watch.register(accountId);
      } finally {
        await turnOn(accountId);
      }
    },
    stop: async (em, accountId) => (await ready.promise).container.liveInbox.watch.stop(em, accountId),
  };

  return {
    mailWatch,
    /** Once the service is up and before anyone can sign in: notes whether the account is already there. */
    async attach(container: Container): Promise<void> {
      try {
        const existed = (await container.orm.em.fork().count(Account, { sub })) > 0;
        ready.resolve({ container, existed });
      } catch (err) {
        ready.reject(err);
        throw err;
      }
    },
  };
}
