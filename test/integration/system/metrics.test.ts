/**
 * GET /metrics: Prometheus text for the metrics credential only (METRICS_TOKEN; the
 * status-admin one, which writes the status page, is refused); requests by route
 * template (ids folded, unknown paths one label), provider errors by code, AI tokens, the
 * live inbox's queues, lag and unrenewed watches, and Node's event-loop delay.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ADMIN_TOKEN } from '../../helpers/app.ts';
import { eventually } from '../../../harness/wait.ts';
import { accountId, seedThread, sharedAiSetup } from '../../helpers/mail-fixtures.ts';
import { liveInboxReadings } from '../../../server/jobs/readings.ts';

/** The value of one sample line (`name{labels} value`), or undefined. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`)))
      return Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return undefined;
}

const METRICS_TOKEN = 'test-metrics-scraper-token-0123456789';

describe('GET /metrics', () => {
  const setup = sharedAiSetup({ METRICS_TOKEN });
  const scrape = async (token = METRICS_TOKEN) =>
    fetch(`${setup().app.url}/metrics`, { headers: { Authorization: `Bearer ${token}` } });

  it('answers FORBIDDEN in the envelope without the metrics credential, the status-admin one included', async () => {
    for (const res of [
      await fetch(`${setup().app.url}/metrics`),
      await scrape('wrong-token-wrong-token'),
      await scrape(ADMIN_TOKEN),
    ]) {
      assert.equal(res.status, 403);
      assert.equal((await res.json()).error.code, 'FORBIDDEN');
    }
  });

  it('counts requests by route template, provider errors by code and AI tokens by operation', async () => {
    const s = setup();
    const { threadId } = await seedThread(s.app);
    assert.equal((await s.analyze(threadId)).status, 200);
    const { threadId: other } = await seedThread(s.app);
    s.openai.injectFault({ status: 429, retryAfterSeconds: 5 });
    assert.equal((await s.analyze(other)).status, 429);
    for (const junk of ['/no-such-page-1', '/api/no-such-route', `/api/mail/threads/${threadId}/nope`])
      assert.equal((await fetch(`${s.app.url}${junk}`)).status, 404);
    const res = await scrape();
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const analyze = { route: '/api/mail/threads/:id/analyze', method: 'POST' };
    assert.equal(sample(text, 'mia_http_request_duration_seconds_count', { ...analyze, status: '200' }), 1);
    assert.equal(sample(text, 'mia_http_request_duration_seconds_count', { ...analyze, status: '429' }), 1);
    assert.equal(
      sample(text, 'mia_http_request_duration_seconds_count', { route: 'unmatched', status: '404' }),
      3,
      'unknown paths share one label',
    );
    assert.ok(!text.includes('no-such') && !text.includes(threadId), 'no caller-made label values');
    assert.equal(sample(text, 'mia_provider_errors_total', { provider: 'ai', code: 'AI_RATE_LIMITED' }), 1);
    assert.ok(sample(text, 'mia_ai_tokens_total', { operation: 'analyze', kind: 'prompt' })! > 0);
    assert.ok(sample(text, 'mia_ai_tokens_total', { operation: 'analyze', kind: 'completion' })! > 0);
  });

  it("reports the live inbox's queues and sync state, and Node's event-loop delay", async () => {
    const text = await (await scrape()).text();
    for (const queue of ['mail-sync', 'mail-sync-dead-letter', 'quiet-sweep'])
      assert.equal(typeof sample(text, 'mia_jobs_queued', { queue }), 'number', queue);
    for (const name of [
      'mia_sync_lag_max_seconds',
      'mia_sync_backlog_accounts',
      'mia_sync_dead_lettered_accounts',
      'mia_mail_set_aside_messages',
      'mia_mail_set_aside_oldest_seconds',
      'mia_sync_watches_expiring_accounts',
      'nodejs_eventloop_lag_p99_seconds',
      'process_resident_memory_bytes',
    ]) {
      assert.ok(Number.isFinite(sample(text, name)), name);
    }
  });

  it('counts connected accounts whose watch lapses within 48 h without a renewal in the last 24 h', async () => {
    const { app } = setup();
    const sql = (query: string, params: unknown[] = []) => app.container.orm.em.getConnection().execute(query, params);
    const alice = await accountId(app);
    const watch = async (expires: string | null, renewed: string | null) => {
      const rows = (await sql(
        `update sync_states set watch_expires_at = now() + ?::interval, watch_renewed_at = now() + ?::interval where account_id = ? returning 1`,
        [expires, renewed, alice],
      )) as unknown[];
      assert.equal(rows.length, 1, "alice's sync state");
    };
    const readings = liveInboxReadings(app.container.orm, { depth: async () => 0 });
    const expiring = async () => (await readings.syncState()).watchesExpiringAccounts;
    try {
      await watch('6 days', '-1 hour');
      assert.equal(await expiring(), 0, 'renewed an hour ago, a week to go');
      await watch('47 hours', '-25 hours');
      assert.equal(await expiring(), 1, 'lapses within 48 h, last renewed over a day ago');
      await watch('-1 hour', null);
      assert.equal(await expiring(), 1, 'lapsed, never renewed');
      await watch('47 hours', '-23 hours');
      assert.equal(await expiring(), 0, 'renewed within the day (the provider granted a short watch)');
      await watch('49 hours', '-5 days');
      assert.equal(await expiring(), 0, 'more than 48 h to go');
      await watch(null, null);
      assert.equal(await expiring(), 0, 'no watch (none registered, or no topic configured)');
      await watch('1 hour', '-3 days');
      await sql('update accounts set needs_reconnect = true where id = ?', [alice]);
      assert.equal(await expiring(), 0, 'an account that must reconnect is not counted');
      await sql('update accounts set needs_reconnect = false where id = ?', [alice]);
      // The sync gauges share one reading per second: scrape until this change shows.
      const scraped = await eventually(
        async () => sample(await (await scrape()).text(), 'mia_sync_watches_expiring_accounts') === 1,
        5_000,
        100,
      );
      assert.ok(scraped, 'the scrape reports the unrenewed watch');
    } finally {
      await sql('update accounts set needs_reconnect = false where id = ?', [alice]);
      await watch(null, null);
    }
  });

  it('counts set-aside messages with the age of the oldest, and dead-lettered accounts, over connected accounts', async () => {
    const { app } = setup();
    const sql = (query: string, params: unknown[] = []) => app.container.orm.em.getConnection().execute(query, params);
    const alice = await accountId(app);
    const readings = liveInboxReadings(app.container.orm, { depth: async () => 0 });
    try {
      assert.deepEqual(
        await readings.syncState().then((s) => [s.setAsideMessages, s.setAsideOldestSeconds, s.deadLetteredAccounts]),
        [0, 0, 0],
        'none at first',
      );
      await sql(
        `insert into mail_set_aside (account_id, provider_message_id, reason, first_seen_at, retry_after)
         values (?, 'gone-1', 'SYNC_FAILED', now() - interval '2 hours', now()), (?, 'gone-2', 'SYNC_FAILED', now() - interval '5 minutes', now())`,
        [alice, alice],
      );
      await sql('update sync_states set dead_lettered_at = now() where account_id = ?', [alice]);
      const s = await readings.syncState();
      assert.equal(s.setAsideMessages, 2);
      assert.ok(
        s.setAsideOldestSeconds >= 7_200 && s.setAsideOldestSeconds < 7_300,
        `oldest ${s.setAsideOldestSeconds} s`,
      );
      assert.equal(s.deadLetteredAccounts, 1);
      await sql('update accounts set needs_reconnect = true where id = ?', [alice]);
      const gone = await readings.syncState();
      assert.deepEqual(
        [gone.setAsideMessages, gone.deadLetteredAccounts],
        [0, 0],
        'an account that must reconnect is not counted',
      );
    } finally {
      await sql('update accounts set needs_reconnect = false where id = ?', [alice]);
      await sql('delete from mail_set_aside where account_id = ?', [alice]);
      await sql('update sync_states set dead_lettered_at = null where account_id = ?', [alice]);
    }
  });
});
