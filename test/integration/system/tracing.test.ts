/**
 * Tracing, against the service run as `npm start` runs it, exporting to the OTLP
 * stand-in with the default protocol (http/protobuf):
 *
 * - a request is one trace: the server span named after its route template, with its tRPC
 *   procedure, its SQL statements and its provider calls as children;
 * - a notification's batch span, the sync job it becomes (linked to it through the job's
 *   data) and that job's provider calls and stored row;
 * - the log lines written inside a span carry its trace and span ids;
 * - a client's traceparent is ignored, and continued only with TRUST_TRACEPARENT=true;
 * - nothing a sign-in, a sync, a thread open, an analysis or a draft exports holds a token,
 *   a cookie, an address or mail text;
 * - without the OTEL_* variables, no module of the SDK, its instrumentations or exporters is
 *   even loaded.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser } from '../../../harness/browser.ts';
import { csrf, signIn, waitSyncIdle } from '../../../harness/client.ts';
import { sql } from '../../../harness/pg-cluster.ts';
import { type ServiceProcess, sharedSecrets, startServiceProcess } from '../../../harness/service-process.ts';
import { type StandIns, startStandIns, user } from '../../../harness/stand-ins.ts';
import { startOtlpStandIn, type OtlpStandIn, type ReceivedSpan } from '../../../stand-ins/otlp.stand-in.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/database.ts';

const ALICE = user('alice');
const SENDER = { name: 'Bartholomew Quill', address: 'bart.quill@sender.example' };
const MAIL = {
  subject: 'Periwinkle gazebo invoice',
  body: 'Please settle the periwinkle gazebo invoice before the marmalade festival.',
};
const CLIENT = 3;
const CONSUMER = 5;
/** A trace a client makes up and sends in its traceparent. */
const CLIENT_TRACE = 'c1'.repeat(16);
const CLIENT_SPAN = 'c2'.repeat(8);

/** Waits for the service to be fully up: signal handlers are installed after the start-up memory line. */
const up = (svc: ServiceProcess) => svc.waitForLog((l) => String(l.msg).startsWith('start-up memory'));

/** The spans under `root` (its descendants, in any order). */
function descendants(spans: ReceivedSpan[], root: ReceivedSpan): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  const ids = new Set([root.spanId]);
  for (let grew = true; grew; ) {
    grew = false;
    for (const s of spans) {
      if (s.traceId === root.traceId && s.parentSpanId && ids.has(s.parentSpanId) && !ids.has(s.spanId)) {
        ids.add(s.spanId);
        out.push(s);
        grew = true;
      }
    }
  }
  return out;
}

/** What the stand-in received, one line a span, for a failure message. */
const summary = (spans: ReceivedSpan[]) =>
  spans
    .map(
      (s) =>
        `${s.traceId.slice(0, 8)} ${s.spanId.slice(0, 8)} <- ${(s.parentSpanId ?? 'root').slice(0, 8)} ${s.name} ${String(s.attributes['url.full'] ?? s.attributes['db.query.text'] ?? '').slice(0, 60)}`,
    )
    .join('\n');

describe('tracing on: OTEL_EXPORTER_OTLP_ENDPOINT set', () => {
  let db: TestDatabase;
  let providers: StandIns;
  let otlp: OtlpStandIn;
  let svc: ServiceProcess;
  let browser: Browser;
  let csrfToken: string;
  let threadId: string;

  before(async () => {
    db = await createTestDatabase();
    providers = await startStandIns({ users: [ALICE] });
    otlp = await startOtlpStandIn();
    svc = await startServiceProcess(null, {
      databaseUrl: db.url,
      // Exported every 100 ms instead of 5 s: the test waits for what it expects, not a period.
      env: {
        ...providers.env,
        ...sharedSecrets(),
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_BSP_SCHEDULE_DELAY: '100',
      },
    });
    await up(svc);
    browser = svc.browser();
  });
  /** Waits for `pick` to find what it looks for among the received spans; names `what` and lists them if it never does. */
  const received = <T>(what: string, pick: (spans: ReceivedSpan[]) => T | undefined) =>
    otlp.waitFor(pick, 20_000).catch((err: Error) => {
      throw new Error(`${what}: ${err.message}\n${summary(otlp.spans)}`);
    });
  after(async () => {
    await svc?.stop();
    await otlp?.close();
    await providers?.close();
    await db?.drop();
  });

  it('says so in its log at start', async () => {
    const line = await svc.waitForLog((l) => l.msg === 'tracing on');
    assert.equal(line.exporter, 'otlp http/protobuf');
  });

  it('makes a request one trace: route template, tRPC procedure, SQL and provider calls', async () => {
    providers.gmail.addMessage(ALICE.email, { from: SENDER, subject: MAIL.subject, bodyText: MAIL.body });
    ({ csrfToken } = await signIn(browser));
    await waitSyncIdle(db.url, ALICE.email);

    const list = await browser.fetch('/api/mail/threads?limit=10');
    assert.equal(list.status, 200);
    const listRequestId = list.headers.get('x-request-id');
    threadId = (await list.json()).threads[0].id;
    const server = await received('the list request', (spans) => spans.find((s) => s.name === 'GET /api/mail/threads'));
    assert.equal(server.kind, 2);
    assert.equal(server.parentSpanId, undefined, 'the request is the root of its trace');
    assert.equal(server.attributes['http.route'], '/api/mail/threads');
    assert.equal(server.attributes['rpc.system'], 'trpc');
    assert.equal(server.attributes['rpc.method'], 'mail.threads');
    assert.equal(server.attributes['http.response.status_code'], 200);
    assert.equal(server.attributes['url.query'], 'limit=REDACTED');
    const sqlSpans = await received('the list statement under the request', (spans) => {
      const under = descendants(spans, server).filter((s) => s.scope.includes('instrumentation-pg'));
      return under.some((s) => /mail_threads/.test(String(s.attributes['db.query.text']))) ? under : undefined;
    });
    for (const s of sqlSpans) assert.equal(s.attributes['db.system.name'], 'postgresql');

    // Its access log line was written inside the request's span.
    const access = await svc.waitForLog((l) => l.msg === 'request' && l.requestId === listRequestId);
    assert.equal(access.trace_id, server.traceId);
    assert.equal(access.span_id, server.spanId);

    // Opening the thread fetches its bodies from the provider: a client span under the request.
    assert.equal((await browser.fetch(`/api/mail/threads/${threadId}`)).status, 200);
    const open = await received('the thread open', (spans) =>
      spans.find((s) => s.name === 'GET /api/mail/threads/:id'),
    );
    assert.equal(open.attributes['rpc.method'], 'mail.thread');
    const call = await received('the provider call under the thread open', (spans) =>
      descendants(spans, open).find(
        (s) => s.kind === CLIENT && /\/gmail\/v1\/users\/me\/threads\//.test(String(s.attributes['url.full'])),
      ),
    );
    assert.match(String(call.attributes['url.full']), /\?format=REDACTED$/);
  });

  it("ignores a client's traceparent: the request is the root of a trace of its own, sampled by the sampler", async () => {
    // Unsampled flags: were the header continued, a parent-based sampler would drop the request.
    const res = await browser.fetch('/openapi.json', {
      headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-00`, tracestate: 'vendor=client' },
    });
    assert.equal(res.status, 200);
    const access = await svc.waitForLog((l) => l.msg === 'request' && l.requestId === res.headers.get('x-request-id'));
    assert.ok(
      access.trace_id && access.trace_id !== CLIENT_TRACE,
      `the log line's trace id is the service's own (${access.trace_id})`,
    );
    const server = await received('the request with a traceparent', (spans) =>
      spans.find((s) => s.spanId === access.span_id),
    );
    assert.equal(server.traceId, access.trace_id);
    assert.equal(server.parentSpanId, undefined, 'no parent taken from the header');
    assert.ok(!otlp.spans.some((s) => s.traceId === CLIENT_TRACE), "no span exported in the client's trace");
  });

  it('links a notification, the sync job it becomes and what that job stores', async () => {
    const added = providers.gmail.addMessage(ALICE.email, {
      from: SENDER,
      subject: `${MAIL.subject} (reminder)`,
      bodyText: MAIL.body,
    });
    const job = await received('the notified sync job', (spans) =>
      spans.find((s) => s.name === 'mail-sync job' && s.attributes['mail.sync.reason'] === 'notification'),
    );
    assert.equal(job.kind, CONSUMER);
    assert.equal(job.links.length, 1, 'the job links to the span that queued it');
    const batch = await received('the linked span', (spans) => spans.find((s) => s.spanId === job.links[0]!.spanId));
    assert.equal(batch.name, 'mail notifications');
    assert.equal(batch.kind, CONSUMER);
    assert.ok(Number(batch.attributes['messaging.batch.message_count']) >= 1);
    // The batch stored the job (pg-boss's upsert span: a notification is folded into a waiting job) and acknowledged the notification (gRPC).
    const underBatch = await received('the job stored and the notification acknowledged', (spans) => {
      const under = descendants(spans, batch);
      return under.some((s) => s.name === 'upsert mail-sync') && under.some((s) => /Acknowledge$/.test(s.name))
        ? under
        : undefined;
    });
    assert.ok(underBatch.length > 2);
    // The job ran the sync: the provider's history, and the new message's row.
    const underJob = await received('the provider history call and the stored row under the job', (spans) => {
      const under = descendants(spans, job);
      return under.some((s) => s.kind === CLIENT && /\/users\/me\/history/.test(String(s.attributes['url.full']))) &&
        under.some((s) => /insert into mail_messages/i.test(String(s.attributes['db.query.text'])))
        ? under
        : undefined;
    });
    assert.ok(underJob.every((s) => s.traceId === job.traceId));
    const [row] = await sql(db.url, 'select 1 from mail_messages where provider_message_id = $1', [added.id]);
    assert.ok(row, 'the notified message was stored');
  });

  it('exports no token, cookie, address or mail text from a sign-in, sync, thread open, analysis or draft', async () => {
    assert.equal((await browser.fetch('/api/mail/sync', { method: 'POST', headers: csrf(csrfToken) })).status, 200);
    assert.equal(
      (await browser.fetch(`/api/mail/threads/${threadId}/analyze`, { method: 'POST', headers: csrf(csrfToken) }))
        .status,
      200,
    );
    const draft = await browser.fetch(`/api/mail/threads/${threadId}/draft`, {
      method: 'POST',
      headers: csrf(csrfToken),
    });
    assert.equal(draft.status, 200);
    const draftText: string = (await draft.json()).draft.body;
    await received('the draft request', (spans) => spans.find((s) => s.name === 'POST /api/mail/threads/:id/draft'));

    const secrets = new Map<string, string>();
    for (const [name, value] of browser.cookies) secrets.set(`cookie ${name}`, value);
    secrets.set('CSRF token', csrfToken);
    for (const r of providers.identity.calls.tokenRequests)
      for (const k of ['code', 'code_verifier', 'refresh_token', 'client_secret'])
        if (r[k]) secrets.set(`OAuth ${k}`, r[k]!);
    for (const g of providers.identity.grants()) if (g.refreshToken) secrets.set('refresh token', g.refreshToken);
    for (const auth of providers.identity.authorizeRequests) if (auth.state) secrets.set('OAuth state', auth.state);
    secrets.set('OpenAI key', providers.openai.apiKey);
    secrets.set('address', ALICE.email);
    secrets.set('sender address', SENDER.address);
    secrets.set('sender name', SENDER.name);
    secrets.set('subject', 'Periwinkle gazebo');
    secrets.set('body', 'marmalade festival');
    secrets.set('draft text', draftText.slice(0, 40));
    assert.ok(
      secrets.has('OAuth code') && secrets.has('refresh token') && secrets.has('OAuth state'),
      'the sign-in secrets were found to look for',
    );

    const exported = otlp.bodies.join('\n');
    assert.ok(otlp.spans.length > 50 && exported.includes('/api/mail/threads/:id/analyze'), 'the flows were exported');
    for (const [what, value] of secrets)
      assert.equal(exported.includes(value), false, `no ${what} in any exported span`);
    assert.doesNotMatch(exported, /ya29\.|Bearer /, 'no access token or Authorization header');
    // Query strings keep their keys only (the OAuth callback's code and state among them).
    const callback = otlp.spans.find((s) => s.name === 'GET /auth/provider/callback');
    assert.match(String(callback?.attributes['url.query']), /^(?=.*code=REDACTED)(?=.*state=REDACTED)[^]*$/);
  });
});

describe('tracing on with TRUST_TRACEPARENT=true', () => {
  it("continues the caller's traceparent: its trace id, its span as the parent", async (t) => {
    const db = await createTestDatabase();
    const otlp = await startOtlpStandIn();
    t.after(async () => {
      await otlp.close();
      await db.drop();
    });
    const svc = await startServiceProcess(t, {
      databaseUrl: db.url,
      env: {
        ...sharedSecrets(),
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.url,
        OTEL_BSP_SCHEDULE_DELAY: '100',
        TRUST_TRACEPARENT: 'true',
      },
    });
    await up(svc);
    const res = await svc
      .browser()
      .fetch('/openapi.json', { headers: { traceparent: `00-${CLIENT_TRACE}-${CLIENT_SPAN}-01` } });
    assert.equal(res.status, 200);
    const server = await otlp.waitFor((spans) => spans.find((s) => s.traceId === CLIENT_TRACE && s.kind === 2), 20_000);
    assert.equal(server.parentSpanId, CLIENT_SPAN);
    const access = await svc.waitForLog((l) => l.msg === 'request' && l.requestId === res.headers.get('x-request-id'));
    assert.equal(access.trace_id, CLIENT_TRACE);
  });
});

describe('tracing off: no OTEL_* variables', () => {
  it('loads no OpenTelemetry SDK, instrumentation or exporter module', async (t) => {
    const db = await createTestDatabase();
    const providers = await startStandIns({ users: [ALICE] });
    const dir = await mkdtemp(path.join(tmpdir(), 'mia-modules-'));
    t.after(async () => {
      await providers.close();
      await db.drop();
      await rm(dir, { recursive: true, force: true });
    });
    const record = path.join(dir, 'modules.json');
    const svc = await startServiceProcess(t, {
      databaseUrl: db.url,
      nodeArgs: ['--import', './test/integration/system/record-modules.mjs'],
      env: { ...providers.env, ...sharedSecrets(), MIA_RECORD_MODULES: record },
    });
    await up(svc);
    assert.equal((await svc.browser().fetch('/health')).status, 200);
    assert.deepEqual(await svc.stop(), { code: 0, signal: null });

    const loaded: string[] = JSON.parse(await readFile(record, 'utf8'));
    assert.ok(loaded.includes('pg') && loaded.includes('koa'), 'the recorder saw the service load');
    // @google-cloud/pubsub and pg-boss import the API (and its attribute names) for their own
    // no-op tracing hooks whatever the configuration: those are not the tracing's to save.
    const loadedAnyway = new Set(['@opentelemetry/api', '@opentelemetry/semantic-conventions', '@opentelemetry/core']);
    const tracing = loaded.filter(
      (m) =>
        (/^@opentelemetry\//.test(m) && !loadedAnyway.has(m)) ||
        /-in-the-middle$|\/server\/infra\/trac(e-scrub|ing)\.ts$/.test(m),
    );
    assert.deepEqual(tracing, []);
    assert.ok(!svc.logs.some((l) => 'trace_id' in l), 'no log line carries trace ids');
  });
});
