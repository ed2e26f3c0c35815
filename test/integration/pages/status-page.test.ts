import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { ADMIN_TOKEN, buildTestApp } from '../../helpers/app.ts';
import { chromiumMissing, launchChromium } from '../../helpers/chromium.ts';

const ARTIFACTS = path.resolve('test-artifacts');

async function createIncident(url: string, body: Record<string, unknown>) {
  const res = await fetch(`${url}/api/status/incidents`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
  assert.equal(res.status, 201);
  return res.json();
}

describe('GET /status in a real browser', () => {
  it('shows the live component states of /health and the incident history', async (t) => {
    const missing = chromiumMissing();
    if (missing) return t.skip(missing);
    const app = await buildTestApp(t, {
      overrides: { probes: { mail: async () => ({ state: 'degraded', detail: 'answered HTTP 503' }) } },
    });
    const resolved = await createIncident(app.url, {
      kind: 'incident',
      state: 'resolved',
      title: 'Sync delays',
      message: 'Notifications arrived late.',
      affectedComponents: ['mail'],
      startsAt: '2026-01-02T10:00:00.000Z',
    });
    const planned = await createIncident(app.url, {
      kind: 'maintenance',
      state: 'scheduled',
      title: 'Database upgrade',
      message: 'Five minutes read-only.',
      affectedComponents: ['database'],
    });

    const browser = await launchChromium(t);
    const page = await browser.newPage();
    await page.goto(`${app.url}/status`);
    await page.waitForFunction(() => document.getElementById('overall')?.dataset.status !== 'unknown');
    await page.waitForSelector(`[data-incident="${resolved.id}"]`);

    const health = await (await fetch(`${app.url}/health`)).json();
    assert.equal(await page.getAttribute('#overall', 'data-status'), health.status);
    assert.equal(health.status, 'degraded');
    for (const key of ['mail', 'ai'] as const) {
      assert.equal(
        await page.getAttribute(`tr[data-component="${key}"] td[data-state]`, 'data-state'),
        health[key].state,
      );
    }
    assert.equal(await page.getAttribute('tr[data-component="database"] td[data-state]', 'data-state'), 'operational');
    assert.equal(await page.locator(`#maintenance [data-incident="${planned.id}"]`).count(), 1);
    assert.equal(await page.locator(`#history [data-incident="${resolved.id}"]`).count(), 1);
    assert.match(await page.locator(`#history [data-incident="${resolved.id}"]`).innerText(), /Sync delays/);

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, 'status-page.png'), fullPage: true });
  });

  it('is served as static HTML that loads its script from the same directory', async (t) => {
    const app = await buildTestApp(t);
    const res = await fetch(`${app.url}/status`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /text\/html/);
    const html = await res.text();
    assert.match(html, /<script src="status.js"><\/script>/);
    assert.equal((await fetch(`${app.url}/status.js`)).status, 200);
  });
});
