import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { EntityManager } from '@mikro-orm/postgresql';
import { decodeCursor, encodeCursor } from '../../../../../server/domain/mail/sync/listing-cursor.ts';
import { planHistory } from '../../../../../server/domain/mail/sync/sync-plan.ts';
import type { GmailApi, HistoryRecord, MessageMeta } from '../../../../../server/providers/gmail.ts';

/** An EntityManager stand-in answering lookupKnown from a fixed store. */
function fakeEm(stored: Record<string, string[]>, threads: string[] = []): EntityManager {
  return {
    execute: async (_sql: string, params: unknown[]) => {
      const [, messageIds, , threadIds] = params as [string, string[], string, string[]];
      return [
        ...messageIds.filter((id) => id in stored).map((id) => ({ kind: 'm', pid: id, labels: stored[id] })),
        ...threadIds.filter((id) => threads.includes(id)).map((id) => ({ kind: 't', pid: id, labels: null })),
      ];
    },
  } as unknown as EntityManager;
}

function fakeApi(
  opts: {
    history?: HistoryRecord[] | 'expired';
    historyId?: string;
    inbox?: string[];
    pageSize?: number;
    profileHistoryId?: string;
  } = {},
) {
  const fetched: string[][] = [];
  const api: Partial<GmailApi> = {
    profile: async () => ({ emailAddress: 'a@example.com', historyId: opts.profileHistoryId ?? '77' }),
    listHistory: async () =>
      opts.history === 'expired'
        ? 'expired'
        : { records: opts.history ?? [], historyId: opts.historyId ?? '999', complete: true },
    getMetadata: async (ids) => {
      fetched.push(ids);
      return {
        messages: ids.map(
          (id): MessageMeta => ({
            providerMessageId: id,
            providerThreadId: `t-${id}`,
            labelIds: ['INBOX'],
            fromName: '',
            fromAddress: '',
            subject: '',
            snippet: '',
            sentAt: new Date(1767225600000),
          }),
        ),
        failed: [],
      };
    },
    listInbox: async ({ pageToken, maxResults }) => {
      const start = pageToken ? Number(pageToken) : 0;
      const all = opts.inbox ?? [];
      const page = all.slice(start, start + maxResults).map((id) => ({ id, threadId: `t-${id}` }));
      return start + maxResults < all.length
        ? { messages: page, nextPageToken: String(start + maxResults) }
        : { messages: page };
    },
  };
  return { api: api as GmailApi, fetched };
}

const ref = (id: string, labelIds?: string[]) => ({ id, threadId: `t-${id}`, ...(labelIds ? { labelIds } : {}) });
const rec = (id: number, parts: Partial<HistoryRecord>): HistoryRecord => ({
  id: String(id),
  messagesAdded: [],
  messagesDeleted: [],
  labelsAdded: [],
  labelsRemoved: [],
  ...parts,
});
const added = (id: number, msg: string, labels: string[] = ['INBOX', 'UNREAD']) =>
  rec(id, { messagesAdded: [{ message: ref(msg, labels) }] });

describe('planHistory', () => {
  it('stops at a record boundary when the fetch budget is used, checkpointing the last record it covered', async () => {
    const history = Array.from({ length: 60 }, (_, i) => added(101 + i, `m${i}`));
    const { api, fetched } = fakeApi({ history, historyId: '500' });
    const plan = await planHistory({ api, em: fakeEm({}), accountId: 'a', budget: 50 }, '100');
    assert.notEqual(plan, 'expired');
    if (plan === 'expired') return;
    assert.equal(fetched.flat().length, 50);
    assert.equal(plan.changes.upserts.length, 50);
    assert.equal(plan.next.historyId, '150');
    assert.equal(plan.hasMore, true);
    const rest = await planHistory(
      {
        api: fakeApi({ history: history.slice(50), historyId: '500' }).api,
        em: fakeEm({}),
        accountId: 'a',
        budget: 50,
      },
      '150',
    );
    assert.ok(
      rest !== 'expired' && rest.next.historyId === '500' && !rest.hasMore && rest.changes.upserts.length === 10,
    );
  });

  it('folds changes per message: added-then-deleted costs nothing; label deltas apply to stored labels', async () => {
    const history = [
      added(11, 'gone'),
      rec(12, { messagesDeleted: [{ message: ref('gone') }] }),
      rec(13, { labelsRemoved: [{ message: ref('s1'), labelIds: ['UNREAD'] }] }),
      rec(14, { labelsRemoved: [{ message: ref('s2'), labelIds: ['INBOX'] }] }),
      rec(15, { labelsAdded: [{ message: ref('s2'), labelIds: ['INBOX'] }] }),
      rec(16, { labelsRemoved: [{ message: ref('s3'), labelIds: ['INBOX'] }] }),
      rec(17, { messagesDeleted: [{ message: ref('s4') }] }),
      rec(18, { labelsAdded: [{ message: ref('never'), labelIds: ['STARRED'] }] }),
      rec(19, { labelsAdded: [{ message: ref('late'), labelIds: ['INBOX'] }] }),
      added(20, 'sent', ['SENT']),
      added(21, 'sentKnownThread', ['SENT']),
    ];
    history[10]!.messagesAdded[0]!.message.threadId = 'known';
    const em = fakeEm({ s1: ['INBOX', 'UNREAD'], s2: ['INBOX'], s3: ['INBOX', 'IMPORTANT'], s4: ['INBOX'] }, ['known']);
    const { api, fetched } = fakeApi({ history, historyId: '30' });
    const plan = await planHistory({ api, em, accountId: 'a', budget: 50 }, '10');
    assert.ok(plan !== 'expired');
    assert.deepEqual(fetched.flat().sort(), ['late', 'sentKnownThread']);
    assert.deepEqual(plan.changes.labelChanges, [
      { providerMessageId: 's1', labelIds: ['INBOX'] },
      { providerMessageId: 's3', labelIds: ['IMPORTANT'] },
    ]);
    assert.deepEqual(plan.changes.deletes, ['s4']);
    assert.equal(plan.messagesSynced, 5);
    assert.equal(plan.next.historyId, '30');
    assert.equal(plan.hasMore, false);
  });

  it('reports an expired checkpoint', async () => {
    const plan = await planHistory(
      { api: fakeApi({ history: 'expired' }).api, em: fakeEm({}), accountId: 'a', budget: 50 },
      '10',
    );
    assert.equal(plan, 'expired');
  });
});

describe('listing cursor', () => {
  it('round-trips, and an unreadable or older-form cursor reads as none (a new listing starts)', () => {
    const c = {
      startedAt: '2026-01-01T00:00:00.000Z',
      live: '77',
      phase: 'inbox' as const,
      pageToken: 'p2',
      count: 500,
    };
    assert.deepEqual(decodeCursor(encodeCursor(c)), c);
    assert.deepEqual(decodeCursor(encodeCursor({ ...c, phase: 'gone', listed: true })), {
      ...c,
      phase: 'gone',
      listed: true,
    });
    assert.equal(decodeCursor('not json'), null);
    assert.equal(
      decodeCursor(JSON.stringify({ startedAt: '2026-01-01T00:00:00.000Z', pageToken: '3' })),
      null,
      'the cursor of the listing before two cursors',
    );
    assert.equal(decodeCursor(JSON.stringify({ ...c, live: 'x' })), null);
    assert.equal(decodeCursor(JSON.stringify({ ...c, phase: 'other' })), null);
    assert.equal(decodeCursor(JSON.stringify({ ...c, count: -1 }))?.count, 0);
  });
});
