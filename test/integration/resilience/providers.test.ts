/**
 * Every provider failing in every way — timing out, refusing connections, answering 5xx
 * and answering garbage — against the service running as its own process: each route
 * answers the spec's code for it (runtime-contract part 3), within the provider timeout
 * (no hang), and nothing answers 500 or crashes the process.
 *
 *   identity (sign-in callback)    -> 302 to the web app with error=oauth_failed
 *   identity (token refresh, sync) -> SYNC_FAILED 502 (not TOKEN_EXPIRED: the grant is fine)
 *   mail (sync)                    -> SYNC_FAILED 502; quota -> MAIL_RATE_LIMITED 429 + Retry-After
 *   mail (opening a thread)        -> SYNC_FAILED 502, as the mail tests settled it
 *   AI (analyze, draft)            -> AI_REQUEST_FAILED 502; 429 -> AI_RATE_LIMITED + Retry-After
 *   queue (intake)                 -> no route: logged, retried with backoff, no notification lost
 *
 * The two suites run side by side, each with its own stand-ins and service process. The
 * service's provider timeouts are set short (TIMEOUT_MS): a hang is ended by the timeout,
 * never waited out at its production length.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Browser } from '../../../harness/browser.ts';
import { csrf, signIn } from '../../../harness/client.ts';
import { sql } from '../../../harness/pg-cluster.ts';
import {
  type ServiceProcess,
  sharedSecrets,
  startServiceProcess,
  WEB_ORIGIN,
} from '../../../harness/service-process.ts';
import { type StandIns, startStandIns, SUBSCRIPTION, TOPIC, user } from '../../../harness/stand-ins.ts';
import { startTcpProxy, type TcpProxy } from '../../../harness/tcp-proxy.ts';
import { eventually, sleep } from '../../../harness/wait.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/database.ts';
import { randomIp } from './traffic.ts';

const ALICE = user('alice');
/**
 * The service's provider timeouts, shortened from their defaults (mail and identity 10 s, AI
 * 30 s, the queue's calls 10 s) so the test does not wait them out: a hang ends when the
 * timeout fires. A request still open past its timeout (+ slack) hung.
 */
const TIMEOUT_MS = { mail: 2_000, identity: 2_000, ai: 2_000, queue: 2_000 };
const TIMEOUTS_ENV = {
  GMAIL_TIMEOUT_MS: String(TIMEOUT_MS.mail),
  GOOGLE_TIMEOUT_MS: String(TIMEOUT_MS.identity),
  OPENAI_TIMEOUT_MS: String(TIMEOUT_MS.ai),
  PUBSUB_TIMEOUT_MS: String(TIMEOUT_MS.queue),
};
const HANG_BOUND_MS = {
  mail: TIMEOUT_MS.mail + 10_000,
  identity: TIMEOUT_MS.identity + 10_000,
  ai: TIMEOUT_MS.ai + 10_000,
};

interface Answer {
  status: number;
  code?: string;
  retryAfter: string | null;
  location: string | null;
  ms: number;
}

async function answer(res: Promise<Response>): Promise<Answer> {
  const started = Date.now();
  const r = await res;
  const text = await r.text();
  let code: string | undefined;
  try {
    code = JSON.parse(text)?.error?.code;
  } catch {
    /* not JSON (a redirect) */
  }
  return {
    status: r.status,
    code,
    retryAfter: r.headers.get('retry-after'),
    location: r.headers.get('location'),
    ms: Date.now() - started,
  };
}

const show = (a: Answer) => `${a.status} ${a.code ?? ''} ${a.location ?? ''} (${a.ms} ms)`;

function assertCode(a: Answer, status: number, code: string, what: string) {
  assert.equal(a.status, status, `${what}: ${show(a)}`);
  assert.equal(a.code, code, `${what}: ${show(a)}`);
  if (status === 429 || status === 503) assert.match(a.retryAfter ?? '', /^[1-9]\d*$/, `${what}: Retry-After`);
}

function assertOAuthFailed(a: Answer, what: string) {
  assert.equal(a.status, 302, `${what}: ${show(a)}`);
  assert.equal(a.location, `${WEB_ORIGIN}/?error=oauth_failed`, `${what}: ${show(a)}`);
}

/** A hang was ended by the provider's timeout (not by something failing sooner). */
function assertTimedOut(a: Answer, timeoutMs: number, what: string) {
  assert.ok(a.ms >= timeoutMs - 50, `${what}: answered before the ${timeoutMs} ms timeout: ${show(a)}`);
}

describe('provider faults (service as a child process)', { concurrency: true }, () => {
  describe('identity, mail and AI providers', { concurrency: false }, () => {
    let db: TestDatabase;
    let providers: StandIns;
    let svc: ServiceProcess;
    let browser: Browser;
    let token: string;
    let threads: string[] = [];

    const ip = (extra: Record<string, string> = {}) => ({ 'X-Forwarded-For': randomIp(), ...extra });
    const sync = (signal?: AbortSignal) =>
      answer(browser.fetch('/api/mail/sync', { method: 'POST', headers: csrf(token, ip()), signal }));
    const detail = (id: string, signal?: AbortSignal) =>
      answer(browser.fetch(`/api/mail/threads/${id}`, { headers: ip(), signal }));
    const analyze = (id: string, signal?: AbortSignal) =>
      answer(browser.fetch(`/api/mail/threads/${id}/analyze`, { method: 'POST', headers: csrf(token, ip()), signal }));
    const draft = (id: string, signal?: AbortSignal) =>
      answer(browser.fetch(`/api/mail/threads/${id}/draft`, { method: 'POST', headers: csrf(token, ip()), signal }));
    /** A fresh browser through consent, up to (not including) the callback. */
    const consented = async () => {
      const b = svc.browser();
      const start = await b.fetch('/auth/provider', { headers: ip() });
      const consent = await fetch(start.headers.get('location')!, { redirect: 'manual' });
      const callback = consent.headers.get('location')!;
      return (signal?: AbortSignal) => answer(b.fetch(callback, { headers: ip(), signal }));
    };
    const storedCount = async () =>
      (await sql<{ n: number }>(db.url, 'select count(*)::int as n from mail_messages'))[0]!.n;
    const bodiesCached = async (threadId: string) =>
      (
        await sql<{ n: number }>(
          db.url,
          'select count(*)::int as n from mail_messages where thread_id = $1 and body_fetched_at is not null',
          [threadId],
        )
      )[0]!.n;
    const analyses = async () => (await sql<{ n: number }>(db.url, 'select count(*)::int as n from analyses'))[0]!.n;

    before(async () => {
      db = await createTestDatabase();
      providers = await startStandIns({ users: [ALICE] });
      const { PUBSUB_SUBSCRIPTION: _, ...env } = providers.env;
      // HTTP-only: the route's answers to provider faults are under test, not the background sync's.
      svc = await startServiceProcess(null, {
        databaseUrl: db.url,
        env: { ...env, ...sharedSecrets(), ...TIMEOUTS_ENV, TRUST_PROXY: 'true', BACKGROUND_WORKERS: 'false' },
        name: 'providers',
      });
      browser = svc.browser();
      token = (await signIn(browser, { headers: ip() })).csrfToken;
      providers.gmail.seed(ALICE.email, 12, { sentReplies: false });
      assert.equal((await sync()).status, 200);
      const list = await (await browser.fetch('/api/mail/threads?limit=100', { headers: ip() })).json();
      threads = list.threads.map((t: { id: string }) => t.id);
      assert.ok(threads.length >= 6);
    });

    after(async () => {
      await svc?.kill();
      await providers?.close();
      await db?.drop();
    });

    it('mail provider 5xx, garbage, a reset connection and quota: SYNC_FAILED 502 / MAIL_RATE_LIMITED 429, nothing stored; a failing message is set aside', async () => {
      const waiting = providers.gmail.addMessage(ALICE.email, { subject: 'waiting upstream' });
      const before = await storedCount();
      for (const [fault, what] of [
        [{ endpoint: 'history.list', status: 500 }, 'history 500'],
        [{ endpoint: 'history.list', status: 503 }, 'history 503'],
        [{ endpoint: 'history.list', status: 0, garbage: true }, 'history garbage 200'],
        [{ endpoint: 'history.list', status: 0, reset: true }, 'history reset'],
      ] as const) {
        providers.gmail.injectFault(fault);
        assertCode(await sync(), 502, 'SYNC_FAILED', what);
      }
      providers.gmail.injectFault({ endpoint: 'history.list', status: 429, retryAfterSeconds: 7 });
      const quota = await sync();
      assertCode(quota, 429, 'MAIL_RATE_LIMITED', 'history 429');
      assert.equal(quota.retryAfter, '7');
      // Every fetch refused (a quota met part-way keeps what was fetched: sync-listing.test.ts).
      providers.gmail.injectFault({
        endpoint: 'messages.get',
        status: 403,
        reason: 'userRateLimitExceeded',
        times: Infinity,
      });
      assertCode(await sync(), 429, 'MAIL_RATE_LIMITED', 'messages.get 403 userRateLimitExceeded');
      providers.gmail.clearFaults();
      assert.equal(await storedCount(), before, 'no failed sync stored anything');
      // One message's 500, another's garbage 502: each costs itself (set aside, retried later), never the call.
      const another = providers.gmail.addMessage(ALICE.email, { subject: 'another one waiting' });
      providers.gmail.injectFault({ endpoint: 'messages.get', status: 500, pathIncludes: waiting.id });
      providers.gmail.injectFault({
        endpoint: 'messages.get',
        status: 502,
        garbage: '<html>Bad gateway</html>',
        pathIncludes: another.id,
      });
      assert.equal((await sync()).status, 200);
      assert.equal(await storedCount(), before);
      const aside = await sql<{ reason: string }>(db.url, 'select reason from mail_set_aside order by reason');
      assert.equal(aside.length, 2, JSON.stringify(aside));
      await sql(db.url, 'update mail_set_aside set retry_after = now()');
      assert.equal((await sync()).status, 200);
      assert.equal(await storedCount(), before + 2, 'both stored at their retry');
    });

    it('mail provider faults while opening a thread: SYNC_FAILED 502 / MAIL_RATE_LIMITED 429, no body cached', async () => {
      const id = threads[0]!;
      for (const [fault, what] of [
        [{ endpoint: 'threads.get', status: 500 }, 'threads.get 500'],
        [{ endpoint: 'threads.get', status: 0, garbage: true }, 'threads.get garbage'],
        [{ endpoint: 'threads.get', status: 0, reset: true }, 'threads.get reset'],
      ] as const) {
        providers.gmail.injectFault(fault);
        assertCode(await detail(id), 502, 'SYNC_FAILED', what);
      }
      providers.gmail.injectFault({ endpoint: 'threads.get', status: 429 });
      assertCode(await detail(id), 429, 'MAIL_RATE_LIMITED', 'threads.get 429');
      assert.equal(await bodiesCached(id), 0);
      assert.equal((await detail(id)).status, 200);
    });

    it('identity provider 5xx, garbage and a dropped connection at sign-in: the error=oauth_failed redirect', async () => {
      for (const [fault, what] of [
        [{ endpoint: 'token', status: 500 }, 'token 500'],
        [
          { endpoint: 'token', status: 503, body: '<html>unavailable</html>', contentType: 'text/html' },
          'token 503 html',
        ],
        [{ endpoint: 'token', status: 200, body: '{"access_token": ' }, 'token garbage 200'],
        [{ endpoint: 'token', status: 0 }, 'token connection dropped'],
        [{ endpoint: 'userinfo', status: 500 }, 'userinfo 500'],
        [{ endpoint: 'userinfo', status: 200, body: 'not json at all' }, 'userinfo garbage 200'],
        [{ endpoint: 'userinfo', status: 0 }, 'userinfo connection dropped'],
      ] as const) {
        const callback = await consented();
        providers.identity.injectFault(fault);
        assertOAuthFailed(await callback(), what);
      }
    });

    it('identity provider 5xx, garbage and a dropped connection on a token refresh: SYNC_FAILED 502, the account not marked', async () => {
      providers.identity.expireAccessTokens();
      for (const [fault, what] of [
        [{ endpoint: 'token', status: 500 }, 'refresh 500'],
        [{ endpoint: 'token', status: 200, body: '<html>oops' }, 'refresh garbage 200'],
        [{ endpoint: 'token', status: 0 }, 'refresh connection dropped'],
      ] as const) {
        providers.identity.injectFault(fault);
        assertCode(await sync(), 502, 'SYNC_FAILED', what);
      }
      const [{ needs_reconnect }] = await sql<{ needs_reconnect: boolean }>(
        db.url,
        'select needs_reconnect from accounts',
      );
      assert.equal(needs_reconnect, false);
      assert.equal((await sync()).status, 200, 'the next refresh works');
    });

    it('AI provider 5xx, garbage, unreadable answers and rate limits: AI_REQUEST_FAILED 502 / AI_RATE_LIMITED 429, nothing stored', async () => {
      const id = threads[1]!;
      for (const [fault, what] of [
        [{ kind: 'status', status: 500 }, 'chat 500'],
        [{ kind: 'status', status: 503 }, 'chat 503'],
        [{ kind: 'garbage-body', status: 200 }, 'chat garbage 200'],
        [{ kind: 'garbage-body', status: 502 }, 'chat garbage 502'],
        [{ kind: 'unparseable' }, 'content not JSON'],
        [{ kind: 'schema-invalid' }, 'content against the schema'],
      ] as const) {
        providers.openai.injectFault(fault);
        assertCode(await analyze(id), 502, 'AI_REQUEST_FAILED', what);
      }
      providers.openai.injectFault({ kind: 'status', status: 429, retryAfterSeconds: 9 });
      const limited = await analyze(id);
      assertCode(limited, 429, 'AI_RATE_LIMITED', 'chat 429');
      assert.equal(limited.retryAfter, '9');
      providers.openai.injectFault({ kind: 'status', status: 500 });
      assertCode(await draft(id), 502, 'AI_REQUEST_FAILED', 'draft 500');
      assert.equal(await analyses(), 0);
      assert.equal((await analyze(id)).status, 200);
    });

    it('every provider timing out at once: each route answers its code after the provider timeout, none hangs', async () => {
      const slowThread = threads[2]!;
      const aiThread = threads[3]!;
      // The AI route reads the thread's bodies first: have them cached, so only the AI call hangs.
      assert.equal((await detail(aiThread)).status, 200);
      const signal = (ms: number) => AbortSignal.timeout(ms);

      /** Checks the answer's code and that the timeout, not something sooner, ended the hang. */
      const timedOut = (a: Answer, status: number, code: string, timeoutMs: number, what: string) => {
        assertCode(a, status, code, what);
        assertTimedOut(a, timeoutMs, what);
      };
      const mail = (async () => {
        providers.gmail.addMessage(ALICE.email, { subject: 'behind a hanging provider' });
        providers.gmail.injectFault({ endpoint: 'history.list', status: 0, hang: true });
        timedOut(
          await sync(signal(HANG_BOUND_MS.mail)),
          502,
          'SYNC_FAILED',
          TIMEOUT_MS.mail,
          'sync, history.list hangs',
        );
      })();
      const body = (async () => {
        providers.gmail.injectFault({ endpoint: 'threads.get', status: 0, hang: true });
        timedOut(
          await detail(slowThread, signal(HANG_BOUND_MS.mail)),
          502,
          'SYNC_FAILED',
          TIMEOUT_MS.mail,
          'detail, threads.get hangs',
        );
      })();
      const identity = (async () => {
        let callback = await consented();
        providers.identity.injectFault({ endpoint: 'token', status: 0, hang: true });
        let a = await callback(signal(HANG_BOUND_MS.identity));
        assertOAuthFailed(a, 'callback, token hangs');
        assertTimedOut(a, TIMEOUT_MS.identity, 'callback, token hangs');
        callback = await consented();
        providers.identity.injectFault({ endpoint: 'userinfo', status: 0, hang: true });
        a = await callback(signal(HANG_BOUND_MS.identity));
        assertOAuthFailed(a, 'callback, userinfo hangs');
        assertTimedOut(a, TIMEOUT_MS.identity, 'callback, userinfo hangs');
        await mail; // the refresh below must not meet the mail hang
        providers.identity.expireAccessTokens();
        providers.identity.injectFault({ endpoint: 'token', status: 0, hang: true });
        timedOut(
          await sync(signal(HANG_BOUND_MS.identity)),
          502,
          'SYNC_FAILED',
          TIMEOUT_MS.identity,
          'sync, token refresh hangs',
        );
      })();
      const ai = (async () => {
        providers.openai.injectFault({ kind: 'hang' });
        timedOut(
          await analyze(aiThread, signal(HANG_BOUND_MS.ai)),
          502,
          'AI_REQUEST_FAILED',
          TIMEOUT_MS.ai,
          'analyze, AI hangs',
        );
      })();
      // While they hang, the service keeps answering.
      const health = await answer(fetch(`${svc.url}/health`, { headers: ip(), signal: signal(10_000) }));
      assert.ok(health.status === 200, `health during the hangs: ${show(health)}`);
      await Promise.all([mail, body, identity, ai]);
      assert.equal((await sync()).status, 200, 'everything works again once the providers answer');
    });

    it('every provider refusing connections: the same codes, at once', async () => {
      const id = threads[4]!;
      const aiThread = threads[3]!;
      // A code obtained before the identity provider went away.
      const callback = await consented();
      providers.identity.expireAccessTokens();
      await providers.identity.close();
      assertOAuthFailed(await callback(), 'callback, identity refuses');
      assertCode(await sync(), 502, 'SYNC_FAILED', 'sync, token refresh refused');
      await providers.gmail.close();
      assertCode(await sync(), 502, 'SYNC_FAILED', 'sync, mail refuses');
      assertCode(await detail(id), 502, 'SYNC_FAILED', 'detail, mail refuses');
      await providers.openai.close();
      // Bodies of aiThread are cached: the route reaches the AI provider.
      assertCode(await analyze(aiThread), 502, 'AI_REQUEST_FAILED', 'analyze, AI refuses');
      const health = await (await fetch(`${svc.url}/health`, { headers: ip() })).json();
      assert.equal(health.database, 'ok');
      assert.ok(['degraded', 'ok'].includes(health.status), 'the probe reports (its results are cached for 15 s)');
    });

    it('no request was answered 500 or INTERNAL_ERROR, and the process is alive', () => {
      assert.equal(svc.alive, true);
      const requests = svc.logs.filter((l) => l.msg === 'request');
      assert.ok(requests.length > 40);
      assert.deepEqual(
        requests
          .filter((l) => Number(l.status) >= 500 && ![502, 503].includes(Number(l.status)))
          .map((l) => `${l.method} ${l.path} ${l.status}`),
        [],
      );
      assert.deepEqual(
        requests.filter((l) => l.code === 'INTERNAL_ERROR').map((l) => `${l.method} ${l.path}`),
        [],
      );
      assert.deepEqual(
        svc.stderr.filter((l) => /uncaught|unhandled/i.test(l)),
        [],
      );
    });
  });

  describe('message queue', { concurrency: false }, () => {
    let db: TestDatabase;
    let providers: StandIns;
    let proxy: TcpProxy;
    let svc: ServiceProcess;
    let browser: Browser;

    const stored = async () =>
      new Set(
        (await sql<{ id: string }>(db.url, 'select provider_message_id as id from mail_messages')).map((r) => r.id),
      );
    const storedEventually = async (id: string, ms: number) =>
      eventually(async () => (await stored()).has(id), ms, 200);
    /** Warnings of the intake (their wording is the intake's business; that they exist is ours). */
    const pullFailures = () => svc.logs.filter((l) => l.component === 'intake' && l.level === 'warn').length;
    /**
     * Nothing deliverable is waiting. (A message whose acknowledgement failed stays leased
     * until its deadline, then comes back and is
     * acknowledged; the tests do not wait for that.)
     */
    const drained = () => providers.pubsub.stats(SUBSCRIPTION).available === 0;

    before(async () => {
      db = await createTestDatabase();
      providers = await startStandIns({ users: [ALICE], ackDeadlineSeconds: 2 });
      const [host, port] = providers.pubsub.host.split(':');
      proxy = await startTcpProxy({ host: host!, port: Number(port) });
      svc = await startServiceProcess(null, {
        databaseUrl: db.url,
        env: { ...providers.env, PUBSUB_EMULATOR_HOST: proxy.host, ...sharedSecrets(), ...TIMEOUTS_ENV },
        name: 'queue',
      });
      browser = svc.browser();
      await signIn(browser); // its first sync runs in the background
      assert.ok(await eventually(async () => providers.gmail.watches(ALICE.email).length > 0, 5_000));
      assert.ok(
        await eventually(
          async () => (await sql(db.url, 'select 1 from sync_states where history_id is not null')).length === 1,
          10_000,
        ),
      );
    });

    after(async () => {
      await svc?.kill();
      await proxy?.close();
      await providers?.close();
      await db?.drop();
    });

    it('pull and acknowledge failing (UNAVAILABLE, INTERNAL, DEADLINE_EXCEEDED): retried with backoff, the notification is handled once', async () => {
      providers.pubsub.injectFault({ method: 'Pull', code: 14, times: 1 });
      providers.pubsub.injectFault({ method: 'Pull', code: 4, times: 1 });
      providers.pubsub.injectFault({ method: 'Acknowledge', code: 13, times: 1 });
      const failuresBefore = pullFailures();
      const m = providers.gmail.addMessage(ALICE.email, { subject: 'through a flaky queue' });
      assert.ok(await storedEventually(m.id, 20_000), 'synced through the intake and its job');
      assert.ok(await eventually(async () => drained(), 20_000), 'nothing left waiting');
      assert.ok(pullFailures() > failuresBefore, 'the failures were logged');
      assert.equal((await sql(db.url, 'select 1 from mail_messages where provider_message_id = $1', [m.id])).length, 1);
    });

    it('garbage notifications (not JSON, no address, an unknown account) are acknowledged and dropped', async () => {
      const acked = providers.pubsub.stats(SUBSCRIPTION).acked;
      providers.pubsub.publish(TOPIC, 'this is not json');
      providers.pubsub.publish(TOPIC, { emailAddress: 42 });
      providers.pubsub.publish(TOPIC, { emailAddress: 'nobody@example.com', historyId: '1' });
      providers.pubsub.publish(TOPIC, Buffer.from([0xff, 0xfe, 0x00]));
      assert.ok(
        await eventually(async () => drained() && providers.pubsub.stats(SUBSCRIPTION).acked >= acked + 4, 15_000),
        'all four acknowledged',
      );
      const m = providers.gmail.addMessage(ALICE.email, { subject: 'after the garbage' });
      assert.ok(await storedEventually(m.id, 15_000));
    });

    it('the queue timing out, answering garbage and refusing connections: HTTP keeps serving, and the intake catches up afterwards', async () => {
      const failures = pullFailures();
      await proxy.setMode('hang');
      const during = providers.gmail.addMessage(ALICE.email, { subject: 'while the queue was unreachable' });
      // Long enough for a pull to reach its deadline (PUBSUB_TIMEOUT_MS): it must end, not leave the intake stuck.
      const hangEnds = Date.now() + TIMEOUT_MS.queue + 1_500;
      while (Date.now() < hangEnds) {
        const t0 = Date.now();
        assert.equal(
          (await fetch(`${svc.url}/api/mail/threads`, { headers: { Cookie: browser.cookieHeader() } })).status,
          200,
        );
        assert.ok(Date.now() - t0 < 5_000, 'HTTP is not held up by the intake');
        await sleep(250);
      }
      // Each of the next two modes lasts until the intake has met it (a failed pull, logged).
      for (const mode of ['garbage', 'refuse'] as const) {
        const seen = pullFailures();
        await proxy.setMode(mode);
        assert.ok(
          await eventually(async () => pullFailures() > seen, 20_000, 50),
          `the queue's ${mode} answer was met and logged`,
        );
      }
      assert.ok(pullFailures() > failures, 'the unreachable queue was logged');
      assert.equal((await stored()).has(during.id), false, 'the notification could not arrive meanwhile');
      await proxy.setMode('forward');
      assert.ok(
        await storedEventually(during.id, 45_000),
        'the notification sent meanwhile was handled once the queue was back',
      );
      assert.ok(await eventually(async () => drained(), 15_000));
      assert.equal(svc.alive, true);
      assert.deepEqual(
        svc.stderr.filter((l) => /uncaught|unhandled/i.test(l)),
        [],
      );
    });
  });
});
