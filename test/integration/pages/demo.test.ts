import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../../../server/database.ts';
import { startDemo } from '../../../demo/start-demo.ts';
import { chromiumMissing, launchChromium } from '../../helpers/chromium.ts';
import { createTestDatabase } from '../../helpers/database.ts';

const ARTIFACTS = path.resolve('test-artifacts');

describe('npm run demo, driven by a person in a browser', () => {
  it('signs in, syncs, opens a thread, analyzes and drafts, and sees live mail arrive', async (t) => {
    const missing = chromiumMissing();
    if (missing) return t.skip(missing);
    const db = await createTestDatabase();
    t.after(() => db.drop());
    const demo = await startDemo({
      apiPort: await freePort(),
      webPort: await freePort(),
      dataDir: mkdtempSync(path.join(tmpdir(), 'mia-demo-')),
      databaseUrl: db.url,
      newMailEveryMs: 60 * 60_000,
      seedMessages: 60,
      quiet: true,
    });
    t.after(() => demo.close());

    const browser = await launchChromium(t);
    const page = await browser.newPage();
    await page.goto(demo.webOrigin);
    await page.click('text=Sign in');
    await page.waitForURL(/connected=1/);
    await page.waitForSelector('#account >> text=alice@example.com');

    // The sign-in queued the backfill: the list fills by itself, without pressing Sync.
    await page.waitForSelector('#threads li', { timeout: 15_000 });
    assert.ok((await page.locator('#threads li').count()) > 0);
    await page.click('#sync');
    await page.waitForSelector('#notice >> text=/Synced \\d+ messages|Syncing in the background/');

    await page.locator('#threads li').first().click();
    await page.waitForSelector('#detail-pane .message');
    await page.click('text=Analyze');
    await page.waitForSelector('#detail-pane .card >> text=/Priority (URGENT|IMPORTANT|NORMAL|LOW)/');
    await page.click('text=Draft a reply');
    await page.waitForSelector('#detail-pane textarea');
    assert.ok((await page.inputValue('#detail-pane textarea')).length > 10);

    // Live update: a new message at the provider reaches the list through the watch, the intake and a sync job.
    demo.gmail.addMessage('alice@example.com', { subject: 'Arrived while you watched' });
    await page.waitForSelector('#threads li >> text=Arrived while you watched', { timeout: 15_000 });

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, 'demo.png'), fullPage: true });
  });
});
