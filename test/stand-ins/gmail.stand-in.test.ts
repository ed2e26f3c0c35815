import { afterEach, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { gmail, type gmail_v1 } from '@googleapis/gmail';
import { OAuth2Client } from 'google-auth-library';
import {
  DEFAULT_MAILBOX,
  startGmailStandIn,
  type GmailNotification,
  type GmailStandIn,
} from '../../stand-ins/gmail.stand-in.ts';

const ALICE = DEFAULT_MAILBOX;
const NO_RETRY = { retry: false } as const;

function client(standIn: GmailStandIn, token = 'token-alice'): gmail_v1.Gmail {
  const auth = new OAuth2Client();
  auth.setCredentials({ access_token: token });
  return gmail({ version: 'v1', auth, rootUrl: standIn.url });
}

/** Runs `fn`, expects it to reject with a GaxiosError-like error, returns it. */
async function rejection(fn: () => Promise<unknown>): Promise<{
  status?: number;
  code?: unknown;
  message: string;
  response?: { status: number; data: unknown; headers: Headers };
}> {
  try {
    await fn();
  } catch (e) {
    return e as never;
  }
  assert.fail('expected the call to fail');
}

function reasonOf(err: { response?: { data: unknown } }): string | undefined {
  return (err.response?.data as { error?: { errors?: { reason?: string }[] } } | undefined)?.error?.errors?.[0]?.reason;
}

const decode = (data: string | null | undefined) => Buffer.from(data ?? '', 'base64url').toString('utf8');
const header = (m: gmail_v1.Schema$Message, name: string) =>
  m.payload?.headers?.find((h) => h.name?.toLowerCase() === name.toLowerCase())?.value;

describe('gmail stand-in', () => {
  let s: GmailStandIn;
  let api: gmail_v1.Gmail;

  beforeEach(async () => {
    s = await startGmailStandIn({ seed: 7 });
    api = client(s);
  });
  afterEach(() => s.close());

  describe('messages.list', () => {
    it('pages newest first with a stable page token', async () => {
      const base = Date.now() - 100_000;
      const added = Array.from({ length: 7 }, (_, i) =>
        s.addMessage(ALICE, { subject: `m${i}`, internalDate: base + i * 1000 }),
      );
      const newestFirst = added.map((m) => m.id).reverse();

      const p1 = await api.users.messages.list({ userId: 'me', maxResults: 3 });
      assert.deepEqual(
        p1.data.messages?.map((m) => m.id),
        newestFirst.slice(0, 3),
      );
      assert.equal(p1.data.resultSizeEstimate, 7);
      assert.ok(p1.data.nextPageToken);

      // the mailbox changes between pages: a newer message arrives, one on page 2 is deleted
      s.addMessage(ALICE, { subject: 'late arrival' });
      s.deleteMessage(ALICE, newestFirst[3]!);

      const p2 = await api.users.messages.list({ userId: 'me', maxResults: 3, pageToken: p1.data.nextPageToken! });
      assert.deepEqual(
        p2.data.messages?.map((m) => m.id),
        newestFirst.slice(4, 7),
      );
      assert.equal(p2.data.nextPageToken, undefined);
      assert.deepEqual(
        p2.data.messages?.map((m) => m.threadId),
        newestFirst.slice(4, 7),
      );
    });

    it('filters by labelIds (all must match) and omits `messages` when empty', async () => {
      const a = s.addMessage(ALICE, { subject: 'unread inbox' });
      const b = s.addMessage(ALICE, { subject: 'read inbox', read: true });
      const c = s.addMessage(ALICE, { subject: 'archived' });
      s.archive(ALICE, c.id);
      s.addSentReply(ALICE, a.threadId);

      const inbox = await api.users.messages.list({ userId: 'me', labelIds: ['INBOX'] });
      assert.deepEqual(
        inbox.data.messages?.map((m) => m.id),
        [b.id, a.id],
      );
      const unreadInbox = await api.users.messages.list({ userId: 'me', labelIds: ['INBOX', 'UNREAD'] });
      assert.deepEqual(
        unreadInbox.data.messages?.map((m) => m.id),
        [a.id],
      );
      assert.deepEqual(s.requests.at(-1)?.query.labelIds, ['INBOX', 'UNREAD']);
      assert.equal(s.calls['messages.list'], 2);

      const none = await api.users.messages.list({ userId: 'me', labelIds: ['STARRED'], q: 'in:inbox' });
      assert.equal(none.data.messages, undefined);
      assert.equal(none.data.resultSizeEstimate, 0);
    });

    it('supports a subset of q (is:unread, newer_than, -in:inbox)', async () => {
      const old = s.addMessage(ALICE, { internalDate: Date.now() - 10 * 86_400_000, subject: 'old' });
      const fresh = s.addMessage(ALICE, { subject: 'fresh' });
      s.setRead(ALICE, old.id, true);
      const unread = await api.users.messages.list({ userId: 'me', q: 'is:unread' });
      assert.deepEqual(
        unread.data.messages?.map((m) => m.id),
        [fresh.id],
      );
      s.setRead(ALICE, old.id, false);
      const recent = await api.users.messages.list({ userId: 'me', q: 'newer_than:2d' });
      assert.deepEqual(
        recent.data.messages?.map((m) => m.id),
        [fresh.id],
      );
      const archived = s.addMessage(ALICE, { subject: 'archived' });
      s.archive(ALICE, archived.id);
      const inInbox = await api.users.messages.list({ userId: 'me', q: 'in:inbox' });
      assert.deepEqual(
        inInbox.data.messages?.map((m) => m.id),
        [fresh.id, old.id],
      );
      const outside = await api.users.messages.list({ userId: 'me', q: '-in:inbox' });
      assert.deepEqual(
        outside.data.messages?.map((m) => m.id),
        [archived.id],
        'a term after - is negated',
      );
      const unreadOutside = await api.users.messages.list({ userId: 'me', q: 'is:unread -in:inbox' });
      assert.deepEqual(
        unreadOutside.data.messages?.map((m) => m.id),
        [archived.id],
      );
    });
  });

  describe('messages.get', () => {
    it('metadata returns only the requested headers; counters are per format', async () => {
      const m = s.addMessage(ALICE, {
        from: { name: 'Priya Raman', address: 'priya@northwind.io' },
        to: { name: 'Alice', address: ALICE },
        subject: "Q3 numbers & what's next",
        bodyText: "It's ready — see the <attached> numbers.",
      });
      const meta = await api.users.messages.get({
        userId: 'me',
        id: m.id,
        format: 'metadata',
        metadataHeaders: ['From', 'Subject', 'Date'],
      });
      assert.deepEqual(meta.data.payload?.headers?.map((h) => h.name).sort(), ['Date', 'From', 'Subject']);
      assert.equal(header(meta.data, 'From'), 'Priya Raman <priya@northwind.io>');
      assert.equal(header(meta.data, 'Subject'), "Q3 numbers & what's next");
      assert.equal(Math.floor(Date.parse(header(meta.data, 'Date')!) / 1000), Math.floor(m.internalDate / 1000));
      assert.equal(meta.data.internalDate, String(m.internalDate));
      assert.equal(meta.data.threadId, m.threadId);
      assert.deepEqual(meta.data.labelIds, ['INBOX', 'UNREAD']);
      assert.equal(meta.data.payload?.parts, undefined);
      assert.equal(meta.data.snippet, 'It&#39;s ready — see the &lt;attached&gt; numbers.');
      assert.match(meta.data.historyId ?? '', /^\d+$/);
      assert.ok((meta.data.sizeEstimate ?? 0) > 0);

      const full = await api.users.messages.get({ userId: 'me', id: m.id });
      assert.ok(full.data.payload?.body?.data);
      const minimal = await api.users.messages.get({ userId: 'me', id: m.id, format: 'minimal' });
      assert.equal(minimal.data.payload, undefined);

      assert.equal(s.calls['messages.get:metadata'], 1);
      assert.equal(s.calls['messages.get:full'], 1);
      assert.equal(s.calls['messages.get:minimal'], 1);
      assert.equal(s.calls['messages.get'], 3);
      s.resetCounters();
      assert.equal(s.calls['messages.get'], 0);
      assert.equal(s.requests.length, 0);
    });

    it('full format is a MIME tree that decodes to the bodies put in', async () => {
      const bodyText = 'Hello Alice,\n\nThe report is attached. Ünïcödé ✓';
      const bodyHtml = '<p>Hello Alice,</p><p>The report is <b>attached</b>. Ünïcödé ✓</p>';
      const m = s.addMessage(ALICE, {
        bodyText,
        bodyHtml,
        attachments: [{ filename: 'report.pdf', mimeType: 'application/pdf', size: 1234 }],
      });
      const { data } = await api.users.messages.get({ userId: 'me', id: m.id, format: 'full' });
      const root = data.payload!;
      assert.equal(root.mimeType, 'multipart/mixed');
      assert.equal(header(data, 'Message-ID'), m.messageIdHeader);
      const [alt, att] = root.parts!;
      assert.equal(alt?.mimeType, 'multipart/alternative');
      assert.deepEqual(
        alt?.parts?.map((p) => p.mimeType),
        ['text/plain', 'text/html'],
      );
      assert.deepEqual(
        alt?.parts?.map((p) => p.partId),
        ['0.0', '0.1'],
      );
      assert.equal(decode(alt?.parts?.[0]?.body?.data), bodyText);
      assert.equal(decode(alt?.parts?.[1]?.body?.data), bodyHtml);
      assert.equal(alt?.parts?.[0]?.body?.size, Buffer.byteLength(bodyText));
      assert.equal(att?.filename, 'report.pdf');
      assert.equal(att?.mimeType, 'application/pdf');
      assert.equal(att?.body?.size, 1234);
      assert.equal(att?.body?.data, undefined);
      assert.ok(att?.body?.attachmentId);

      const blob = await api.users.messages.attachments.get({
        userId: 'me',
        messageId: m.id,
        id: att!.body!.attachmentId!,
      });
      assert.equal(Buffer.from(blob.data.data!, 'base64url').length, 1234);
      assert.equal(blob.data.size, 1234);
    });

    it('uses simpler trees for single bodies', async () => {
      const textOnly = s.addMessage(ALICE, { bodyText: 'just text' });
      const htmlWithAtt = s.addMessage(ALICE, {
        bodyHtml: '<p>only html</p>',
        attachments: [{ filename: 'a.txt', mimeType: 'text/plain', size: 3 }],
      });
      const t = (await api.users.messages.get({ userId: 'me', id: textOnly.id })).data.payload!;
      assert.equal(t.mimeType, 'text/plain');
      assert.equal(t.parts, undefined);
      assert.equal(decode(t.body?.data), 'just text');
      const h = (await api.users.messages.get({ userId: 'me', id: htmlWithAtt.id })).data.payload!;
      assert.equal(h.mimeType, 'multipart/mixed');
      assert.deepEqual(
        h.parts?.map((p) => p.mimeType),
        ['text/html', 'text/plain'],
      );
      assert.equal(decode(h.parts?.[0]?.body?.data), '<p>only html</p>');
      assert.equal(h.parts?.[1]?.filename, 'a.txt');
    });

    it('404s with the Google error shape for unknown and deleted ids', async () => {
      const m = s.addMessage(ALICE);
      s.deleteMessage(ALICE, m.id);
      for (const id of [m.id, 'ffffffffffffffff']) {
        const err = await rejection(() => api.users.messages.get({ userId: 'me', id }, NO_RETRY));
        assert.equal(err.status, 404);
        assert.equal(reasonOf(err), 'notFound');
        assert.equal((err.response?.data as { error: { status: string } }).error.status, 'NOT_FOUND');
      }
    });
  });

  describe('threads.get', () => {
    it('returns all thread messages oldest first, including SENT ones', async () => {
      const first = s.addMessage(ALICE, { subject: 'Plan' });
      const sent = s.addSentReply(ALICE, first.threadId, { bodyText: 'Sounds good' });
      const third = s.addMessage(ALICE, { threadId: first.threadId, bodyText: 'Great' });
      s.addMessage(ALICE, { subject: 'other thread' });
      const { data } = await api.users.threads.get({ userId: 'me', id: first.threadId });
      assert.equal(data.id, first.id);
      assert.deepEqual(
        data.messages?.map((m) => m.id),
        [first.id, sent.id, third.id],
      );
      assert.deepEqual(data.messages?.[1]?.labelIds, ['SENT']);
      assert.equal(header(data.messages![2]!, 'Subject'), 'Re: Plan');
      assert.equal(header(data.messages![2]!, 'In-Reply-To'), sent.messageIdHeader);
      assert.equal(header(data.messages![1]!, 'To'), 'Bob Example <bob@example.com>');
      assert.equal(data.historyId, String(third.historyId));
      assert.equal(s.calls['threads.get:full'], 1);

      const meta = await api.users.threads.get({
        userId: 'me',
        id: first.threadId,
        format: 'metadata',
        metadataHeaders: ['Subject'],
      });
      assert.deepEqual(meta.data.messages?.[0]?.payload?.headers, [{ name: 'Subject', value: 'Plan' }]);
      assert.equal(s.calls['threads.get:metadata'], 1);

      const err = await rejection(() => api.users.threads.get({ userId: 'me', id: 'abcdef0123456789' }, NO_RETRY));
      assert.equal(err.status, 404);
    });
  });

  describe('labels.get', () => {
    it("answers a label's counts from the mailbox, system labels even when empty, 404 for an unknown one", async () => {
      const a = s.addMessage(ALICE, { subject: 'a' });
      s.addMessage(ALICE, { subject: 'a, again', threadId: a.threadId, read: true });
      s.addMessage(ALICE, { subject: 'b', read: true });
      const archived = s.addMessage(ALICE, { subject: 'c' });
      s.archive(ALICE, archived.id);

      const { data } = await api.users.labels.get({ userId: 'me', id: 'INBOX' });
      assert.deepEqual(
        { ...data },
        {
          id: 'INBOX',
          name: 'INBOX',
          type: 'system',
          messagesTotal: 3,
          messagesUnread: 1,
          threadsTotal: 2,
          threadsUnread: 1,
        },
      );
      assert.equal(s.calls['labels.get'], 1);
      s.addMessage(ALICE, { subject: 'd' });
      assert.equal((await api.users.labels.get({ userId: 'me', id: 'INBOX' })).data.messagesTotal, 4);
      assert.equal((await api.users.labels.get({ userId: 'me', id: 'STARRED' })).data.messagesTotal, 0);
      const unknown = await rejection(() => api.users.labels.get({ userId: 'me', id: 'Label_42' }, NO_RETRY));
      assert.equal(unknown.status, 404);
    });
  });

  describe('history.list', () => {
    it('records add, read, archive, move-to-inbox and delete', async () => {
      const start = (await api.users.getProfile({ userId: 'me' })).data.historyId!;
      const m = s.addMessage(ALICE);
      s.setRead(ALICE, m.id, true);
      s.setRead(ALICE, m.id, true); // no change -> no record
      s.archive(ALICE, m.id);
      s.moveToInbox(ALICE, m.id);
      s.deleteMessage(ALICE, m.id);

      const { data } = await api.users.history.list({ userId: 'me', startHistoryId: start });
      const h = data.history!;
      assert.equal(h.length, 5);
      const ids = h.map((r) => Number(r.id));
      assert.ok(
        ids.every((id, i) => id > (i === 0 ? Number(start) : ids[i - 1]!)),
        `increasing ids ${ids}`,
      );
      assert.equal(data.historyId, String(s.historyId(ALICE)));
      assert.equal(data.historyId, h[4]!.id);
      assert.deepEqual(h[0]!.messagesAdded, [
        { message: { id: m.id, threadId: m.threadId, labelIds: ['INBOX', 'UNREAD'] } },
      ]);
      assert.deepEqual(h[1]!.labelsRemoved?.[0]?.labelIds, ['UNREAD']);
      assert.deepEqual(h[1]!.labelsRemoved?.[0]?.message?.labelIds, ['INBOX']);
      assert.deepEqual(h[2]!.labelsRemoved?.[0]?.labelIds, ['INBOX']);
      assert.deepEqual(h[3]!.labelsAdded?.[0]?.labelIds, ['INBOX']);
      assert.equal(h[4]!.messagesDeleted?.[0]?.message?.id, m.id);
      assert.deepEqual(
        h.map((r) => r.messages?.[0]?.id),
        [m.id, m.id, m.id, m.id, m.id],
      );

      const none = await api.users.history.list({ userId: 'me', startHistoryId: data.historyId! });
      assert.equal(none.data.history, undefined);
      assert.equal(none.data.historyId, data.historyId);

      const typed = await api.users.history.list({
        userId: 'me',
        startHistoryId: start,
        historyTypes: ['labelRemoved', 'messageDeleted'],
      });
      assert.deepEqual(
        typed.data.history?.map((r) => Object.keys(r).filter((k) => k !== 'id' && k !== 'messages')),
        [['labelsRemoved'], ['labelsRemoved'], ['messagesDeleted']],
      );

      const unreadOnly = await api.users.history.list({ userId: 'me', startHistoryId: start, labelId: 'UNREAD' });
      assert.deepEqual(
        unreadOnly.data.history?.map((r) => r.id),
        [h[0]!.id, h[1]!.id],
      );

      const p1 = await api.users.history.list({ userId: 'me', startHistoryId: start, maxResults: 2 });
      assert.equal(p1.data.history?.length, 2);
      const p2 = await api.users.history.list({
        userId: 'me',
        startHistoryId: start,
        maxResults: 2,
        pageToken: p1.data.nextPageToken!,
      });
      const p3 = await api.users.history.list({
        userId: 'me',
        startHistoryId: start,
        maxResults: 2,
        pageToken: p2.data.nextPageToken!,
      });
      assert.equal(p3.data.nextPageToken, undefined);
      assert.deepEqual(
        [...p1.data.history!, ...p2.data.history!, ...p3.data.history!].map((r) => r.id),
        ids.map(String),
      );
    });

    it('delta-only label records name the message without its labels; added messages keep theirs', async (t) => {
      t.after(() => s.setDeltaOnlyLabels(false));
      const start = (await api.users.getProfile({ userId: 'me' })).data.historyId!;
      const m = s.addMessage(ALICE);
      s.setDeltaOnlyLabels(true);
      s.archive(ALICE, m.id);
      const h = (await api.users.history.list({ userId: 'me', startHistoryId: start })).data.history!;
      assert.deepEqual(h[0]!.messagesAdded?.[0]?.message?.labelIds, ['INBOX', 'UNREAD']);
      assert.deepEqual(h[1]!.labelsRemoved, [{ message: { id: m.id, threadId: m.threadId }, labelIds: ['INBOX'] }]);
    });

    it('400 without startHistoryId; 404 once expired, fine again from a fresh checkpoint', async () => {
      const missing = await rejection(() => api.users.history.list({ userId: 'me' }, NO_RETRY));
      assert.equal(missing.status, 400);

      const old = (await api.users.getProfile({ userId: 'me' })).data.historyId!;
      s.addMessage(ALICE);
      s.expireHistory(ALICE);
      const err = await rejection(() => api.users.history.list({ userId: 'me', startHistoryId: old }, NO_RETRY));
      assert.equal(err.status, 404);
      assert.equal(reasonOf(err), 'notFound');

      const fresh = (await api.users.getProfile({ userId: 'me' })).data.historyId!;
      const m = s.addMessage(ALICE);
      const ok = await api.users.history.list({ userId: 'me', startHistoryId: fresh });
      assert.equal(ok.data.history?.[0]?.messagesAdded?.[0]?.message?.id, m.id);
      // still 404 for the old checkpoint even though history moved on
      assert.equal(
        (await rejection(() => api.users.history.list({ userId: 'me', startHistoryId: old }, NO_RETRY))).status,
        404,
      );
    });
  });

  describe('faults', () => {
    it('429 and 403 rate limits carry status and errors[0].reason', async () => {
      s.injectFault({ endpoint: 'messages.list', status: 429 });
      const e429 = await rejection(() => api.users.messages.list({ userId: 'me' }, NO_RETRY));
      assert.equal(e429.status, 429);
      assert.equal(reasonOf(e429), 'rateLimitExceeded');
      assert.equal(e429.code, 429);

      s.injectFault({ endpoint: 'messages.get', status: 403, reason: 'userRateLimitExceeded', retryAfterSeconds: 3 });
      const e403 = await rejection(() => api.users.messages.get({ userId: 'me', id: 'abc' }, NO_RETRY));
      assert.equal(e403.status, 403);
      assert.equal(reasonOf(e403), 'userRateLimitExceeded');
      assert.equal(e403.response?.headers.get('retry-after'), '3');
      assert.equal((e403.response?.data as { error: { status: string } }).error.status, 'PERMISSION_DENIED');

      // faults are used up: next calls succeed
      assert.equal((await api.users.messages.list({ userId: 'me' }, NO_RETRY)).status, 200);
    });

    it('afterCalls lets calls pass, times bounds failures, and the default client retries 429', async () => {
      s.injectFault({ endpoint: 'profile', status: 503, afterCalls: 2, times: 2 });
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) {
        try {
          statuses.push((await api.users.getProfile({ userId: 'me' }, NO_RETRY)).status);
        } catch (e) {
          statuses.push((e as { status: number }).status);
        }
      }
      assert.deepEqual(statuses, [200, 200, 503, 503, 200]);
      assert.equal(s.calls.profile, 5);

      s.resetCounters();
      s.injectFault({ endpoint: '*', status: 429 });
      const res = await api.users.messages.list({ userId: 'me' }, { retryConfig: { retryDelay: 1 } }); // retry on by default
      assert.equal(res.status, 200);
      assert.equal(s.calls['messages.list'], 2);
    });

    it('hang (client timeout), garbage body and connection reset', async () => {
      s.injectFault({ endpoint: 'history.list', status: 0, hang: true });
      const started = Date.now();
      const hung = await rejection(() =>
        api.users.history.list({ userId: 'me', startHistoryId: '1' }, { ...NO_RETRY, timeout: 150 }),
      );
      assert.ok(Date.now() - started >= 140);
      assert.equal(hung.response, undefined);
      assert.match(String(hung.message), /timeout|abort/i);

      s.injectFault({ endpoint: 'messages.list', status: 0, garbage: true });
      const garbage = await api.users.messages.list({ userId: 'me' }, NO_RETRY);
      assert.equal(garbage.status, 200);
      assert.equal(typeof garbage.data, 'string');

      s.injectFault({ endpoint: 'threads.get', status: 0, reset: true });
      const reset = await rejection(() => api.users.threads.get({ userId: 'me', id: 'abc' }, NO_RETRY));
      assert.equal(reset.response, undefined);
    });
  });

  describe('auth', () => {
    it('401 for unknown or missing tokens once tokens are registered; per-token mailboxes', async () => {
      s.setToken('tok-bob', 'bob@example.com');
      s.setToken('tok-alice', ALICE);
      s.addMessage('bob@example.com', { subject: 'for bob' });

      const err = await rejection(() => client(s, 'nope').users.getProfile({ userId: 'me' }, NO_RETRY));
      assert.equal(err.status, 401);
      assert.equal(reasonOf(err), 'authError');
      assert.equal((err.response?.data as { error: { status: string } }).error.status, 'UNAUTHENTICATED');
      assert.equal(s.calls.profile, 1);

      const anon = gmail({ version: 'v1', rootUrl: s.url });
      assert.equal((await rejection(() => anon.users.getProfile({ userId: 'me' }, NO_RETRY))).status, 401);

      const bob = await client(s, 'tok-bob').users.getProfile({ userId: 'me' });
      assert.equal(bob.data.emailAddress, 'bob@example.com');
      assert.equal(bob.data.messagesTotal, 1);
      const alice = await client(s, 'tok-alice').users.getProfile({ userId: 'me' });
      assert.equal(alice.data.messagesTotal, 0);
      const other = await rejection(() =>
        client(s, 'tok-alice').users.getProfile({ userId: 'bob@example.com' }, NO_RETRY),
      );
      assert.equal(other.status, 403);
    });

    it('uses the authorize option when given', async () => {
      const custom = await startGmailStandIn({ authorize: (t) => (t === 'good' ? 'carol@example.com' : null) });
      try {
        assert.equal(
          (await client(custom, 'good').users.getProfile({ userId: 'me' })).data.emailAddress,
          'carol@example.com',
        );
        assert.equal(
          (await rejection(() => client(custom, 'bad').users.getProfile({ userId: 'me' }, NO_RETRY))).status,
          401,
        );
      } finally {
        await custom.close();
      }
    });
  });

  describe('watch / stop', () => {
    it('records watches and stops and notifies while watching', async () => {
      const notes: GmailNotification[] = [];
      s.onNotification((n) => notes.push(n));
      const profile = await api.users.getProfile({ userId: 'me' });
      const w = await api.users.watch({
        userId: 'me',
        requestBody: { topicName: 'projects/demo/topics/gmail', labelIds: ['INBOX'] },
      });
      assert.equal(w.data.historyId, profile.data.historyId);
      const exp = Number(w.data.expiration);
      assert.ok(Math.abs(exp - (Date.now() + 7 * 86_400_000)) < 60_000, `expiration ${exp}`);

      const m = s.addMessage(ALICE);
      await new Promise((r) => setImmediate(r));
      assert.deepEqual(notes, [
        { emailAddress: ALICE, historyId: s.historyId(ALICE), topicName: 'projects/demo/topics/gmail' },
      ]);
      assert.equal(m.historyId, s.historyId(ALICE));

      const stopped = await api.users.stop({ userId: 'me' });
      assert.equal(stopped.status, 204);
      s.addMessage(ALICE);
      await new Promise((r) => setImmediate(r));
      assert.equal(notes.length, 1);

      const log = s.watches(ALICE);
      assert.deepEqual(
        log.map((x) => x.kind),
        ['watch', 'stop'],
      );
      assert.equal(log[0]!.topicName, 'projects/demo/topics/gmail');
      assert.deepEqual(log[0]!.labelIds, ['INBOX']);
      assert.equal(s.calls.watch, 1);
      assert.equal(s.calls.stop, 1);

      const bad = await rejection(() =>
        api.users.watch({ userId: 'me', requestBody: { labelIds: ['INBOX'] } }, NO_RETRY),
      );
      assert.equal(bad.status, 400);
      assert.equal(s.watches(ALICE).length, 2);
    });
  });

  describe('misc', () => {
    it('applies latency to every answer', async () => {
      await api.users.getProfile({ userId: 'me' });
      // Half a second: a loaded machine's stall stays well below it, so the removed latency still shows.
      s.setLatency(500);
      let t0 = Date.now();
      await api.users.getProfile({ userId: 'me' });
      assert.ok(Date.now() - t0 >= 490, 'latency applied');
      s.setLatency(0);
      t0 = Date.now();
      await api.users.getProfile({ userId: 'me' });
      assert.ok(Date.now() - t0 < 490, 'latency removed');
    });

    it('serves the discovery probe and 404s unknown paths', async () => {
      const d = await fetch(`${s.url}$discovery/rest?version=v1`);
      assert.equal(d.status, 200);
      assert.equal(((await d.json()) as { id: string }).id, 'gmail:v1');
      assert.equal(s.calls.discovery, 1);
      const u = await fetch(`${s.url}gmail/v1/users/me/nope`, { headers: { authorization: 'Bearer x' } });
      assert.equal(u.status, 404);
      assert.equal(((await u.json()) as { error: { code: number } }).error.code, 404);
    });

    it('seeds a realistic, deterministic mailbox that the API agrees with', async () => {
      const now = Date.UTC(2026, 0, 15, 12);
      const msgs = s.seed(ALICE, 60, { now });
      const other = await startGmailStandIn({ seed: 7 });
      try {
        const again = other.seed(ALICE, 60, { now });
        assert.deepEqual(
          again.map((m) => [m.subject, m.from.address, m.labelIds, m.internalDate, m.bodyText, m.attachments.length]),
          msgs.map((m) => [m.subject, m.from.address, m.labelIds, m.internalDate, m.bodyText, m.attachments.length]),
        );
      } finally {
        await other.close();
      }
      const received = msgs.filter((m) => !m.labelIds.includes('SENT'));
      assert.equal(received.length, 60);
      const dates = msgs.map((m) => m.internalDate);
      assert.equal(new Set(dates).size, dates.length);
      assert.ok(dates.every((d) => d < now && d > now - 22 * 86_400_000));
      const threadSizes = new Map<string, number>();
      for (const m of msgs) threadSizes.set(m.threadId, (threadSizes.get(m.threadId) ?? 0) + 1);
      assert.ok(
        [...threadSizes.values()].some((n) => n > 1),
        'some multi-message threads',
      );
      assert.ok(
        msgs.some((m) => m.labelIds.includes('SENT')),
        'some sent replies',
      );
      assert.ok(
        received.some((m) => m.attachments.length > 0),
        'some attachments',
      );
      assert.ok(
        received.some((m) => !m.labelIds.includes('UNREAD')) && received.some((m) => m.labelIds.includes('UNREAD')),
        'read and unread',
      );
      assert.ok(
        received.some((m) => m.bodyHtml && m.bodyText) && received.some((m) => m.bodyHtml === undefined),
        'body variants',
      );

      const listed: string[] = [];
      let pageToken: string | undefined;
      do {
        const { data } = await api.users.messages.list({
          userId: 'me',
          labelIds: ['INBOX'],
          maxResults: 25,
          ...(pageToken ? { pageToken } : {}),
        });
        listed.push(...(data.messages ?? []).map((m) => m.id!));
        pageToken = data.nextPageToken ?? undefined;
      } while (pageToken);
      const inbox = s.inbox(ALICE);
      assert.deepEqual(
        listed,
        inbox.map((m) => m.id),
      );
      assert.equal(inbox.length, 60);
      assert.deepEqual(
        inbox.map((m) => m.unread),
        inbox.map((m) => m.labelIds.includes('UNREAD')),
      );
      const profile = await api.users.getProfile({ userId: 'me' });
      assert.equal(profile.data.messagesTotal, msgs.length);
      assert.equal(profile.data.threadsTotal, threadSizes.size);
    });
  });
});
