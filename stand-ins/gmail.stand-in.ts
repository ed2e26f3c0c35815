/**
 * Stand-in for the Gmail REST API v1, for integration tests, benchmarks and
 * `npm run demo`. Drive it with the real `@googleapis/gmail` client:
 *
 *   const standIn = await startGmailStandIn();
 *   const auth = new OAuth2Client(); auth.setCredentials({ access_token: 'tok' });
 *   const api = gmail({ version: 'v1', auth, rootUrl: standIn.url });
 *
 * Auth: `Authorization: Bearer <token>` is mapped to a mailbox email by
 *   1. `opts.authorize(token)` when given (null -> 401), else
 *   2. the token map filled by `standIn.setToken(token, email)`, else
 *   3. while no token was registered at all, any non-empty bearer token maps
 *      to the default mailbox `alice@example.com` (DEFAULT_MAILBOX).
 * Mailboxes are created on first use. `users/{userId}` accepts `me` or the
 * authorized address (anything else -> 403).
 *
 * Serves (under `/gmail/v1/users/{userId}/`): GET profile, GET labels/{id} (a
 * label's counts: INBOX and the other system labels, or any label a message carries),
 * GET messages,
 * GET messages/{id}, GET messages/{id}/attachments/{attachmentId},
 * GET threads/{id}, GET history, POST watch, POST stop; plus
 * GET /$discovery/rest?version=v1 at the root. Errors use Google's JSON
 * error shape. Wire snippets are HTML-escaped like Gmail's (`&#39;`), while
 * the control API's `snippet` is plain text. `addRawMessage` serves real RFC 822 mail
 * (headers as sent, MIME tree, attachments; see gmail/raw-message.ts).
 *
 * This module starts the server and holds the control API; the state, routing, endpoints and
 * wire shapes are in gmail/.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { GmailState } from './gmail/gmail.state.ts';
import { handle } from './gmail/gmail.routes.ts';
import type { GmailStandIn, GmailStandInOptions } from './gmail/gmail.types.ts';
import { googleError, send } from './gmail/google-error.wire.ts';
import { seedMailbox } from './gmail/mailbox.seed.ts';
import type { StandInMessage } from './gmail/mailbox.types.ts';

export type {
  Address,
  AttachmentSpec,
  NewMessage,
  RawMessageOptions,
  RawPayload,
  SeedOptions,
  StandInAttachment,
  StandInMessage,
  WatchRecord,
  WirePart,
} from './gmail/mailbox.types.ts';
export {
  DEFAULT_MAILBOX,
  type FaultEndpoint,
  type FaultSpec,
  type GmailNotification,
  type GmailStandIn,
  type GmailStandInOptions,
  type InboxMessage,
  type RecordedRequest,
} from './gmail/gmail.types.ts';
export { googleError } from './gmail/google-error.wire.ts';
export {
  QUOTA_COSTS,
  QUOTA_COSTS_2026,
  QUOTA_COSTS_LEGACY,
  type QuotaCosts,
  type QuotaEndpoint,
  type QuotaProfile,
  type QuotaSetting,
  type QuotaSpec,
} from './gmail/quota.model.ts';

export async function startGmailStandIn(opts: GmailStandInOptions = {}): Promise<GmailStandIn> {
  const state = new GmailState(opts);

  const server = createServer((req, res) => {
    handle(state, req, res).catch((err: unknown) => {
      send(res, 500, googleError(500, `stand-in bug: ${err instanceof Error ? err.message : String(err)}`));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;

  const mailbox = (email: string) => state.store.mailbox(email);
  // A caller's copy, so it cannot change the mailbox; field by field, as structuredClone costs
  // far more and the model tests read the whole mailbox after every step.
  const copy = (m: StandInMessage): StandInMessage => ({
    ...m,
    labelIds: [...m.labelIds],
    from: { ...m.from },
    to: m.to.map((a) => ({ ...a })),
    cc: m.cc.map((a) => ({ ...a })),
    attachments: m.attachments.map((a) => ({ ...a })),
    references: [...m.references],
    ...(m.raw ? { raw: structuredClone(m.raw) } : {}),
  });

  return {
    url: state.url,
    setToken: (token, email) => void state.tokens.set(token, email.toLowerCase()),
    addMessage: (email, partial) => copy(mailbox(email).add(partial)),
    addRawMessage: (email, raw, rawOpts) => copy(mailbox(email).addRaw(raw, rawOpts)),
    addSentReply(email, threadId, partial = {}) {
      const mb = mailbox(email);
      const thread = mb.threadMessages(threadId);
      const other = [...thread].reverse().find((m) => m.from.address.toLowerCase() !== mb.email);
      return copy(
        mb.add({
          from: { name: mb.ownerName, address: mb.email },
          to: other ? other.from : (thread[0]?.to ?? []),
          bodyText: 'Thanks, sounds good.\n\nCheers',
          ...partial,
          threadId,
          labelIds: partial.labelIds ?? ['SENT'],
        }),
      );
    },
    deleteMessage: (email, id) => mailbox(email).delete(id),
    setRead: (email, id, read) =>
      void (read ? mailbox(email).modify(id, [], ['UNREAD']) : mailbox(email).modify(id, ['UNREAD'])),
    archive: (email, id) => void mailbox(email).modify(id, [], ['INBOX']),
    moveToInbox: (email, id) => void mailbox(email).modify(id, ['INBOX']),
    modifyLabels: (email, id, change) => void mailbox(email).modify(id, change.add, change.remove),
    seed: (email, count, seedOpts) => seedMailbox(mailbox(email), state.store, count, seedOpts).map(copy),
    inbox: (email) =>
      mailbox(email)
        .sorted()
        .filter((m) => m.labelIds.includes('INBOX'))
        .map((m) => ({ ...copy(m), unread: m.labelIds.includes('UNREAD') })),
    messages: (email) => mailbox(email).sorted().map(copy),
    getMessage: (email, id) => {
      const m = mailbox(email).messages.get(id);
      return m && copy(m);
    },
    historyId: (email) => mailbox(email).historyId,
    expireHistory: (email) => {
      const mb = mailbox(email);
      mb.historyFloor = mb.historyId;
    },
    injectFault(fault) {
      if (!fault.hang && !fault.reset && !fault.garbage && !(fault.status >= 100 && fault.status <= 599)) {
        throw new Error(`gmail stand-in: fault status ${fault.status} needs hang, reset or garbage`);
      }
      state.faults.push({ spec: { ...fault }, seen: 0, fired: 0 });
    },
    clearFaults: () => void (state.faults.length = 0),
    setLatency: (ms) => void (state.latencyMs = ms),
    setDeltaOnlyLabels: (on) => void (state.deltaOnlyLabels = on),
    setQuota: (quota) => state.quota.set(quota),
    quotaPeak: (user) => state.quota.peak(user),
    quotaSpent: (user) => state.quota.spent(user),
    quotaUnitsByEndpoint: () => state.quota.unitsByEndpoint(),
    inFlightPeak: (user, endpoint) => state.heldPeak(user.toLowerCase(), endpoint),
    keepThreadAnswers: (on) => void (state.threadAnswers = on ? (state.threadAnswers ?? new Map()) : null),
    calls: state.calls,
    requests: state.requests,
    resetCounters: () => state.resetCounters(),
    watches: (email) => mailbox(email).watchLog.map((w) => ({ ...w })),
    onNotification(listener) {
      state.listeners.add(listener);
      return () => void state.listeners.delete(listener);
    },
    async close() {
      state.faults.length = 0;
      for (const res of state.hanging) res.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
