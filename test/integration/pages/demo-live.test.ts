/**
 * The demo's web client is live: in Chromium, with the page open and the inbox in, a message
 * delivered to the stand-in mailbox (as the demo's live mail arrives: watch, Pub/Sub, intake,
 * sync) is announced the moment its event arrives and shown without a reload. The page never
 * polls: it holds one event stream (`mail.events`), reads the list only after an event of it
 * (both watched through the DevTools protocol), and never asks for the sync state.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { liveMessage } from '../../../demo/live-mail.ts';
import { chromiumMissing, launchChromium } from '../../helpers/chromium.ts';
import { startTestDemo } from '../../helpers/demo.ts';

describe('npm run demo, live in the browser', () => {
  it('shows a newly delivered message without a reload, reading the list only after events', {
    timeout: 90_000,
  }, async (t) => {
    const missing = chromiumMissing();
    if (missing) return t.skip(missing);
    const demo = await startTestDemo(t, { seedMessages: 20, dataDirPrefix: 'mia-demo-live-' });

    const browser = await launchChromium(t);
    const page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
    // What the page asks for, and what its event stream brings (the DevTools protocol sees both).
    const asked: string[] = [];
    page.on('request', (r) => asked.push(new URL(r.url()).pathname));
    const streamed: string[] = [];
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('Network.enable');
    cdp.on('Network.eventSourceMessageReceived', (m) => streamed.push(m.data));
    let navigations = 0;
    page.on('framenavigated', (f) => f === page.mainFrame() && navigations++);

    await page.goto(demo.webOrigin);
    await page.click('#account >> text=Sign in');
    await page.waitForSelector('#account >> text=alice@example.com');
    await page.waitForSelector('#sync-state >> text=/Up to date/', { timeout: 20_000 });
    await page.waitForSelector('#threads li');
    await page.evaluate(() => ((window as unknown as { sameDocument: boolean }).sameDocument = true));
    const navigated = navigations;

    const sent = liveMessage(0);
    demo.deliver(sent);
    await page.waitForSelector('#new-mail >> text=1 new message — show', { timeout: 15_000 });
    await page.click('#new-mail');
    await page.waitForSelector(`#threads li:first-child .subject >> text=${sent.subject}`);
    assert.equal(await page.locator('#threads li:first-child .from').textContent(), sent.from!.name);
    assert.equal(await page.locator('#threads li:first-child').getAttribute('class'), 'unread');
    assert.match((await page.textContent('#sync-state'))!, /Up to date/);

    assert.equal(navigations, navigated, 'no navigation since the inbox was in');
    assert.equal(
      await page.evaluate(() => (window as unknown as { sameDocument?: boolean }).sameDocument),
      true,
      'the same document: no reload',
    );
    assert.equal(asked.filter((p) => p.endsWith('/trpc/mail.events')).length, 1, 'one event stream, held open');
    assert.deepEqual(
      asked.filter((p) => /syncState|sync-state/.test(p)),
      [],
      'the sync state is never polled',
    );
    const listEvents = streamed.filter((d) => /"type":"(threads|reset)"/.test(d)).length;
    const listReads = asked.filter((p) => p.endsWith('/trpc/mail.threads')).length;
    assert.ok(listEvents >= 1, `the new mail's event came through the stream: ${JSON.stringify(streamed)}`);
    assert.ok(
      listReads <= 1 + listEvents,
      `the list is read once at the start, then only after an event (${listReads} reads, ${listEvents} events)`,
    );
  });
});
