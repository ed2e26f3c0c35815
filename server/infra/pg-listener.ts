/**
 * One dedicated LISTEN connection (a pg.Client outside every pool) on some channels. A lost
 * connection is reopened with a backoff and listened on again; what was notified meanwhile is
 * unknown, so `reconnected` runs once it listens again (not on the first connection). Used by
 * the live events' hub and by the job engine's wake-ups.
 */
import pg from 'pg';
import { errorSummary, type Logger } from './logger.ts';

export interface PgListener {
  /** Connects and listens (resolves once LISTEN succeeded, or the first attempt failed and retries are scheduled). */
  start(): Promise<void>;
  /** Closes the connection; no retry after. */
  stop(): Promise<void>;
}

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
}): PgListener {
  const { log } = deps;
  // Written into LISTEN as they are: plain lower-case names only.
  for (const channel of deps.channels) if (!/^[a-z_][a-z0-9_]*$/.test(channel)) throw new Error(`not a plain channel name: ${channel}`);
  let client: pg.Client | undefined;
  let stopped = false;
  let retry: NodeJS.Timeout | undefined;
  let attempt = 0;

  async function connect(): Promise<void> {
    const c = new pg.Client({ connectionString: deps.databaseUrl, connectionTimeoutMillis: 5_000 });
    c.on('notification', (m) => {
      if (deps.channels.includes(m.channel)) deps.hear(m.channel, m.payload);
    });
    c.on('error', (err) => {
      log.warn(errorSummary(err), `${deps.what}: listening connection failed`);
      lost(c);
    });
    c.on('end', () => lost(c));
    try {
      await c.connect();
      for (const channel of deps.channels) await c.query(`listen ${channel}`);
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
    if (attempt > 0) deps.reconnected();
    attempt = 0;
  }

  function lost(c: pg.Client) {
    // A stale connection's late 'end' (a newer one is listening) changes nothing.
    if (client !== undefined && client !== c) return;
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
