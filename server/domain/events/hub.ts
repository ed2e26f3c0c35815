/**
 * The instance's side of live events: one dedicated LISTEN connection (pg-listener.ts), its
 * notifications fanned out to this instance's open streams. A lost connection is reopened
 * with a backoff and listened on again; streams open meanwhile may have missed events, so
 * each gets a `reset` (and a fresh `sync`). Stopped before the database closes: it ends every
 * stream and closes the connection.
 */
import { EVENTS_CHANNEL, type Notice } from './announce.ts';
import type { Logger } from '../../infra/logger.ts';
import { createPgListener } from '../../infra/pg-listener.ts';
import { EventStream } from './stream.ts';

export interface EventHub {
  /** Starts listening (resolves once LISTEN succeeded, or the first attempt failed and retries are scheduled). */
  start(): Promise<void>;
  /** Ends every stream, runs what was given to `onStop`, and closes the connection. */
  stop(): Promise<void>;
  /** Runs `fn` at the stop, after the streams ended (freeing the instance's places in `event_streams`). */
  onStop(fn: () => Promise<void>): void;
  /** The instance's logger (what fails off a request's path). */
  readonly log: Logger;
  /** Registers a stream of the account; it receives what is heard from now on. */
  add(accountId: string, sessionKey: string): EventStream;
  remove(stream: EventStream): void;
  /** This instance's open streams of a session and of an account. */
  count(accountId: string, sessionKey: string): { session: number; account: number };
  /** Open streams on this instance (metrics, tests, the instance's cap). */
  size(): number;
  /** The sessions (account and stream key) of this instance's open streams, each once. */
  sessions(): { accountId: string; sessionKey: string }[];
  /** Ends this instance's streams of these session keys. */
  endSessions(keys: readonly string[]): void;
  /** Runs `fn` each time the LISTEN connection listens again after it was lost. */
  onReconnected(fn: () => void): void;
}

export function createEventHub(deps: { databaseUrl: string; log: Logger; retryMs?: number }): EventHub {
  const { log } = deps;
  const byAccount = new Map<string, Set<EventStream>>();
  let stopped = false;
  const stopHooks: (() => Promise<void>)[] = [];
  const reconnectHooks: (() => void)[] = [];

  function each(fn: (s: EventStream) => void, accountId?: string | null) {
    const sets = accountId ? [byAccount.get(accountId)] : [...byAccount.values()];
    for (const set of sets) for (const s of set ?? []) fn(s);
  }

  function hear(payload: string | undefined) {
    let n: Notice;
    try {
      n = JSON.parse(payload ?? '') as Notice;
    } catch {
      return;
    }
    if (n.k === 'end') {
      each((s) => (n.s === undefined || s.sessionKey === n.s ? s.end() : undefined), n.a);
      return;
    }
    each((s) => s.push({ id: n.i, kind: n.k, threadIds: n.t ?? null }), n.a);
  }

  const listener = createPgListener({
    databaseUrl: deps.databaseUrl,
    log,
    what: 'live events',
    channels: [EVENTS_CHANNEL],
    hear: (_channel, payload) => hear(payload),
    // Reconnected: what was announced while nobody listened is unknown to these streams.
    // An end announced then was lost too: the hooks check the streams' sessions again.
    reconnected: () => {
      each((s) => s.resetAll());
      for (const fn of reconnectHooks) fn();
    },
    retryMs: deps.retryMs,
  });

  return {
    start: () => listener.start(),
    async stop() {
      stopped = true;
      each((s) => s.end());
      byAccount.clear();
      for (const fn of stopHooks.splice(0)) await fn();
      await listener.stop();
    },
    onStop: (fn) => void stopHooks.push(fn),
    log,
    add(accountId, sessionKey) {
      const s = new EventStream(accountId, sessionKey);
      if (stopped) s.end();
      let set = byAccount.get(accountId);
      if (!set) byAccount.set(accountId, (set = new Set()));
      set.add(s);
      return s;
    },
    remove(stream) {
      const set = byAccount.get(stream.accountId);
      if (!set) return;
      set.delete(stream);
      if (!set.size) byAccount.delete(stream.accountId);
    },
    count(accountId, sessionKey) {
      const set = byAccount.get(accountId) ?? new Set<EventStream>();
      let session = 0;
      for (const s of set) if (s.sessionKey === sessionKey && !s.isEnded) session += 1;
      return { session, account: [...set].filter((s) => !s.isEnded).length };
    },
    size: () => [...byAccount.values()].reduce((n, set) => n + set.size, 0),
    sessions() {
      const found = new Map<string, { accountId: string; sessionKey: string }>();
      each((s) => void (s.isEnded || found.set(s.sessionKey, { accountId: s.accountId, sessionKey: s.sessionKey })));
      return [...found.values()];
    },
    endSessions(keys) {
      const ended = new Set(keys);
      if (ended.size) each((s) => (ended.has(s.sessionKey) ? s.end() : undefined));
    },
    onReconnected: (fn) => void reconnectHooks.push(fn),
  };
}
