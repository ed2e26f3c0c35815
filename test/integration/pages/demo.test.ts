/**
 * `npm run demo` driven by a person in Chromium, on a desktop and on a 390 px phone: sign in,
 * the inbox fills by itself with visible progress (from the account's live events), rows show sender and date, a thread opens,
 * Analyze and Draft a reply work (busy while they run, options in labelled selects), and new
 * mail is announced without moving the rows. Screenshots land in test-artifacts/ (gitignored).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { chromiumMissing, launchChromium } from '../../helpers/chromium.ts';
import { startTestDemo } from '../../helpers/demo.ts';

const ARTIFACTS = path.resolve('test-artifacts');

/** Controls without an accessible label, and whether the page scrolls sideways. */
async function layoutFacts(page: Page) {
  return page.evaluate(() => ({
    unlabelled: Array.from(document.querySelectorAll('select, textarea, input'))
      .filter((c) => !(c as HTMLSelectElement).labels?.length && !c.getAttribute('aria-label'))
      .map((c) => c.outerHTML.slice(0, 80)),
    nameless: Array.from(document.querySelectorAll('button')).filter(
      (b) => !b.textContent?.trim() && !b.getAttribute('aria-label'),
    ).length,
    overflow: document.documentElement.scrollWidth - window.innerWidth,
  }));
}

/** Waits until every mail body frame has painted its text (they load after the page). */
async function framesLoaded(page: Page) {
  for (const frame of page.frames().slice(1))
    await frame.waitForFunction(() => (document.body?.innerText ?? '').trim().length > 0, null, { timeout: 5_000 });
}

describe('npm run demo, driven by a person in a browser', () => {
  it('signs in, watches the inbox fill, opens a thread, analyzes and drafts, on a desktop and a phone', async (t) => {
    const missing = chromiumMissing();
    if (missing) return t.skip(missing);
    const demo = await startTestDemo(t, { seedMessages: 60, dataDirPrefix: 'mia-demo-' });
    mkdirSync(ARTIFACTS, { recursive: true });

    const browser = await launchChromium(t);
    const desktop = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await desktop.newPage();
    await page.goto(demo.webOrigin);
    // The mail provider answers slowly during the sign-in, so the page (subscribed to the
    // account's events from its first moment) sees the first load under way, not only its end.
    demo.gmail.setLatency(1_000);
    await page.click('#account >> text=Sign in');
    await page.waitForSelector('#account >> text=alice@example.com');

    // The sign-in queued the backfill: the list fills by itself, with progress from the `sync` events, without pressing Sync.
    await page.waitForSelector('#sync-state >> text=/Fetching your inbox/', { timeout: 10_000 });
    // The first call's 50 of the 60 are in: the line counts them, of the provider's inbox count.
    await page.waitForSelector('#sync-state >> text=Fetching your inbox… 50 of ~60 messages', { timeout: 15_000 });
    assert.deepEqual(
      await page.$eval('#fill', (p: HTMLProgressElement) => [p.value, p.max]),
      [50, 60],
      'the bar shows the same',
    );
    assert.equal(await page.locator('#fill').isVisible(), true, 'the progress bar shows while the inbox is fetched');
    await page.screenshot({ path: path.join(ARTIFACTS, 'demo-desktop-filling.png') });
    demo.gmail.setLatency(0);
    await page.waitForSelector('#threads li', { timeout: 15_000 });
    await page.waitForSelector('#sync-state >> text=/Up to date/', { timeout: 20_000 });
    assert.equal(await page.locator('#fill').isHidden(), true, 'the progress bar is gone once the inbox is in');
    const inboxThreads = new Set(demo.gmail.inbox('alice@example.com').map((m) => m.threadId)).size;
    assert.match((await page.textContent('#page')) ?? '', new RegExp(`of ${inboxThreads}$`));

    // Every row shows its sender and its date.
    await page.waitForFunction(
      () =>
        Array.from(document.querySelectorAll('#threads .from')).every((f) => f.textContent && f.textContent !== '…'),
      null,
      { timeout: 10_000 },
    );
    const first = page.locator('#threads li').first();
    assert.ok((await first.locator('.from').textContent())!.trim().length > 1);
    assert.match((await first.locator('time').getAttribute('datetime'))!, /^\d{4}-\d\d-\d\dT/);
    assert.match((await first.locator('time').textContent())!, /\d/);
    await page.screenshot({ path: path.join(ARTIFACTS, 'demo-desktop-inbox.png') });

    // New mail is announced; the rows stay where they are until the user asks for it.
    const topBefore = await first.locator('.subject').textContent();
    await first.hover();
    demo.deliver({
      subject: 'Arrived while you watched',
      from: { name: 'Kenji Watanabe', address: 'kenji@tailspin.dev' },
      bodyText: 'Can we move our call to 3pm?',
    });
    await page.waitForSelector('#new-mail >> text=1 new message — show', { timeout: 15_000 });
    assert.equal(await first.locator('.subject').textContent(), topBefore, 'the row under the pointer did not move');
    await page.click('#new-mail');
    await page.waitForSelector('#threads li:first-child .subject >> text=Arrived while you watched');
    await page.waitForSelector('#threads li:first-child .from >> text=Kenji Watanabe');
    assert.match((await page.textContent('#sync-state'))!, /Up to date/, 'new mail is not mistaken for the first fill');

    // Open a thread, analyze it and draft a reply (buttons are busy while their request runs).
    await page.click('#threads li:first-child .row');
    await page.waitForSelector('#detail-pane .message >> text=Can we move our call to 3pm?');
    await page.click('text=Analyze');
    await page.waitForSelector('button[aria-busy="true"] >> text=Analyzing…', { timeout: 1_000 });
    await page.waitForSelector('#detail-pane .card >> text=/Priority (Important|Normal) · needs reply/');
    await page.selectOption('label:has-text("Length") select', 'short');
    await page.selectOption('label:has-text("Tone") select', 'friendly');
    await page.click('text=Draft a reply');
    await page.waitForSelector('button[aria-busy="true"] >> text=Drafting…', { timeout: 1_000 });
    await page.waitForSelector('#detail-pane textarea');
    const draft = await page.inputValue('#detail-pane textarea');
    assert.match(draft, /^Hi Kenji,/);
    assert.match(draft, /Arrived while you watched/);
    assert.ok(draft.split(/\s+/).length <= 80, 'a short draft');
    let facts = await layoutFacts(page);
    assert.deepEqual(facts.unlabelled, [], 'every form control has a label');
    assert.equal(facts.nameless, 0, 'every button has a name');
    assert.ok(await page.locator('label:has-text("Language") select').count());
    await page.screenshot({ path: path.join(ARTIFACTS, 'demo-desktop-thread.png') });

    // A 390 px phone, same session: one column, no sideways scrolling, the thread full width with a way back.
    const phone = await browser.newContext({
      viewport: { width: 390, height: 844 },
      isMobile: true,
      hasTouch: true,
      storageState: await desktop.storageState(),
    });
    const mobile = await phone.newPage();
    await mobile.goto(demo.webOrigin);
    await mobile.waitForSelector('#sync-state >> text=/Up to date/', { timeout: 10_000 });
    await mobile.waitForFunction(
      () =>
        Array.from(document.querySelectorAll('#threads .from')).every((f) => f.textContent && f.textContent !== '…'),
      null,
      { timeout: 10_000 },
    );
    facts = await layoutFacts(mobile);
    assert.ok(facts.overflow <= 0, `no horizontal overflow on the phone (${facts.overflow} px)`);
    assert.ok(await mobile.locator('#threads li:first-child time').isVisible(), 'the date is visible on the phone');
    assert.ok(await mobile.locator('#threads li:first-child .from').isVisible(), 'the sender is visible on the phone');
    await mobile.screenshot({ path: path.join(ARTIFACTS, 'demo-phone-inbox.png'), fullPage: true });
    await mobile.tap('#threads li:nth-child(2) .row');
    await mobile.waitForSelector('#detail-pane .message');
    assert.equal(await mobile.locator('#list-pane').isHidden(), true, 'the thread takes the whole phone screen');
    await mobile.tap('text=Analyze');
    await mobile.waitForSelector('#detail-pane .card >> text=/Priority/');
    facts = await layoutFacts(mobile);
    assert.ok(facts.overflow <= 0, `no horizontal overflow in a thread on the phone (${facts.overflow} px)`);
    assert.deepEqual(facts.unlabelled, []);
    await framesLoaded(mobile);
    await mobile.screenshot({ path: path.join(ARTIFACTS, 'demo-phone-thread.png'), fullPage: true });
    await mobile.tap('text=← Inbox');
    assert.equal(await mobile.locator('#list-pane').isVisible(), true);
  });
});
