/**
 * The demo survives a restart on the same data directory: the database is kept and so is
 * the stand-in mailbox (re-seeded from the journal's parameters, live mail replayed), so the
 * threads the database lists still open, the sync resumes from its checkpoint, and new live
 * mail still arrives. The identity stand-in forgets its grants on a restart, so the user
 * signs in again (the web client offers "Reconnect" when the old grant fails). The account's
 * settings are the user's too: the demo turns triage of new mail on for a new account only,
 * so what the user chose survives the restart and that sign-in.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../../server/infra/database.ts';
import { startDemo, DEMO_USER } from '../../../demo/start-demo.ts';
import { JOURNAL_FILE } from '../../../demo/mailbox-journal.ts';
import { Browser } from '../../../harness/browser.ts';
import { createTestDatabase } from '../../helpers/database.ts';
import { csrfHeaders, signIn } from '../../helpers/providers.ts';
import { openSse } from '../events/sse-reader.ts';

type Summary = { id: string; mailThreadId: string; subject: string };

/**
 * Follows the account's live events (GET /api/mail/events) and reads the thread list again
 * after each one until `fn` finds what it waits for: no polling, and few enough reads for the
 * default rate limit. The stream's first event comes at once, so `fn` runs at least twice.
 */
async function untilEvent<T>(browser: Browser, apiBase: string, fn: () => Promise<T | undefined>): Promise<T> {
  const events = await openSse(`${apiBase}/api/mail/events`, { Cookie: browser.cookieHeader() });
  try {
    assert.equal(events.res.status, 200);
    for (;;) {
      const value = await fn();
      if (value !== undefined) return value;
      await events.next();
    }
  } finally {
    events.close();
  }
}

describe('npm run demo, stopped and started again on the same data directory', () => {
  it('keeps mailbox and database together: listed threads open and live mail still arrives', {
    timeout: 90_000,
  }, async (t) => {
    const db = await createTestDatabase();
    const dataDir = mkdtempSync(path.join(tmpdir(), 'mia-demo-restart-'));
    const ports = { apiPort: await freePort(), webPort: await freePort() };
    const start = () =>
      startDemo({ ...ports, dataDir, databaseUrl: db.url, newMailEveryMs: 60 * 60_000, seedMessages: 40, quiet: true });
    const inboxThreads = (demo: Awaited<ReturnType<typeof start>>) =>
      new Set(demo.gmail.inbox(DEMO_USER.email).map((m) => m.threadId));

    /** Signs in and waits until the list holds every inbox thread of the stand-in. */
    async function signInAndFill(demo: Awaited<ReturnType<typeof start>>) {
      const browser = new Browser(demo.apiBase, demo.webOrigin);
      const { csrfToken } = await signIn(browser);
      const expected = inboxThreads(demo);
      const threads = await untilEvent(browser, demo.apiBase, async () => {
        const list = (await (await browser.fetch('/api/mail/threads?limit=100')).json()) as {
          threads: Summary[];
          total: number;
        };
        return list.total === expected.size ? list.threads : undefined;
      });
      assert.deepEqual(new Set(threads.map((s) => s.mailThreadId)), expected);
      return { browser, threads, csrfToken };
    }
    const autoTriage = async (browser: Browser) =>
      ((await (await browser.fetch('/api/settings')).json()) as { autoTriage: boolean }).autoTriage;

    // First run: sign in, let the backfill finish, receive one live message.
    let demo = await start();
    let stopped = false;
    t.after(async () => {
      if (!stopped) await demo.close();
      await db.drop();
    });
    let { browser, threads, csrfToken } = await signInAndFill(demo);
    assert.equal(await autoTriage(browser), true, 'a new demo account triages new mail');
    const off = await browser.fetch('/api/settings', {
      method: 'PATCH',
      headers: csrfHeaders(csrfToken, demo.webOrigin),
      json: { autoTriage: false },
    });
    assert.equal(off.status, 200);
    demo.deliver({ subject: 'Before the restart', bodyText: 'Arrived in the first run.' });
    await untilEvent(browser, demo.apiBase, async () => {
      const list = (await (await browser.fetch('/api/mail/threads?limit=5')).json()) as { threads: Summary[] };
      return list.threads.some((s) => s.subject === 'Before the restart') || undefined;
    });
    const before = {
      mailbox: demo.gmail.messages(DEMO_USER.email).map((m) => [m.id, m.threadId, m.historyId]),
      historyId: demo.gmail.historyId(DEMO_USER.email),
    };
    await demo.close();
    stopped = true;

    // Second run on the same data directory: the same mailbox, rebuilt from the journal.
    demo = await start();
    stopped = false;
    assert.equal(
      readFileSync(path.join(dataDir, JOURNAL_FILE), 'utf8').trim().split('\n').length,
      2,
      'seed parameters and one live message',
    );
    assert.deepEqual(
      demo.gmail.messages(DEMO_USER.email).map((m) => [m.id, m.threadId, m.historyId]),
      before.mailbox,
      'same ids, threads and history ids',
    );
    assert.equal(demo.gmail.historyId(DEMO_USER.email), before.historyId);

    // The old session is still valid (its keys are in the data directory) and lists the kept threads;
    // the old grant is not (the identity stand-in starts empty): the web client offers "Reconnect".
    const old = await browser.fetch('/api/mail/threads?limit=100');
    assert.equal(old.status, 200);
    const unopened = await browser.fetch(`/api/mail/threads/${threads[threads.length - 1]!.id}`);
    assert.equal(unopened.status, 401);
    assert.equal(((await unopened.json()) as { error: { code: string } }).error.code, 'TOKEN_EXPIRED');
    ({ browser, threads } = await signInAndFill(demo));
    assert.equal(await autoTriage(browser), false, 'the user turned it off before the restart: it stays off');
    assert.ok(threads.some((s) => s.subject === 'Before the restart'));
    for (const s of threads) {
      const res = await browser.fetch(`/api/mail/threads/${s.id}`);
      assert.equal(res.status, 200, `thread "${s.subject}" opens after the restart`);
    }

    // New live mail still arrives (watch -> Pub/Sub -> sync from the kept checkpoint), and is journaled.
    demo.deliver({ subject: 'After the restart', bodyText: 'Arrived in the second run.' });
    await untilEvent(browser, demo.apiBase, async () => {
      const list = (await (await browser.fetch('/api/mail/threads?limit=5')).json()) as { threads: Summary[] };
      return list.threads[0]?.subject === 'After the restart' || undefined;
    });
    assert.equal(demo.journal.live.length, 2);
    await demo.close();
    stopped = true;
  });
});
