/**
 * The live-inbox world for integration tests: the stand-in providers, a Pub/Sub stand-in
 * with the notification topic and subscription, the real app (its job engine's workers
 * running, its notification intake reading that subscription when `intake` is on), and a
 * signed-in user (whose sign-in queued the first sync). Notifications of the Gmail
 * stand-in are forwarded to the topic while `forward` is on, as the provider would publish
 * them; tests can also publish by hand (duplicates, stale history ids, garbage).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { freePort } from '../../../server/infra/database.ts';
import { buildTestApp, WEB_ORIGIN, type TestApp } from '../../helpers/app.ts';
import type { Browser } from '../../../harness/browser.ts';
import type { ContainerOverrides } from '../../../server/container.ts';
import { csrfHeaders, signIn, startProviders, type Providers } from '../../helpers/providers.ts';
import { startPubSubStandIn, type PubSubStandIn } from '../../../stand-ins/pubsub.stand-in.ts';
import pg from 'pg';
import type { SyncStateRow } from '../../../server/domain/mail/sync/states/index.ts';
import { checkpoint as storedCheckpoint } from './model-world.ts';

/**
 * For a test that scales the mail quota's minute down to seconds: the ledger's allowance for a
 * call's way from its grant to the stand-in (the pacer's `skewMs`). The service and the stand-in
 * share a test process, beside three other shards on two cores, where a stalled loop of a few
 * hundred ms, a large share of a 2 s window, happens: with the default 250 ms the stand-in
 * refused a few calls in loaded runs. The stand-in's limit stays the service's: an overspend still fails.
 * Not for a test whose user calls must find room: the ledger's window then outlasts their 2.5 s wait.
 */
export const LOADED_SKEW_MS = 1_000;

export const ALICE = 'alice@example.com';
export const TOPIC = 'mail';
export const SUBSCRIPTION = 'mail-sync';
export const TOPIC_NAME = 'projects/test-project/topics/mail';
/** Sync jobs retried twice, 1 s then ~2 s apart, before they are set aside (production: 10, from 5 s). */
export const LIVE_RETRY = { limit: 2, delaySeconds: 1 };
/** A sync behind a notified history id looks again after 1 s, backing off, for 4 s (production: from 2 s, for 2 minutes). */
export const LIVE_HISTORY_LAG = { firstSeconds: 1, windowSeconds: 4 };

export interface LiveWorld {
  app: TestApp;
  providers: Providers;
  gmail: Providers['gmail'];
  pubsub: PubSubStandIn;
  browser: Browser;
  csrfToken: string;
  accountId: string;
  /** While true, every provider notification is published to the topic. */
  forward: boolean;
  published: number;
  sql<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
  /** Publishes a notification as the provider would (defaults: the user, the mailbox's current history id). */
  publish(body?: Partial<{ emailAddress: string; historyId: string }> | string): void;
  /** Syncs through the route until nothing is left (waiting while a background sync holds the account). */
  syncAll(browser?: Browser, csrfToken?: string): Promise<void>;
  /** Waits (bounded) until no mail-sync job waits or runs: the background work is done. */
  idle(timeoutMs?: number): Promise<void>;
  /** Messages stored for an account: total rows, distinct provider ids, the inbox as (id, unread) pairs. */
  stored(accountId?: string): Promise<{ rows: number; distinct: number; inbox: string[] }>;
  /** The provider's inbox in the same form as `stored().inbox`. */
  providerInbox(email?: string): string[];
  checkpoint(accountId?: string): Promise<bigint | null>;
  /** The account's sync_states row, read through its repository (states/watch.ts). */
  syncState(accountId?: string): Promise<SyncStateRow | null>;
  /** Sync log lines ('mail sync') of an account so far. */
  syncLogs(accountId?: string): Record<string, unknown>[];
  /** Waits (bounded) until the subscription holds nothing (every message acknowledged) and the jobs it made are done. */
  drained(timeoutMs?: number): Promise<void>;
  /**
   * Makes the database refuse inserts into `table` (rows matching `when`, an SQL condition on
   * `new`, if given) until the returned function lifts it: a commit that fails, on purpose.
   */
  refuseInserts(table: string, when?: string): Promise<() => Promise<void>>;
  /** Runs the scheduled watch renewal and quiet-account sweep now, as their schedule would. */
  maintenance(): Promise<{ renewed: number; failed: string[]; queued: number; stale: string[] }>;
  /** Another instance of the service on the same database and subscription (its own job workers and intake). */
  instance(opts?: { intake?: boolean; work?: boolean }): Promise<TestApp>;
  /** Signs another user in with a fresh browser. */
  signInAs(user: { sub: string; email: string }): Promise<{ browser: Browser; csrfToken: string; accountId: string }>;
}

/** Polls `check` until it holds (bounded); returns its last value. */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  what: string,
  timeoutMs = 10_000,
  intervalMs = 25,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v) return v;
    if (Date.now() > deadline) assert.fail(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

export async function startLiveWorld(
  t: { after(fn: () => unknown): void },
  opts: {
    intake?: boolean;
    work?: boolean;
    ackDeadlineSeconds?: number;
    env?: Record<string, string>;
    emulatorHost?: string;
    forward?: boolean;
    concurrency?: { workers: number; batch: number; pollSeconds?: number };
    /** The mail quota's window and clock, for this app and every other instance of the world. */
    mailQuota?: ContainerOverrides['mailQuota'];
    /** How failing sync jobs are retried (default LIVE_RETRY). */
    retry?: { limit: number; delaySeconds: number };
    /** Analysis on arrival's workers, threads per job and retry timing, for this app and every other instance. */
    autoTriage?: ContainerOverrides['autoTriage'];
  } = {},
): Promise<LiveWorld> {
  const providers = await startProviders(t);
  const pubsub = await startPubSubStandIn({ projectId: 'test-project' });
  t.after(() => pubsub.close());
  pubsub.createTopic(TOPIC);
  pubsub.createSubscription(TOPIC, SUBSCRIPTION, { ackDeadlineSeconds: opts.ackDeadlineSeconds ?? 10 });
  const intakeEnv: Record<string, string> =
    opts.intake === false
      ? {}
      : { PUBSUB_SUBSCRIPTION: SUBSCRIPTION, PUBSUB_EMULATOR_HOST: opts.emulatorHost ?? pubsub.host };
  // Secrets shared with any other instance of the world (sessions and tokens work on both).
  const secrets = {
    SESSION_SECRET: randomBytes(24).toString('base64url'),
    TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  };
  const env = { ...providers.env, ...secrets, PUBSUB_PROJECT_ID: 'test-project', ...opts.env };
  const subscriptionEnv = { PUBSUB_SUBSCRIPTION: SUBSCRIPTION, PUBSUB_EMULATOR_HOST: opts.emulatorHost ?? pubsub.host };
  const app = await buildTestApp(t, {
    env: { ...env, ...intakeEnv },
    overrides: {
      liveInbox: {
        work: opts.work ?? true,
        retry: opts.retry ?? LIVE_RETRY,
        historyLag: LIVE_HISTORY_LAG,
        concurrency: opts.concurrency,
      },
      mailQuota: opts.mailQuota,
      autoTriage: opts.autoTriage,
    },
  });
  const sql = async <T>(query: string, params: unknown[] = []) =>
    (await app.container.orm.em.fork().execute(query, params)) as T[];
  const accountOf = async (email: string) => (await app.account({ email }))!.id;

  const world: LiveWorld = {
    app,
    providers,
    gmail: providers.gmail,
    pubsub,
    browser: app.browser(),
    csrfToken: '',
    accountId: '',
    forward: opts.forward ?? true,
    published: 0,
    sql,
    publish(body = {}) {
      const data =
        typeof body === 'string'
          ? body
          : { emailAddress: ALICE, historyId: String(providers.gmail.historyId(body.emailAddress ?? ALICE)), ...body };
      pubsub.publish(TOPIC, data);
      world.published++;
    },
    async syncAll(browser = world.browser, csrfToken = world.csrfToken) {
      // The background sync (sign-in backfill, notifications) first: the route's window is 10 calls a minute.
      if (opts.work !== false) await world.idle();
      for (let i = 0; i < 50; i++) {
        const res: Response = await browser.fetch('/api/mail/sync', {
          method: 'POST',
          headers: csrfHeaders(csrfToken, WEB_ORIGIN),
        });
        const body = await res.json();
        if (
          res.status === 429 &&
          body.error?.code === 'RATE_LIMITED' &&
          res.headers.get('ratelimit-remaining') !== '0'
        ) {
          await world.idle(); // a background sync took the account meanwhile
          continue;
        }
        assert.equal(res.status, 200, JSON.stringify(body));
        if (!body.hasMore) return;
      }
      assert.fail('sync did not finish');
    },
    async idle(timeoutMs = 20_000) {
      await waitFor(
        async () => (await app.container.liveInbox.engine.count('mail-sync')) === 0,
        'no mail-sync job waiting or running',
        timeoutMs,
        50,
      );
    },
    async stored(accountId = world.accountId) {
      const rows = await sql<{ pid: string; in_inbox: boolean; is_unread: boolean }>(
        'select provider_message_id as pid, in_inbox, is_unread from mail_messages where account_id = ?',
        [accountId],
      );
      return {
        rows: rows.length,
        distinct: new Set(rows.map((r) => r.pid)).size,
        inbox: rows
          .filter((r) => r.in_inbox)
          .map((r) => `${r.pid}:${r.is_unread ? 'unread' : 'read'}`)
          .sort(),
      };
    },
    providerInbox(email = ALICE) {
      return providers.gmail
        .inbox(email)
        .map((m) => `${m.id}:${m.unread ? 'unread' : 'read'}`)
        .sort();
    },
    checkpoint: (accountId = world.accountId) => storedCheckpoint(app, accountId),
    syncState: (accountId = world.accountId) => app.syncState(accountId),
    syncLogs(accountId = world.accountId) {
      return app.logs.filter((l) => l.msg === 'mail sync' && l.accountId === accountId);
    },
    async drained(timeoutMs = 20_000) {
      await waitFor(
        () => {
          const s = pubsub.stats(SUBSCRIPTION);
          return s.available + s.leased === 0;
        },
        'the subscription to be drained',
        timeoutMs,
      );
      await world.idle(timeoutMs);
    },
    async refuseInserts(table, when) {
      const name = `refuse_${table.replace(/\W/g, '_')}`;
      await sql(
        `create or replace function ${name}() returns trigger language plpgsql as $$ begin raise exception 'refused for the test'; end $$`,
      );
      await sql(
        `create trigger ${name} before insert on ${table} for each row ${when ? `when (${when}) ` : ''}execute function ${name}()`,
      );
      return async () => void (await sql(`drop trigger ${name} on ${table}`));
    },
    async maintenance() {
      const { scheduled } = app.container.liveInbox;
      const sweep = await scheduled['quiet-sweep']();
      const renewal = await scheduled['watch-renewal']();
      return { ...renewal, ...sweep };
    },
    async instance(o = {}) {
      return buildTestApp(t, {
        databaseUrl: app.databaseUrl,
        env: { ...env, ...(o.intake === false ? {} : subscriptionEnv) },
        overrides: {
          liveInbox: { work: o.work ?? true, retry: LIVE_RETRY, historyLag: LIVE_HISTORY_LAG },
          mailQuota: opts.mailQuota,
          autoTriage: opts.autoTriage,
        },
      });
    },
    async signInAs(user) {
      providers.identity.setCurrentUser(user);
      const browser = app.browser();
      const { csrfToken } = await signIn(browser);
      return { browser, csrfToken, accountId: await accountOf(user.email) };
    },
  };
  providers.gmail.onNotification((n) => {
    if (!world.forward) return;
    pubsub.publish(TOPIC, { emailAddress: n.emailAddress, historyId: String(n.historyId) });
    world.published++;
  });
  const { csrfToken } = await signIn(world.browser);
  world.csrfToken = csrfToken;
  world.accountId = await accountOf(ALICE);
  return world;
}

/** An address where nothing listens (an unreachable queue). */
export async function deadHost(): Promise<string> {
  return `127.0.0.1:${await freePort()}`;
}

/** Cuts the app's database off (no new connections, existing ones terminated) until `restore`. */
export async function cutDatabase(databaseUrl: string): Promise<{ restore(): Promise<void> }> {
  const url = new URL(databaseUrl);
  const name = url.pathname.slice(1);
  url.pathname = '/postgres';
  const admin = async (q: string, params: unknown[] = []) => {
    const c = new pg.Client({ connectionString: url.toString() });
    await c.connect();
    try {
      await c.query(q, params);
    } finally {
      await c.end();
    }
  };
  await admin(`alter database ${name} with allow_connections false`);
  await admin('select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()', [
    name,
  ]);
  return { restore: () => admin(`alter database ${name} with allow_connections true`) };
}
