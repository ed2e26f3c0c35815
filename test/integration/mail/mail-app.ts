/**
 * A signed-in test app wired to the stand-in providers, with helpers for the mail routes
 * and direct reads of the stored mail (to prove nothing is duplicated or half-written).
 */
import assert from 'node:assert/strict';
import { buildTestApp, WEB_ORIGIN, type TestApp } from '../../helpers/app.ts';
import type { Browser } from '../../../harness/browser.ts';
import type { ContainerOverrides } from '../../../server/container.ts';
import { csrfHeaders, signIn, startProviders, type Providers } from '../../helpers/providers.ts';

export const ALICE = 'alice@example.com';

export interface MailApp {
  app: TestApp;
  providers: Providers;
  gmail: Providers['gmail'];
  browser: Browser;
  csrfToken: string;
  sync(browser?: Browser, csrfToken?: string): Promise<Response>;
  /** Runs a sync that must succeed and returns its body. */
  syncOk(): Promise<{ messagesSynced: number; hasMore: boolean; lastSyncedAt: string }>;
  /** Syncs until hasMore is false; returns the per-call results. */
  drain(max?: number): Promise<{ messagesSynced: number; hasMore: boolean }[]>;
  getJson(path: string, browser?: Browser): Promise<{ status: number; body: any; res: Response }>;
  sql<T = Record<string, unknown>>(query: string, params?: unknown[]): Promise<T[]>;
  /** Stored messages of the signed-in account: provider id -> row. */
  stored(): Promise<Map<string, { in_inbox: boolean; is_unread: boolean; thread: string }>>;
}

export async function startMailApp(
  t: { after(fn: () => unknown): void },
  opts: {
    env?: Record<string, string>;
    databaseUrl?: string;
    providers?: Providers;
    overrides?: Pick<ContainerOverrides, 'mailBodies'>;
  } = {},
): Promise<MailApp> {
  const providers = opts.providers ?? (await startProviders(t));
  const app = await buildTestApp(t, {
    env: { ...providers.env, ...opts.env },
    databaseUrl: opts.databaseUrl,
    overrides: opts.overrides,
  });
  const browser = app.browser();
  const { csrfToken } = await signIn(browser);
  const sql = async <T>(query: string, params: unknown[] = []) =>
    (await app.container.orm.em.fork().execute(query, params)) as T[];
  const mail: MailApp = {
    app,
    providers,
    gmail: providers.gmail,
    browser,
    csrfToken,
    sync: (b = browser, token = csrfToken) =>
      b.fetch('/api/mail/sync', { method: 'POST', headers: csrfHeaders(token, WEB_ORIGIN) }),
    async syncOk() {
      const res = await mail.sync();
      const body = await res.json();
      assert.equal(res.status, 200, JSON.stringify(body));
      return body;
    },
    async drain(max = 20) {
      const out: { messagesSynced: number; hasMore: boolean }[] = [];
      for (let i = 0; i < max; i++) {
        const r = await mail.syncOk();
        out.push({ messagesSynced: r.messagesSynced, hasMore: r.hasMore });
        if (!r.hasMore) return out;
      }
      throw new Error(`sync did not finish in ${max} calls`);
    },
    async getJson(path, b = browser) {
      const res = await b.fetch(path);
      return { status: res.status, body: await res.json(), res };
    },
    sql,
    async stored() {
      const rows = await sql<{
        provider_message_id: string;
        in_inbox: boolean;
        is_unread: boolean;
        provider_thread_id: string;
      }>(
        `select m.provider_message_id, m.in_inbox, m.is_unread, t.provider_thread_id from mail_messages m join mail_threads t on t.id = m.thread_id
         join accounts a on a.id = m.account_id where a.email = ?`,
        [ALICE],
      );
      return new Map(
        rows.map((r) => [
          r.provider_message_id,
          { in_inbox: r.in_inbox, is_unread: r.is_unread, thread: r.provider_thread_id },
        ]),
      );
    },
  };
  return mail;
}

/**
 * What a sync resumes from, read through the sync state's module: the checkpoint, the listing's cursor and
 * whether a listing runs, the last sync's time. Null before the first sign-in stored a state.
 */
export async function recoveryState(mail: MailApp) {
  const s = await mail.app.syncState();
  return (
    s && {
      history_id: s.history_id,
      full_sync_page_token: s.full_sync_page_token,
      full_sync_active: s.full_sync_active,
      last_synced_at: s.last_synced_at,
    }
  );
}

/** Every thread of the list, walking all pages. */
export async function allThreads(mail: MailApp): Promise<any[]> {
  const out: any[] = [];
  for (let offset = 0; ; offset += 100) {
    const { status, body } = await mail.getJson(`/api/mail/threads?limit=100&offset=${offset}`);
    assert.equal(status, 200);
    out.push(...body.threads);
    if (!body.hasMore) return out;
  }
}
