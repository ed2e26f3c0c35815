/**
 * One dedicated LISTEN connection (a pg.Client outside every pool) on some channels. A lost
 * connection is reopened with a backoff and listened on again; what was notified meanwhile is
 * unknown, so `reconnected` runs once it listens again (not on the first connection). Used by
 * the live events' hub and by the job engine's wake-ups.
 *
 * A connection can die without a word: a failover, or a proxy or NAT that drops an idle flow
 * without FIN or RST leaves a socket that neither errors nor ever delivers a notification
 * again. So the socket keeps TCP keepalive on, and the listener probes itself: every
 * `probe.everyMs` it notifies a channel of its own on its own connection, and a probe not
 * heard back within `probe.timeoutMs` ends the connection, which is then reopened as any lost one.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { errorSummary, type Logger } from './logger.ts';

export interface PgListener {
  /** Connects and listens (resolves once LISTEN succeeded, or the first attempt failed and retries are scheduled). */
  start(): Promise<void>;
  /** Closes the connection; no retry after. */
  stop(): Promise<void>;
}

/** The LISTEN connection's application_name in pg_stat_activity: `mia-listen` and its channels. */
export const listenerName = (channels: readonly string[]): string => `mia-listen ${channels.join(',')}`.slice(0, 63);

export function createPgListener(deps: {
  databaseUrl: string;
  log: Logger;
  /** What listens, for the log lines ("live events"). */
  what: string;
  channels: readonly string[];
  hear(channel: string, payload: string | undefined): void;
  reconnected(): void;
  /** The first retry's delay; it doubles up to 10 s (default 250 ms). */
  retryMs?: number;
  /** How often the connection proves itself, and how long a probe may take (default every 15 s, 5 s). */
  probe?: { everyMs: number; timeoutMs: number };
}): PgListener {
  const { log } = deps;
  // Written into LISTEN as they are: plain lower-case names only.
  for (const channel of deps.channels)
    if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`not a plain channel name: ${channel}`);
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let attempt = 0;
  const probe = deps.probe ?? { everyMs: 15_000, timeoutMs: 5_000 };
  // This listener's own channel: no other instance hears its probes.
  const probeChannel = `mia_probe_${randomBytes(6).toString('hex')}`;
  let probing: { timer: NodeJS.Timeout; deadline?: NodeJS.Timeout; token: string } | undefined;

  function stopProbing() {
    if (!probing) return;
    clearInterval(probing.timer);
    if (probing.deadline) clearTimeout(probing.deadline);
    probing = undefined;
  }

  /** Notifies itself now and then; a probe unheard in time ends the connection (its 'end' reconnects). */
  function startProbing(c: pg.Client) {
    stopProbing();
    const state: NonNullable<typeof probing> = {
      token: '',
      timer: setInterval(() => {
        if (state.deadline) return; // one probe at a time
        state.token = randomBytes(6).toString('hex');
        state.deadline = setTimeout(() => {
          log.warn(
            { timeoutMs: probe.timeoutMs },
            `${deps.what}: the listening connection did not hear itself; reconnecting`,
          );
          state.deadline = undefined;
          // A half-open socket never ends by itself: destroyed, it ends, and is reopened as any lost connection.
          (c as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
          lost(c);
        }, probe.timeoutMs);
        state.deadline.unref();
        c.query('select pg_notify($1, $2)', [probeChannel, state.token]).catch(() => undefined);
      }, probe.everyMs),
    };
    state.timer.unref();
    probing = state;
  }

  async function connect(): Promise<void> {
    // Named for what it listens on (operators and tests find it in pg_stat_activity by that name).
    const name = listenerName(deps.channels);
    const c = new pg.Client({
      connectionString: deps.databaseUrl,
      connectionTimeoutMillis: 5_000,
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      application_name: name,
    });
    c.on('notification', (m) => {
      if (m.channel === probeChannel) {
        if (probing && m.payload === probing.token && probing.deadline) {
          clearTimeout(probing.deadline);
          probing.deadline = undefined;
        }
        return;
      }
      if (deps.channels.includes(m.channel)) deps.hear(m.channel, m.payload);
    });
    c.on('error', (err) => {
      log.warn(errorSummary(err), `${deps.what}: listening connection failed`);
      lost(c);
    });
    c.on('end', () => lost(c));
    try {
      await c.connect();
      for (const channel of [...deps.channels, probeChannel]) await c.query(`listen ${channel}`);
    } catch (err) {
      log.warn(errorSummary(err), `${deps.what}: could not listen`);
      c.removeAllListeners('end');
      await c.end().catch(() => undefined);
      lost(c);
      return;
    }
    if (stopped) {
      await c.end().catch(() => undefined);
      return;
    }
    client = c;
    startProbing(c);
    if (attempt > 0) deps.reconnected();
    attempt = 0;
  }

  function lost(c: pg.Client) {
    // A stale connection's late 'end' (a newer one is listening) changes nothing.
    if (client !== undefined && client !== c) return;
    if (client === c) stopProbing();
    client = undefined;
    if (stopped || retry) return;
    attempt += 1;
    const delay = Math.min(10_000, (deps.retryMs ?? 250) * 2 ** Math.min(attempt - 1, 6));
    retry = setTimeout(() => {
      retry = undefined;
      void connect();
    }, delay);
    retry.unref();
  }

  return {
    start: () => connect(),
    async stop() {
      stopped = true;
      stopProbing();
      if (retry) clearTimeout(retry);
      const c = client;
      client = undefined;
      if (c) {
        c.removeAllListeners('end');
        await c.end().catch(() => undefined);
      }
    },
  };
}
