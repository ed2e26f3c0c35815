/**
 * Where the account stands, as its open event stream hears it, after a notification that
 * arrives while a sync runs: the sync read the history before it, so it had nothing to store,
 * and its commit moved the last sync past the notification (the account is `current` again).
 * The stream heard `catching_up` from the notification; it must hear the commit's `current`
 * too, or it says `catching_up` until the next mail.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { noteNotification } from '../../../server/domain/mail/sync/states/index.ts';
import { createSyncService } from '../../../server/domain/mail/sync/sync.service.ts';
import { createLogger } from '../../../server/infra/logger.ts';
import type { GmailFactory } from '../../../server/providers/gmail.ts';
import type { GmailStandIn } from '../../../stand-ins/gmail.stand-in.ts';
import type { TestApp } from '../../helpers/app.ts';
import { waitFor } from './live-harness.ts';
import { assertStates, watchStream } from './model-state-oracle.ts';
import { createModelAccount, startModelApp } from './model-world.ts';

const TOKEN_PREFIX = 'state-events:';

describe('the sync event of a notification that came while a sync ran', () => {
  let app: TestApp;
  let gmail: GmailStandIn;
  let realGmail: GmailFactory;
  let close: () => Promise<void>;
  before(async () => {
    ({ app, gmail, realGmail, close } = await startModelApp(TOKEN_PREFIX, 5));
  });
  after(() => close());

  it('a sync that stored nothing but ended the catching up announces `current`', async () => {
    const email = 'meanwhile@model.test';
    const accountId = await createModelAccount({ app, gmail, tokenPrefix: TOKEN_PREFIX }, email);
    gmail.addMessage(email, { subject: 'stored before' });
    let afterRead: (() => Promise<void>) | null = null;
    const hooked: GmailFactory = (auth, quota) => {
      const api = realGmail(auth, quota);
      return {
        ...api,
        get requests() {
          return api.requests;
        },
        async listHistory(id) {
          const read = await api.listHistory(id);
          const hook = afterRead;
          afterRead = null;
          await hook?.();
          return read;
        },
      };
    };
    const sync = createSyncService({
      orm: app.container.orm,
      gmail: hooked,
      credentials: app.container.credentials,
      log: createLogger({ level: 'silent' }),
    });
    while ((await sync.syncAccount(accountId)).hasMore);
    const watch = watchStream(app, accountId);
    const lastState = () => {
      const e = watch.events.findLast((x) => x.data.type === 'sync');
      return e?.data.type === 'sync' ? e.data.state : undefined;
    };
    try {
      await watch.opened;
      await assertStates(app, new Map([[accountId, watch]]), [{ accountId, connected: true, final: true }], 'synced');
      // The provider notifies (a change already read, or none at all) while the next sync runs, after its history read.
      afterRead = async () => {
        await noteNotification(app.container.orm.em.fork(), accountId, BigInt(gmail.historyId(email)));
        await waitFor(() => lastState() === 'catching_up', 'the stream hearing the notification');
      };
      const outcome = await sync.syncAccount(accountId);
      assert.deepEqual(
        { messagesSynced: outcome.messagesSynced, hasMore: outcome.hasMore },
        { messagesSynced: 0, hasMore: false },
      );
      assert.equal(afterRead, null, 'the notification came during the sync');
      await assertStates(
        app,
        new Map([[accountId, watch]]),
        [{ accountId, connected: true, final: true }],
        'after the sync',
      );
    } finally {
      await watch.close();
    }
  });
});
