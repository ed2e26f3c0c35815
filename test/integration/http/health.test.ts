/**
 * GET /health, GET /, system.health, the provider reachability probes and their 15 s
 * cache, the incident feed (public list, admin writes) and /openapi.json.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ERROR_CODES, ERROR_TABLE } from '../../../shared/errors.ts';
import { cachedProbe, httpProbe } from '../../../server/providers/reachability.ts';
import { freePort } from '../../../server/infra/database.ts';
import { ADMIN_TOKEN, buildTestApp, sharedApp, type TestApp } from '../../helpers/app.ts';
import type { ComponentReport } from '../../../server/providers/reachability.ts';

interface Provider {
  url: string;
  requests: { method: string; url: string; headers: IncomingMessage['headers'] }[];
  status: number;
  delayMs: number;
  body: string;
}

/** A tiny local provider: answers every request with `status` (after `delayMs`) and counts them. */
async function startProvider(t: { after(fn: () => unknown): void }, status = 200): Promise<Provider> {
  const provider: Provider = {
    url: '',
    requests: [],
    status,
    delayMs: 0,
    body: '{"kind":"discovery#restDescription"}',
  };
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer((req, res) => {
    provider.requests.push({ method: req.method!, url: req.url!, headers: req.headers });
    const timer = setTimeout(() => {
      timers.delete(timer);
      res.writeHead(provider.status, { 'Content-Type': 'application/json' });
      res.end(provider.body);
    }, provider.delayMs);
    timers.add(timer);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  provider.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.after(() => {
    for (const timer of timers) clearTimeout(timer);
    server.closeAllConnections();
    return new Promise((resolve) => server.close(resolve));
  });
  return provider;
}

const getJson = async (app: TestApp, path: string) => {
  const res = await fetch(`${app.url}${path}`);
  return { res, body: await res.json() };
};

/**
 * Tests that only need the service with its providers not configured share one app; tests of
 * given probe answers share another, whose probes (never cached when overridden) answer what
 * `probeAnswers` holds at the time. Tests of configured providers (their probes are cached for
 * 15 s) and of other settings build their own.
 */
const plainApp = sharedApp();
const probeAnswers: { mail: ComponentReport; ai: ComponentReport } = {
  mail: { state: 'not_configured', detail: 'not configured' },
  ai: { state: 'not_configured', detail: 'not configured' },
};
const probedApp = sharedApp(
  {},
  { overrides: { probes: { mail: async () => probeAnswers.mail, ai: async () => probeAnswers.ai } } },
);
/** The probed app, its probes answering `mail` and `ai` (the AI one not configured unless given). */
function probed(
  mail: ComponentReport,
  ai: ComponentReport = { state: 'not_configured', detail: 'not configured' },
): TestApp {
  Object.assign(probeAnswers, { mail, ai });
  return probedApp();
}

const ISO_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function assertReportShape(body: Record<string, any>) {
  assert.deepEqual(Object.keys(body).sort(), ['ai', 'database', 'mail', 'service', 'status', 'time']);
  assert.equal(body.service, 'mail-inbox-assistant');
  assert.match(body.time, ISO_MS);
  assert.ok(['ok', 'degraded', 'down'].includes(body.status));
  assert.ok(['ok', 'down'].includes(body.database));
  for (const c of ['mail', 'ai']) {
    assert.deepEqual(Object.keys(body[c]).sort(), ['detail', 'state'], c);
    assert.ok(
      ['operational', 'degraded', 'down', 'not_configured'].includes(body[c].state),
      `${c}.state ${body[c].state}`,
    );
    assert.equal(typeof body[c].detail, 'string');
  }
}

/** The state cells and the overall status of the HTML root page. */
function parseHomePage(html: string) {
  const overall = /data-status="([a-z_]+)"/.exec(html)?.[1];
  const cells: Record<string, string> = {};
  for (const m of html.matchAll(
    /<tr data-component="([^"]+)">\s*<td>[^<]*<\/td>\s*<td class="state-([a-z_]+)">([^<]*)<\/td>/g,
  )) {
    assert.equal(m[2], m[3], 'class and text of the state cell agree');
    cells[m[1]] = m[3];
  }
  return { overall, cells };
}

describe('GET /health', () => {
  it('reports ok with both providers not configured', async () => {
    const app = plainApp();
    const before = Date.now();
    const { res, body } = await getJson(app, '/health');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.equal(res.headers.get('retry-after'), null);
    assertReportShape(body);
    assert.equal(body.status, 'ok');
    assert.equal(body.database, 'ok');
    assert.equal(body.mail.state, 'not_configured');
    assert.equal(body.ai.state, 'not_configured');
    const time = Date.parse(body.time);
    assert.ok(time >= before - 1000 && time <= Date.now() + 1000, 'time is the moment of the check');
  });

  it('reports mail not_configured while OAuth is half configured, and never calls the provider', async (t) => {
    const gmail = await startProvider(t);
    const app = await buildTestApp(t, { env: { GOOGLE_CLIENT_ID: 'x', GMAIL_API_URL: gmail.url } });
    const { body } = await getJson(app, '/health');
    assert.equal(body.mail.state, 'not_configured');
    assert.equal(body.status, 'ok');
    assert.equal(gmail.requests.length, 0);
  });

  it('probes the mail provider at $discovery/rest?version=v1 when OAuth is configured', async (t) => {
    const gmail = await startProvider(t);
    const app = await buildTestApp(t, {
      env: { GOOGLE_CLIENT_ID: 'x', GOOGLE_CLIENT_SECRET: 'y', GMAIL_API_URL: gmail.url },
    });
    const { res, body } = await getJson(app, '/health');
    assert.equal(res.status, 200);
    assert.equal(body.status, 'ok');
    assert.equal(body.mail.state, 'operational');
    assert.equal(body.ai.state, 'not_configured');
    assert.equal(gmail.requests.length, 1);
    assert.equal(gmail.requests[0].method, 'GET');
    const url = new URL(gmail.requests[0].url, gmail.url);
    assert.equal(decodeURIComponent(url.pathname), '/$discovery/rest');
    assert.equal(url.searchParams.get('version'), 'v1');
  });

  it('probes the AI provider at OPENAI_BASE_URL/models with the key', async (t) => {
    const openai = await startProvider(t);
    const app = await buildTestApp(t, { env: { OPENAI_API_KEY: 'sk-test-key', OPENAI_BASE_URL: `${openai.url}/v1` } });
    const { body } = await getJson(app, '/health');
    assert.equal(body.ai.state, 'operational');
    assert.equal(body.mail.state, 'not_configured');
    assert.equal(body.status, 'ok');
    assert.equal(openai.requests.length, 1);
    assert.equal(openai.requests[0].url, '/v1/models');
    assert.equal(openai.requests[0].headers.authorization, 'Bearer sk-test-key');
    assert.ok(!JSON.stringify(body).includes('sk-test-key'));
  });

  it('reports degraded (HTTP 200) when a configured provider is down', async (t) => {
    const gmail = await startProvider(t, 404);
    const app = await buildTestApp(t, {
      env: { GOOGLE_CLIENT_ID: 'x', GOOGLE_CLIENT_SECRET: 'y', GMAIL_API_URL: gmail.url },
    });
    const { res, body } = await getJson(app, '/health');
    assert.equal(res.status, 200);
    assertReportShape(body);
    assert.equal(body.status, 'degraded');
    assert.equal(body.database, 'ok');
    assert.equal(body.mail.state, 'down');
  });

  it('reports degraded when a configured provider answers 5xx, without its text', async (t) => {
    const openai = await startProvider(t, 503);
    openai.body = 'ZQX-provider-internal-text';
    const app = await buildTestApp(t, { env: { OPENAI_API_KEY: 'sk-x', OPENAI_BASE_URL: openai.url } });
    const { res, body } = await getJson(app, '/health');
    assert.equal(res.status, 200);
    assert.equal(body.status, 'degraded');
    assert.equal(body.ai.state, 'degraded');
    assert.ok(!JSON.stringify(body).includes('ZQX-provider-internal-text'));
  });

  it('reports an unreachable provider as down', async (t) => {
    const port = await freePort();
    const app = await buildTestApp(t, {
      env: { GOOGLE_CLIENT_ID: 'x', GOOGLE_CLIENT_SECRET: 'y', GMAIL_API_URL: `http://127.0.0.1:${port}/` },
    });
    const { res, body } = await getJson(app, '/health');
    assert.equal(res.status, 200);
    assert.equal(body.mail.state, 'down');
    assert.equal(body.status, 'degraded');
  });

  it('uses overridden probes (status follows the worst configured component)', async () => {
    const app = probed({ state: 'operational', detail: 'fine' }, { state: 'degraded', detail: 'slow' });
    const { body } = await getJson(app, '/health');
    assert.equal(body.status, 'degraded');
    assert.deepEqual(body.mail, { state: 'operational', detail: 'fine' });
    assert.deepEqual(body.ai, { state: 'degraded', detail: 'slow' });
  });

  it('calls a provider at most once per 15 s however often /health is asked', async (t) => {
    const gmail = await startProvider(t);
    const openai = await startProvider(t);
    const app = await buildTestApp(t, {
      env: {
        GOOGLE_CLIENT_ID: 'x',
        GOOGLE_CLIENT_SECRET: 'y',
        GMAIL_API_URL: gmail.url,
        OPENAI_API_KEY: 'sk-x',
        OPENAI_BASE_URL: openai.url,
      },
    });
    await Promise.all(Array.from({ length: 5 }, () => fetch(`${app.url}/health`).then((r) => r.arrayBuffer())));
    for (let i = 0; i < 5; i++) await (await fetch(`${app.url}/`)).arrayBuffer();
    await (await fetch(`${app.url}/trpc/system.health`)).arrayBuffer();
    assert.equal(gmail.requests.length, 1, 'one mail probe');
    assert.equal(openai.requests.length, 1, 'one AI probe');
  });
});

describe('reachability probes', () => {
  it('httpProbe classifies answers by status class', async (t) => {
    const p = await startProvider(t);
    const cases: [number, string][] = [
      [200, 'operational'],
      [204, 'operational'],
      [429, 'degraded'],
      [500, 'degraded'],
      [503, 'degraded'],
      [401, 'down'],
      [404, 'down'],
      [302, 'down'],
    ];
    for (const [status, state] of cases) {
      p.status = status;
      const r = await httpProbe(`${p.url}/x`)();
      assert.equal(r.state, state, `HTTP ${status}`);
    }
  });

  it('httpProbe reports a slow answer as degraded and no answer as down', async (t) => {
    const p = await startProvider(t);
    p.delayMs = 300;
    assert.equal((await httpProbe(`${p.url}/slow`, { slowMs: 50, timeoutMs: 5_000 })()).state, 'degraded');
    p.delayMs = 5_000;
    const r = await httpProbe(`${p.url}/hang`, { timeoutMs: 100 })();
    assert.equal(r.state, 'down');
    const refused = await httpProbe(`http://127.0.0.1:${await freePort()}/`)();
    assert.deepEqual(refused, { state: 'down', detail: 'unreachable' });
  });

  it('cachedProbe calls the provider once per 15 s and shares an in-flight check', async (t) => {
    const p = await startProvider(t);
    let now = 1_000_000;
    const probe = cachedProbe(httpProbe(`${p.url}/probe`), 15_000, () => now);
    const first = await Promise.all([probe(), probe(), probe()]);
    assert.equal(p.requests.length, 1, 'concurrent callers share one request');
    assert.ok(first.every((r) => r.state === 'operational'));
    now += 5_000;
    await probe();
    now += 9_999;
    await probe();
    assert.equal(p.requests.length, 1, 'cached within 15 s');
    p.status = 500;
    now += 1;
    const after = await probe();
    assert.equal(p.requests.length, 2, 'asked again at 15 s');
    assert.equal(after.state, 'degraded', 'the fresh answer is used');
    now += 14_999;
    assert.equal((await probe()).state, 'degraded');
    assert.equal(p.requests.length, 2);
  });
});

describe('GET / (HTML status page)', () => {
  it('is text/html and shows the same states as /health', async () => {
    const app = probed({ state: 'down', detail: 'x' }, { state: 'not_configured', detail: 'not configured' });
    const res = await fetch(`${app.url}/`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const html = await res.text();
    const { overall, cells } = parseHomePage(html);
    const { body } = await getJson(app, '/health');
    assert.equal(body.status, 'degraded');
    assert.equal(overall, body.status);
    assert.deepEqual(cells, {
      Database: 'operational',
      'Mail provider': body.mail.state,
      'AI provider': body.ai.state,
    });
    assert.ok(html.includes(app.config.statusPageUrl), 'links the status page');
  });

  it('shows ok when everything is fine', async () => {
    const app = probed({ state: 'operational', detail: 'ok' }, { state: 'operational', detail: 'ok' });
    const { overall, cells } = parseHomePage(await (await fetch(`${app.url}/`)).text());
    assert.equal(overall, 'ok');
    assert.deepEqual(cells, { Database: 'operational', 'Mail provider': 'operational', 'AI provider': 'operational' });
  });

  it('escapes component details', async () => {
    const app = probed({ state: 'degraded', detail: '<script>alert(1)</script>' });
    const html = await (await fetch(`${app.url}/`)).text();
    assert.ok(!html.includes('<script>alert(1)</script>'));
    assert.ok(html.includes('&lt;script&gt;'));
  });
});

describe('system.health over /trpc', () => {
  it('returns the same report as /health', async () => {
    const app = probed({ state: 'down', detail: 'x' }, { state: 'operational', detail: 'y' });
    const rest = (await getJson(app, '/health')).body;
    const res = await fetch(`${app.url}/trpc/system.health`);
    assert.equal(res.status, 200);
    const trpc = (await res.json()).result.data;
    assertReportShape(trpc);
    const { time: _a, ...restRest } = rest;
    const { time: _b, ...trpcRest } = trpc;
    assert.deepEqual(trpcRest, restRest);
    assert.equal(trpc.status, 'degraded');
  });
});

describe('incident feed', () => {
  const admin = { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' };
  const create = (app: TestApp, body: unknown, headers: Record<string, string> = admin) =>
    fetch(`${app.url}/api/status/incidents`, { method: 'POST', headers, body: JSON.stringify(body) });
  const patch = (app: TestApp, id: string, body: unknown, headers: Record<string, string> = admin) =>
    fetch(`${app.url}/api/status/incidents/${id}`, { method: 'PATCH', headers, body: JSON.stringify(body) });
  const list = async (app: TestApp) => {
    const res = await fetch(`${app.url}/api/status/incidents`);
    assert.equal(res.status, 200);
    return (await res.json()).incidents as Record<string, any>[];
  };
  const base = {
    kind: 'incident',
    state: 'investigating',
    title: 'Sync delayed',
    message: 'Mail sync is slow.',
    affectedComponents: ['mail', 'api'],
  };
  /** The shared plain app with no incident stored: each test starts from an empty feed. */
  const emptyFeed = async () => {
    const app = plainApp();
    await app.container.pool.query('delete from incidents');
    return app;
  };
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

  it('starts empty and is public', async () => {
    const app = await emptyFeed();
    assert.deepEqual(await list(app), []);
  });

  it('creates an incident (201) with the fields given and startsAt defaulting to now', async () => {
    const app = await emptyFeed();
    const before = Date.now();
    const res = await create(app, base);
    assert.equal(res.status, 201);
    const inc = await res.json();
    assert.match(inc.id, UUID);
    assert.equal(inc.kind, 'incident');
    assert.equal(inc.state, 'investigating');
    assert.equal(inc.title, 'Sync delayed');
    assert.equal(inc.message, 'Mail sync is slow.');
    assert.deepEqual(inc.affectedComponents, ['mail', 'api']);
    assert.match(inc.startsAt, ISO_MS);
    assert.ok(Date.parse(inc.startsAt) >= before - 1000 && Date.parse(inc.startsAt) <= Date.now() + 1000);
    assert.equal('resolvedAt' in inc, false, 'not resolved');
    assert.deepEqual(await list(app), [inc]);

    const scheduled = await (
      await create(app, {
        ...base,
        kind: 'maintenance',
        state: 'scheduled',
        affectedComponents: [],
        startsAt: '2031-05-01T02:00:00.000Z',
      })
    ).json();
    assert.equal(scheduled.startsAt, '2031-05-01T02:00:00.000Z');
    assert.deepEqual(scheduled.affectedComponents, []);
  });

  it('sets resolvedAt when created in a final state', async () => {
    const app = await emptyFeed();
    for (const [kind, state] of [
      ['incident', 'resolved'],
      ['maintenance', 'completed'],
    ]) {
      const res = await create(app, { ...base, kind, state });
      assert.equal(res.status, 201);
      const inc = await res.json();
      assert.match(inc.resolvedAt ?? '', ISO_MS, `${kind}/${state}`);
    }
  });

  it('refuses a state that does not belong to the kind', async () => {
    const app = await emptyFeed();
    for (const [kind, state] of [
      ['incident', 'scheduled'],
      ['incident', 'completed'],
      ['maintenance', 'investigating'],
      ['maintenance', 'resolved'],
    ]) {
      const res = await create(app, { ...base, kind, state });
      assert.equal(res.status, 400, `${kind}/${state}`);
      const body = await res.json();
      assert.equal(body.error.code, 'VALIDATION_FAILED');
      assert.ok(body.error.details.issues.some((i: { path: string }) => i.path === 'state'));
    }
    const inc = await (await create(app, base)).json();
    const res = await patch(app, inc.id, { state: 'in_progress' });
    assert.equal(res.status, 400);
    const body = await res.json();
    assert.equal(body.error.code, 'VALIDATION_FAILED');
    assert.deepEqual(
      body.error.details.issues.map((i: { path: string }) => i.path),
      ['state'],
    );
    assert.equal((await list(app)).length, 1, 'nothing was written');
  });

  it('PATCH to resolved sets resolvedAt; back to monitoring clears it', async () => {
    const app = await emptyFeed();
    const inc = await (await create(app, base)).json();
    const monitoring = await patch(app, inc.id, { state: 'monitoring', message: 'A fix is out.' });
    assert.equal(monitoring.status, 200);
    const m = await monitoring.json();
    assert.equal(m.state, 'monitoring');
    assert.equal(m.message, 'A fix is out.');
    assert.equal(m.title, inc.title, 'untouched fields stay');
    assert.equal('resolvedAt' in m, false);

    const resolved = await (await patch(app, inc.id, { state: 'resolved' })).json();
    assert.equal(resolved.state, 'resolved');
    assert.match(resolved.resolvedAt ?? '', ISO_MS);
    assert.equal((await list(app))[0].resolvedAt, resolved.resolvedAt);

    const again = await (await patch(app, inc.id, { title: 'Sync delayed (fixed)' })).json();
    assert.equal(again.resolvedAt, resolved.resolvedAt, 'resolvedAt kept while resolved');

    const reopened = await (await patch(app, inc.id, { state: 'monitoring' })).json();
    assert.equal(reopened.state, 'monitoring');
    assert.equal('resolvedAt' in reopened, false, 'leaving resolved clears resolvedAt');
    assert.equal('resolvedAt' in (await list(app))[0], false);
    assert.equal(reopened.startsAt, inc.startsAt);
    assert.equal(reopened.id, inc.id);
  });

  it('PATCH of a maintenance to completed sets resolvedAt', async () => {
    const app = await emptyFeed();
    const inc = await (await create(app, { ...base, kind: 'maintenance', state: 'scheduled' })).json();
    const done = await (await patch(app, inc.id, { state: 'completed', affectedComponents: ['database'] })).json();
    assert.match(done.resolvedAt ?? '', ISO_MS);
    assert.deepEqual(done.affectedComponents, ['database']);
  });

  it('PATCH of an unknown id is NOT_FOUND', async () => {
    const app = await emptyFeed();
    const res = await patch(app, '7b0f7a4e-1111-4222-8333-444455556666', { state: 'resolved' });
    assert.equal(res.status, 404);
    assert.equal((await res.json()).error.code, 'NOT_FOUND');
  });

  it('lists the 100 most recent by startsAt, newest first', async () => {
    const app = await emptyFeed();
    // 105 incidents with distinct start times, inserted in a shuffled order.
    const starts = Array.from({ length: 105 }, (_, i) => new Date(Date.UTC(2030, 0, 1) + i * 3_600_000).toISOString());
    const shuffled = starts.map((_, i) => starts[(i * 37) % starts.length]);
    assert.equal(new Set(shuffled).size, starts.length);
    for (const startsAt of shuffled) {
      await app.container.services.incidents.create(app.container.orm.em.fork(), {
        kind: 'incident',
        state: 'investigating',
        title: startsAt,
        message: 'm',
        affectedComponents: [],
        startsAt,
      });
    }
    const incidents = await list(app);
    assert.equal(incidents.length, 100);
    const expected = [...starts].reverse().slice(0, 100);
    assert.deepEqual(
      incidents.map((i) => i.startsAt),
      expected,
    );
    // One created over HTTP with an older start than all of them does not show up.
    assert.equal((await create(app, { ...base, startsAt: '2029-01-01T00:00:00.000Z' })).status, 201);
    assert.ok(!(await list(app)).some((i) => i.startsAt === '2029-01-01T00:00:00.000Z'));
    // One newer shows up first.
    assert.equal((await create(app, { ...base, startsAt: '2040-01-01T00:00:00.000Z' })).status, 201);
    const now = await list(app);
    assert.equal(now.length, 100);
    assert.equal(now[0].startsAt, '2040-01-01T00:00:00.000Z');
  });

  it('the same list through /trpc status.incidents', async () => {
    const app = await emptyFeed();
    await create(app, base);
    await create(app, { ...base, startsAt: '2031-01-01T00:00:00.000Z' });
    const rest = await list(app);
    const trpc = (await (await fetch(`${app.url}/trpc/status.incidents`)).json()).result.data.incidents;
    assert.deepEqual(trpc, rest);
    assert.equal(rest[0].startsAt, '2031-01-01T00:00:00.000Z');
  });

  it('refuses writes with a wrong or missing bearer token (FORBIDDEN) and writes nothing', async () => {
    const app = await emptyFeed();
    const inc = await (await create(app, base)).json();
    for (const auth of [
      undefined,
      'Bearer not-the-token',
      `Bearer ${ADMIN_TOKEN.slice(0, -1)}`,
      `Token ${ADMIN_TOKEN}`,
    ]) {
      const headers: Record<string, string> = { 'Content-Type': 'application/json' };
      if (auth) headers.Authorization = auth;
      const c = await create(app, base, headers);
      assert.equal(c.status, 403, `create with ${auth}`);
      assert.equal((await c.json()).error.code, 'FORBIDDEN');
      const p = await patch(app, inc.id, { state: 'resolved' }, headers);
      assert.equal(p.status, 403, `patch with ${auth}`);
      assert.equal((await p.json()).error.code, 'FORBIDDEN');
    }
    const all = await list(app);
    assert.equal(all.length, 1);
    assert.equal(all[0].state, 'investigating');
  });

  it('with STATUS_ADMIN_TOKEN unset, writes are always FORBIDDEN', async (t) => {
    const app = await buildTestApp(t, { env: { STATUS_ADMIN_TOKEN: undefined } });
    assert.equal(app.config.statusAdminToken, undefined);
    for (const auth of [`Bearer ${ADMIN_TOKEN}`, 'Bearer ', 'Bearer undefined', 'Bearer null', undefined]) {
      const headers: Record<string, string> = { 'Content-Type': 'application/json' };
      if (auth !== undefined) headers.Authorization = auth;
      const res = await create(app, base, headers);
      assert.equal(res.status, 403, `create with ${JSON.stringify(auth)}`);
      assert.equal((await res.json()).error.code, 'FORBIDDEN');
      const p = await patch(app, '7b0f7a4e-1111-4222-8333-444455556666', { state: 'resolved' }, headers);
      assert.equal(p.status, 403);
    }
    assert.deepEqual(await list(app), []);
  });
});

describe('GET /openapi.json', () => {
  it('is an OpenAPI 3.x document of the REST routes with the error envelope', async () => {
    const app = plainApp();
    const res = await fetch(`${app.url}/openapi.json`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    const doc = await res.json();
    assert.match(doc.openapi, /^3\.\d+\.\d+$/);
    assert.ok(doc.info?.title);
    for (const [path, methods] of [
      ['/api/status/incidents', ['get', 'post']],
      ['/api/status/incidents/{id}', ['patch']],
      ['/health', ['get']],
      ['/auth/session', ['get']],
      ['/auth/logout', ['post']],
    ] as const) {
      for (const m of methods) assert.ok(doc.paths?.[path]?.[m], `${m.toUpperCase()} ${path} documented`);
    }
    const envelope = doc.components?.schemas?.ErrorEnvelope;
    assert.ok(envelope, 'ErrorEnvelope schema');
    assert.deepEqual([...envelope.properties.error.properties.code.enum].sort(), [...ERROR_CODES].sort());
    assert.deepEqual([...envelope.properties.error.required].sort(), ['code', 'message', 'requestId']);

    let errorResponses = 0;
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      if (path === '/health') continue; // its 503 carries the health report, by design
      for (const [method, op] of Object.entries<Record<string, any>>(item)) {
        for (const [status, response] of Object.entries<Record<string, any>>(op.responses ?? {})) {
          if (Number(status) < 400) continue;
          errorResponses++;
          assert.equal(
            response.content?.['application/json']?.schema?.$ref,
            '#/components/schemas/ErrorEnvelope',
            `${method.toUpperCase()} ${path} ${status}`,
          );
        }
      }
    }
    assert.ok(errorResponses >= 10, `error responses documented (${errorResponses})`);

    const post = doc.paths['/api/status/incidents'].post.responses;
    assert.ok(post['201'], 'POST incidents documents 201');
    for (const code of ['FORBIDDEN', 'VALIDATION_FAILED', 'RATE_LIMITED'] as const)
      assert.ok(post[String(ERROR_TABLE[code].status)], `POST incidents documents ${code}`);
    assert.ok(doc.paths['/api/status/incidents/{id}'].patch.responses['404'], 'PATCH documents NOT_FOUND');
    assert.ok(doc.paths['/health'].get.responses['503'], '/health documents 503');
  });
});
