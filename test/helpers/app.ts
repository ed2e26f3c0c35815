/**
 * buildTestApp(t): the real server on an ephemeral port, with its own database, its logs
 * captured, and cleanup registered on the test context. Every answer it gives to a
 * documented operation is checked against /openapi.json (openapi-recorder.ts): a mismatch
 * fails the test file, naming the test.
 */
import { randomBytes } from 'node:crypto';
import { after, before } from 'node:test';
import { appendFileSync, mkdirSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig, type Config } from '../../server/infra/config.ts';
import type { Container, ContainerOverrides } from '../../server/container.ts';
import { bindLocal } from '../../server/infra/database.ts';
import type { RouteInstaller } from '../../server/http/route-installer.ts';
import { createLogger } from '../../server/infra/logger.ts';
import type { RunningServer } from '../../server/http/listen.ts';
import { startService } from '../../server/start-service.ts';
import { Browser } from '../../harness/browser.ts';
import { createTestDatabase } from './database.ts';
import { answerRecorder, type AnswerRecorder } from './openapi-recorder.ts';
import { createContextInner } from '../../server/trpc/context.ts';
import { createCallerFactory } from '../../server/trpc/init.ts';
import { appRouter } from '../../server/trpc/routers/index.ts';
import type { SessionUser } from '../../server/domain/auth/session-user.ts';
import { countAccounts, findAccount, type AccountIdentity } from '../../server/domain/auth/account-rows.ts';
import { readSyncStateRow, readSyncStateRows, type SyncStateRow } from '../../server/domain/mail/sync/states/index.ts';

export const WEB_ORIGIN = 'http://web.test:5173';
export const ADMIN_TOKEN = 'test-status-admin-token-0123456789';

/** Every log line of the suite is also appended here, for the secrets scan. */
const LOG_DIR = path.resolve('test-artifacts/logs');

export interface TestApp {
  url: string;
  config: Readonly<Config>;
  container: Container;
  server: RunningServer;
  logs: Record<string, unknown>[];
  databaseUrl: string;
  browser(origin?: string): Browser;
  /** An account as stored, read through its owning module (account-rows.ts); null when there is none. */
  account(by: { id: string } | { sub: string } | { email: string }): Promise<AccountIdentity | null>;
  /** How many accounts are stored. */
  accountCount(): Promise<number>;
  /**
   * An account's sync state as stored, read through its owning module (mail/sync/states); without an id, the
   * only account's (it throws when there are several). Null when there is none.
   */
  syncState(accountId?: string): Promise<SyncStateRow | null>;
  /** The check of its answers against /openapi.json (unset when the test turned it off). */
  answers?: AnswerRecorder;
  /** Stops the service (server, workers, pools) and keeps its database, for a test to read what was left. */
  stop(): Promise<void>;
  /** stop(), then drop the test's database. */
  close(): Promise<void>;
}

interface TestContext {
  after(fn: () => unknown): void;
  name?: string;
}

export function testEnv(extra: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return {
    PORT: '0',
    WEB_ORIGIN,
    SESSION_SECRET: randomBytes(24).toString('base64url'),
    TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    STATUS_ADMIN_TOKEN: ADMIN_TOKEN,
    LOG_LEVEL: 'debug',
    // The stand-ins enforce no quota unless a test sets one; pacing has tests of its own.
    GMAIL_USER_UNITS_PER_MINUTE: '0',
    ...extra,
  };
}

export interface TestAppOptions {
  env?: Record<string, string | undefined>;
  databaseUrl?: string;
  overrides?: Omit<ContainerOverrides, 'log'>;
  routes?: RouteInstaller[];
  /**
   * `false`: do not check this app's answers against /openapi.json. Only for a test whose
   * setup makes the server answer outside its document on purpose, with a comment saying why.
   */
  conformance?: false;
}

/** Apps started on another app's database (a second instance): stopped before that database is dropped. */
const riders = new Map<string, Set<() => Promise<void>>>();

export async function buildTestApp(t: TestContext, opts: TestAppOptions = {}): Promise<TestApp> {
  const db = opts.databaseUrl ? undefined : await createTestDatabase();
  const databaseUrl = opts.databaseUrl ?? db!.url;
  // The redirect URI and cookie rules derive from PUBLIC_BASE_URL: know the port up front, by
  // binding it now and handing the socket to the server (no window for another file to take it).
  // A test that names its PORT (the https-cookie test) gets that one, bound the same way.
  const socket = await bindLocal(Number(opts.env?.PORT ?? 0));
  const port = (socket.address() as AddressInfo).port;
  const logs: Record<string, unknown>[] = [];
  let config: Readonly<Config>;
  let recorder: AnswerRecorder | undefined;
  let service: Awaited<ReturnType<typeof startService>>;
  try {
    config = loadConfig(
      testEnv({
        DATABASE_URL: databaseUrl,
        HOST: '127.0.0.1',
        PORT: String(port),
        PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
        ...opts.env,
      }),
    );
    mkdirSync(LOG_DIR, { recursive: true });
    const logFile = path.join(LOG_DIR, `${process.pid}.ndjson`);
    const destination = new Writable({
      write(chunk, _enc, cb) {
        const text = chunk.toString();
        appendFileSync(logFile, text);
        for (const line of text.split('\n').filter(Boolean)) logs.push(JSON.parse(line));
        cb();
      },
    });
    const log = createLogger({ level: 'debug', destination });
    // Background sync is off unless a test asks for it: route tests own their account's syncs.
    const overrides = { liveInbox: { work: false }, ...opts.overrides, log };
    recorder =
      opts.conformance === false
        ? undefined
        : await answerRecorder(config.publicBaseUrl, t.name ?? 'an app shared by a describe block');
    service = await startService({
      config,
      overrides,
      routes: opts.routes,
      observe: recorder?.observe,
      stopGraceMs: 1_000,
      listenOn: socket,
    });
  } catch (err) {
    socket.close();
    await db?.drop();
    throw err;
  }
  const { container, server } = service;
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    if (db) {
      // The instances sharing this database stop first (their stop still writes to it), whatever the order of the hooks.
      for (const stopRider of riders.get(databaseUrl) ?? []) await stopRider();
      riders.delete(databaseUrl);
    } else riders.get(databaseUrl)?.delete(close);
    await service.stop();
    await db?.drop();
  };
  if (!db) riders.set(databaseUrl, (riders.get(databaseUrl) ?? new Set()).add(close));
  t.after(close);
  return {
    url,
    config,
    container,
    server,
    logs,
    databaseUrl,
    browser: (origin = WEB_ORIGIN) => new Browser(url, origin),
    account: (by) => findAccount(container.orm.em.fork(), by),
    accountCount: () => countAccounts(container.orm.em.fork()),
    syncState: async (accountId) => {
      if (accountId) return readSyncStateRow(container.orm.em.fork(), accountId);
      const rows = await readSyncStateRows(container.orm.em.fork());
      if (rows.length > 1) throw new Error(`${rows.length} accounts have a sync state: name the one to read`);
      return rows[0] ?? null;
    },
    answers: recorder,
    stop: service.stop,
    close,
  };
}

/**
 * One app for a describe block (rate limits out of the way), built before its tests and closed
 * after them; called outside any describe, one app for the whole file. `opts`: as buildTestApp's.
 */
export function sharedApp(
  env: Record<string, string | undefined> = {},
  opts: Omit<TestAppOptions, 'env'> = {},
): () => TestApp {
  const holder: { app?: TestApp } = {};
  let close: (() => unknown) | undefined;
  before(async () => {
    holder.app = await buildTestApp(
      { after: (fn) => (close = fn) },
      { ...opts, env: { RATE_LIMIT_MAX: '100000', ...env } },
    );
  });
  after(() => close?.());
  return () => holder.app!;
}

const createCaller = createCallerFactory(appRouter);

/**
 * A procedure test's set-up (no HTTP): the app router's caller over createContextInner with
 * the app's services, a fresh EntityManager per procedure and, if given, a user or a bearer token.
 */
export function callerFor(
  app: TestApp,
  opts: { user?: SessionUser | null; bearerToken?: string; requestId?: string } = {},
) {
  const { container } = app;
  const { requestId = 'caller-test-0001', ...rest } = opts;
  return createCaller(
    createContextInner({
      services: container.services,
      em: () => container.orm.em.fork(),
      requestId,
      log: container.log,
      ...rest,
    }),
  );
}
