/**
 * The live events of an account, as GET /api/mail/events and the `mail.events` subscription
 * serve them: a `sync` event first (where the account stands), then what this instance hears
 * (coalesced per stream), resumed from a `Last-Event-ID` through the account's event log.
 * Streams are limited per session and per account across the cluster: each open stream holds
 * a row of `event_streams` (server/domain/events/slots.ts), kept alive by the instance's heartbeat,
 * and per instance (its memory and sockets). A stream ends with its session: logout,
 * disconnect and deletion announce it to every instance at once; as a notification can be
 * lost (the LISTEN connection's reconnect gap) and expiry, the purge and a new sign-in
 * announce nothing, each instance also asks on its heartbeat and after a reconnect which of
 * its streams' sessions ended, in one statement (domain/auth/session-rows.ts `endedStreamSessions`).
 */
import { createHash } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { MailEvent } from '../../../shared/schemas/events.ts';
import { announceEnd } from './announce.ts';
import { eventsSince, latestEventId, syncSnapshot } from './event-log.ts';
import { AppError } from '../errors.ts';
import { errorSummary } from '../../infra/logger.ts';
import { endedStreamSessions } from '../auth/session-rows.ts';
import type { EventHub } from './hub.ts';
import type { EventStream } from './stream.ts';
import { createLifetimes } from './lifetimes.ts';
import { createStreamSlots } from './slots.ts';

export interface StreamLimits {
  perSession: number;
  perAccount: number;
  /** Open streams this instance serves (EVENT_STREAMS_PER_INSTANCE); past it a new one is SERVICE_UNAVAILABLE. */
  perInstance?: number;
  /** Retry-After of a refused stream (seconds). */
  retryAfterSeconds: number;
  /** Retry-After of a stream refused because the instance is full (seconds): short, a balancer may send the retry elsewhere. */
  busyRetryAfterSeconds?: number;
  /** Interval of the REST stream's comment heartbeat (ms); /trpc uses tRPC's ping (trpc/init.ts). */
  heartbeatMs?: number;
  /**
   * A stream ends after this long (ms): its client reconnects, which checks the session again
   * (an expired one gets AUTH_REQUIRED) and resumes from its last event id without loss. The
   * container sets the session's idle lifetime.
   */
  maxStreamMs?: number;
  /**
   * An open stream's row in `event_streams` lives this long past the instance's last
   * heartbeat (ms; refreshed every `heartbeatMs`): a crashed instance's streams stop counting
   * after it.
   */
  slotTtlMs?: number;
}

export const DEFAULT_STREAM_LIMITS: StreamLimits = {
  perSession: 5,
  perAccount: 20,
  perInstance: 2_000,
  retryAfterSeconds: 30,
  busyRetryAfterSeconds: 5,
  heartbeatMs: 25_000,
  slotTtlMs: 60_000,
};

export interface OpenStream {
  accountId: string;
  /** Stands for the session (see `sessionStreamKey`): its streams are counted and ended together. */
  sessionKey: string;
  lastEventId?: string | null;
  signal: AbortSignal;
}

export interface IdentifiedEvent {
  id: string;
  data: MailEvent;
}

export interface MailEventsService {
  /** Interval of the REST stream's comment heartbeat (ms). */
  readonly heartbeatMs: number;
  /** Checks the limits and positions the stream (errors are thrown here, before any event); then iterate. */
  open(opts: OpenStream): Promise<AsyncGenerator<IdentifiedEvent, void>>;
  /** Ends a session's streams on every instance (logout). */
  endSession(sessionKey: string): Promise<void>;
  /** Ends every stream of the account on every instance (disconnect, deletion). */
  endAccount(accountId: string): Promise<void>;
  /** Ends this instance's streams whose session ended (run on the heartbeat and after a LISTEN reconnect; tests call it). */
  checkSessions(): Promise<void>;
}

/** A session's stream key: derived from its CSRF token (stable for the session, never shown). */
export function sessionStreamKey(csrfToken: string): string {
  return createHash('sha256').update(`mail-events:${csrfToken}`).digest('base64url').slice(0, 22);
}

export function createMailEventsService(deps: {
  orm: MikroORM;
  hub: EventHub;
  limits?: StreamLimits;
}): MailEventsService {
  const { orm, hub } = deps;
  const limits = deps.limits ?? DEFAULT_STREAM_LIMITS;
  const sql = () => orm.em.fork();
  const heartbeatMs = limits.heartbeatMs ?? DEFAULT_STREAM_LIMITS.heartbeatMs!;
  let checking: Promise<void> | undefined;
  // One check at a time: a reconnect during a heartbeat's check shares it.
  const checkSessions = () =>
    (checking ??= endedStreamSessions(orm, hub.sessions())
      .then((ended) => hub.endSessions(ended))
      .finally(() => (checking = undefined)));
  hub.onReconnected(
    () =>
      void checkSessions().catch((err) =>
        hub.log.warn(errorSummary(err), 'live events: sessions not checked after reconnecting'),
      ),
  );
  const slots = createStreamSlots({
    orm,
    limits: {
      perSession: limits.perSession,
      perAccount: limits.perAccount,
      ttlMs: limits.slotTtlMs ?? DEFAULT_STREAM_LIMITS.slotTtlMs!,
    },
    refreshMs: heartbeatMs,
    onError: (err) => hub.log.warn(errorSummary(err), 'live events: stream places not kept or sessions not checked'),
    onBeat: checkSessions,
  });
  hub.onStop(() => slots.stop());
  const refuse = () => new AppError('RATE_LIMITED', { retryAfter: limits.retryAfterSeconds });
  const perInstance = limits.perInstance ?? DEFAULT_STREAM_LIMITS.perInstance!;
  let claiming = 0;
  const lifetimes = limits.maxStreamMs ? createLifetimes<EventStream>(limits.maxStreamMs, (s) => s.end()) : undefined;

  return {
    heartbeatMs,
    async open({ accountId, sessionKey, lastEventId, signal }) {
      // The instance is full (every stream holds a socket, a generator and a share of the pool's reads): try later, or elsewhere.
      if (hub.size() + claiming >= perInstance)
        throw new AppError('SERVICE_UNAVAILABLE', {
          retryAfter: limits.busyRetryAfterSeconds ?? DEFAULT_STREAM_LIMITS.busyRetryAfterSeconds,
        });
      // This instance's own streams refuse without a round trip; the cluster's are counted in `event_streams`.
      const open = hub.count(accountId, sessionKey);
      if (open.session >= limits.perSession || open.account >= limits.perAccount) throw refuse();
      // Counted while its place is claimed, so that opens arriving together cannot pass the cap.
      claiming += 1;
      let slot: string | null;
      try {
        slot = await slots.claim(accountId, sessionKey);
      } finally {
        claiming -= 1;
      }
      if (!slot) throw refuse();
      // Listening before the log is read: what commits in between is held, not lost.
      const stream = hub.add(accountId, sessionKey);
      let closed = false;
      const close = () => {
        if (closed) return;
        closed = true;
        lifetimes?.delete(stream);
        stream.end();
        // Gone from the hub's count once its place is free in the cluster's too.
        void slots.release(slot).finally(() => hub.remove(stream));
      };
      // A stream given up before its first event (the client went away) is let go at once.
      signal.addEventListener('abort', close, { once: true });
      if (signal.aborted) close();
      let first: IdentifiedEvent[];
      try {
        const em = sql();
        const resumed = lastEventId ? await eventsSince(em, accountId, lastEventId) : undefined;
        const position = resumed?.known ? lastEventId! : await latestEventId(em, accountId);
        const snapshot = await syncSnapshot(em, accountId);
        first = [{ id: position, data: { type: 'sync', ...snapshot } }];
        // Resumed from an id no longer (or never) in the log: what came since cannot be told.
        if (resumed && !resumed.known) first.unshift({ id: position, data: { type: 'reset' } });
        stream.open(position, resumed?.events ?? []);
      } catch (err) {
        close();
        throw err;
      }
      if (!closed) lifetimes?.add(stream);
      return (async function* events(): AsyncGenerator<IdentifiedEvent, void> {
        try {
          yield* first;
          // Held by this generator as long as the stream is open: let the snapshot go.
          first.length = 0;
          for (;;) {
            const p = await stream.take();
            if (!p) return;
            if (p.reset) yield { id: p.id, data: { type: 'reset' } };
            else if (p.threadIds.length) yield { id: p.id, data: { type: 'threads', threadIds: p.threadIds } };
            if (p.sync) yield { id: p.id, data: { type: 'sync', ...(await syncSnapshot(sql(), accountId)) } };
          }
        } finally {
          stream.end();
          close();
        }
      })();
    },
    endSession: (sessionKey) => announceEnd(sql(), { session: sessionKey }),
    endAccount: (accountId) => announceEnd(sql(), { accountId }),
    checkSessions,
  };
}
