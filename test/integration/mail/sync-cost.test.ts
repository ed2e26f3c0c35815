/**
 * Measures what one 50-message sync costs: provider requests (stand-in counters) and
 * database statements (every statement the ORM sends, transaction control included).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { MikroORM } from '@mikro-orm/postgresql';
import type { Logger as OrmLogger, LogContext } from '@mikro-orm/core';
import { ormOptions } from '../../../db/mikro-orm.config.ts';
import { createSyncService } from '../../../server/domain/mail/sync/sync.service.ts';
import { createGmailFactory } from '../../../server/providers/gmail.ts';
import { ALICE, startMailApp } from './mail-app.ts';

function countingOrm(url: string) {
  const statements: string[] = [];
  const logger: OrmLogger = {
    log() {},
    error() {},
    warn() {},
    logQuery: (c: LogContext) => void statements.push(String(c.query)),
    setDebugMode() {},
    isEnabled: () => true,
  };
  return { statements, orm: MikroORM.init(ormOptions(url, { loggerFactory: () => logger })) };
}

describe('cost of one sync', () => {
  it('a 50-message sync makes 52 provider requests and a fixed handful of database statements', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 230);
    const { id: accountId } = (await mail.app.account({ email: ALICE }))!;
    const counting = countingOrm(mail.app.databaseUrl);
    const orm = await counting.orm;
    t.after(() => orm.close(true));
    await orm.em.fork().execute('select 1'); // the pool's first connection, not part of a sync
    const service = createSyncService({
      orm,
      gmail: createGmailFactory({ rootUrl: mail.gmail.url }),
      credentials: mail.app.container.credentials,
      log: mail.app.container.log,
    });

    const measure = async () => {
      mail.gmail.resetCounters();
      counting.statements.length = 0;
      const result = await service.syncAccount(accountId);
      return {
        result,
        provider: mail.gmail.requests.length,
        calls: { ...mail.gmail.calls },
        statements: [...counting.statements],
      };
    };

    const first = await measure();
    assert.equal(first.result.messagesSynced, 50);
    assert.equal(first.calls.profile, 1);
    assert.equal(first.calls['labels.get'], 1, 'the inbox count, for the progress of the backfill');
    assert.equal(first.calls['messages.list'], 1, 'one page of 500 ids');
    assert.equal(first.calls['messages.get:metadata'], 50);
    assert.equal(first.provider, 53);
    t.diagnostic(
      `first 50-message call: ${first.provider} provider requests, ${first.statements.length} database statements`,
    );
    t.diagnostic(first.statements.map((s) => s.replace(/\s+/g, ' ').slice(0, 60)).join(' | '));

    const second = await measure();
    assert.equal(second.result.messagesSynced, 50);
    assert.equal(second.calls['history.list'], 1, 'the live cursor: mail that arrived meanwhile');
    assert.equal(second.calls['messages.list'], 0, 'the ids listed by the first call are fetched first');
    assert.equal(second.provider, 51, 'later listing calls need no profile call');
    t.diagnostic(
      `next 50-message call: ${second.provider} provider requests, ${second.statements.length} database statements`,
    );
    t.diagnostic(second.statements.map((s) => s.replace(/\s+/g, ' ').slice(0, 60)).join(' | '));
    // Statements do not grow with the number of messages: one per kind of write (a listing's
    // first call also clears, in its commit, whatever ids an earlier listing left).
    assert.ok(first.statements.length <= 9, `${first.statements.length} statements`);
    // A later listing call also marks the ids it fetched in the listing (one statement more at most).
    assert.ok(second.statements.length <= first.statements.length + 1, `${second.statements.length} statements`);

    await service.syncAccount(accountId, { maxMessages: 50 });
    await service.syncAccount(accountId);
    const last = await service.syncAccount(accountId);
    assert.equal(last.hasMore, false);
    for (let i = 0; i < 5; i++) mail.gmail.addMessage(ALICE, { subject: `new ${i}` });
    const incremental = await measure();
    assert.equal(incremental.result.messagesSynced, 5);
    assert.equal(incremental.calls['history.list'], 1);
    assert.equal(incremental.calls['messages.get:metadata'], 5);
    assert.equal(incremental.provider, 6);
    t.diagnostic(
      `incremental call with 5 new messages: ${incremental.provider} provider requests, ${incremental.statements.length} database statements`,
    );

    const idle = await measure();
    assert.equal(idle.result.messagesSynced, 0);
    assert.equal(idle.provider, 1);
    assert.equal(idle.statements.length, 3, 'lease, credentials, checkpoint');
    t.diagnostic(
      `incremental call with nothing new: ${idle.provider} provider request, ${idle.statements.length} database statements`,
    );
  });
});
