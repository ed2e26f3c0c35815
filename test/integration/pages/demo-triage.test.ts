/**
 * The demo's triage (issue 45). Without a browser: a fresh demo's account has `autoTriage` on
 * from its first sign-in (set through the settings service), the user's own choice then
 * survives a sign-in again, and the page served carries the list's filters, exactly those the
 * client's code knows (demo/web/triage.ts), and the "Triage new mail" box. In Chromium: the
 * box shows and changes the setting, an analysed row shows its badges, the filters choose the
 * rows and the count, paging keeps the filter, a correction is saved and shown, and what the
 * mail and the model wrote is shown as text.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { demoResponder } from '../../../demo/ai-responder.ts';
import { FILTERS } from '../../../demo/web/triage.ts';
import { Browser } from '../../../harness/browser.ts';
import { chromiumMissing, launchChromium } from '../../helpers/chromium.ts';
import { startTestDemo } from '../../helpers/demo.ts';
import { csrfHeaders, signIn } from '../../helpers/providers.ts';

const ARTIFACTS = path.resolve('test-artifacts');

/** The list's row of the thread with this subject. */
const rowOf = (page: Page, subject: string) =>
  page.locator('#threads li', { has: page.locator('.subject', { hasText: subject }) });

describe('npm run demo, triage', () => {
  it("signs the demo account in with autoTriage on, then leaves the user's choice alone", {
    timeout: 60_000,
  }, async (t) => {
    const demo = await startTestDemo(t, { seedMessages: 5, dataDirPrefix: 'mia-demo-triage-' });
    const browser = new Browser(demo.apiBase, demo.webOrigin);
    const settings = async () =>
      ((await (await browser.fetch('/api/settings')).json()) as { autoTriage: boolean }).autoTriage;
    /** PATCH /api/settings as the web client sends it (the session's CSRF token, the web origin). */
    const choose = async (csrfToken: string, autoTriage: boolean) => {
      const res = await browser.fetch('/api/settings', {
        method: 'PATCH',
        headers: csrfHeaders(csrfToken, demo.webOrigin),
        json: { autoTriage },
      });
      assert.equal(res.status, 200);
    };

    let session = await signIn(browser);
    assert.equal(await settings(), true, 'on at the first sign-in, before the page loads');
    await choose(session.csrfToken, false);
    session = await signIn(browser);
    assert.equal(await settings(), false, 'a later sign-in keeps what the user chose');
    await choose(session.csrfToken, true);
    await signIn(browser);
    assert.equal(await settings(), true, 'nor does it turn the setting off');
  });

  it('serves the page with the filters the client knows and the triage toggle', async (t) => {
    const demo = await startTestDemo(t, { seedMessages: 1, dataDirPrefix: 'mia-demo-page-' });
    const html = await (await fetch(demo.webOrigin)).text();
    const group = /<div id="filters" role="group" aria-label="[^"]+"[^>]*>([\s\S]*?)<\/div>/.exec(html);
    assert.ok(group, 'a labelled group of filters');
    const buttons = [
      ...group[1]!.matchAll(
        /<button type="button" data-filter="([^"]+)" aria-pressed="(true|false)">([^<]+)<\/button>/g,
      ),
    ].map((m) => [m[1], m[3], m[2]]);
    assert.deepEqual(
      buttons,
      Object.entries(FILTERS).map(([id, f], i) => [id, f.label, String(i === 0)]),
      'every filter, in order, "All" pressed',
    );
    assert.match(
      html,
      /<label id="triage-toggle"[^>]*><input id="auto-triage" type="checkbox"> Triage new mail<\/label>/,
    );
    const js = await (await fetch(`${demo.webOrigin}/app.js`)).text();
    assert.match(js, /correctAnalysis/, 'the bundle saves corrections');
  });

  it('in a browser: the toggle, badges, filters with their count and pages, a correction, text only', {
    timeout: 120_000,
  }, async (t) => {
    const missing = chromiumMissing();
    if (missing) return t.skip(missing);
    const demo = await startTestDemo(t, { seedMessages: 60, dataDirPrefix: 'mia-demo-triage-browser-' });
    const markup = '<img src=x onerror="window.__xss=1"><b>bold</b>';
    // The model read the mail, and may answer with markup: the page must show it as text.
    demo.openai.setResponder((body, ctx) => {
      const answer = demoResponder(body as Parameters<typeof demoResponder>[0], ctx);
      return JSON.stringify(body).includes('Markup test')
        ? { ...answer, reason: `Because ${markup}`, suggestedAction: markup }
        : answer;
    });
    const outage = {
      subject: 'Checkout is down',
      from: { name: 'Ops Pager', address: 'oncall@contoso.com' },
      bodyText: 'The checkout API is down since 09:40. We need your go-ahead immediately, please reply ASAP.',
    };
    const html = {
      subject: `Markup test ${markup}`,
      from: { name: `Mallory ${markup}`, address: 'mallory@example.com' },
      bodyText: 'Could you take a look?',
    };
    // Unread mail past one page (PAGE is 25), whatever the seeded mailbox holds: "Unread" has a second page.
    for (let i = 0; i < 26; i++) demo.deliver({ subject: `Unread notice ${i}`, bodyText: 'Just so you know.' });
    demo.deliver(outage);
    demo.deliver(html);

    const browser = await launchChromium(t);
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const api = async <T>(path: string) => (await (await context.request.get(`${demo.apiBase}${path}`)).json()) as T;
    const listReads: string[] = [];
    page.on(
      'request',
      (r) =>
        r.url().includes('/trpc/mail.threads') &&
        listReads.push(decodeURIComponent(new URL(r.url()).searchParams.get('input') ?? '')),
    );
    await page.goto(demo.webOrigin);
    await page.click('#account >> text=Sign in');
    await page.waitForSelector('#sync-state >> text=/Up to date/', { timeout: 30_000 });
    await rowOf(page, 'Checkout is down').waitFor();

    // "Triage new mail" shows the demo's default (on) and changes the account's setting.
    const box = page.locator('#auto-triage');
    assert.equal(await box.isChecked(), true, 'the demo account triages new mail');
    await box.uncheck();
    await page.waitForSelector('#auto-triage:not([aria-busy]):not(:checked)');
    assert.equal((await api<{ autoTriage: boolean }>('/api/settings')).autoTriage, false);
    await box.check();
    await page.waitForSelector('#auto-triage:not([aria-busy]):checked');
    assert.equal((await api<{ autoTriage: boolean }>('/api/settings')).autoTriage, true);

    // The sender and subject of a mail are text, in the row as everywhere.
    const mallory = rowOf(page, 'Markup test');
    assert.equal(await mallory.locator('.subject').textContent(), html.subject);
    assert.equal(await mallory.locator('.from').textContent(), html.from.name);

    // Analyze: the card says what the model found, and the row gets its badges from the `threads` event.
    await rowOf(page, 'Checkout is down').locator('.row').click();
    await page.click('#detail-pane button >> text=Analyze');
    await page.waitForSelector('#detail-pane .card >> text=Priority Urgent · needs reply · confidence');
    await rowOf(page, 'Checkout is down').locator('.badge.priority-urgent >> text=Urgent').waitFor();
    assert.equal(
      await rowOf(page, 'Checkout is down').locator('.badge.reply-needs-reply').textContent(),
      'Needs reply',
    );
    assert.equal(await rowOf(page, 'Checkout is down').locator('.corrected').count(), 0);

    // The model's markup is shown as text: no element of it, nothing ran.
    await mallory.locator('.row').click();
    await page.click('#detail-pane button >> text=Analyze');
    await page.waitForSelector(`#detail-pane .card >> text=Suggested: ${markup}`);
    assert.equal(await page.locator('#detail-pane .card p', { hasText: 'Because' }).textContent(), `Because ${markup}`);
    assert.equal(
      await page.locator('#detail-pane .card img, #detail-pane .card b, #threads img, #threads b').count(),
      0,
    );
    await rowOf(page, 'Markup test').locator('.badge').first().waitFor();
    assert.equal(await page.evaluate(() => (window as unknown as { __xss?: number }).__xss), undefined);

    // "Urgent": only urgent rows, the count of the server's, and the filter in what the page asked for.
    await page.click('#filters button >> text=Urgent');
    await page.waitForSelector('#filters button[aria-pressed="true"] >> text=Urgent');
    const urgent = await api<{ total: number; threads: { subject: string }[] }>(
      '/api/mail/threads?priority=URGENT&limit=100',
    );
    await page.waitForSelector(`#page >> text=/of ${urgent.total}$/`);
    assert.ok(urgent.threads.some((th) => th.subject === 'Checkout is down'));
    assert.equal(await page.locator('#threads li').count(), urgent.threads.length);
    assert.equal(
      await page.locator('#threads li .badge.priority-urgent').count(),
      urgent.threads.length,
      'every row is urgent',
    );
    assert.match(listReads.at(-1)!, /"priority":"URGENT"/);

    // A correction: the selects start at the model's values, Save is offered for a change only.
    await rowOf(page, 'Checkout is down').locator('.row').click();
    await page.waitForSelector('#detail-pane .card >> text=Priority Urgent · needs reply');
    const save = page.locator('#detail-pane form.correction button');
    assert.equal(await save.isDisabled(), true, 'nothing to save yet');
    await page.selectOption('#detail-pane label:has-text("Priority") select', 'NORMAL');
    await page.selectOption('#detail-pane label:has-text("Reply status") select', 'WAITING_ON_OTHERS');
    await save.click();
    await page.waitForSelector('#detail-pane .correction >> text=Saved.');
    await page.waitForSelector('#detail-pane .card >> text=Priority Normal · waiting on others · corrected by you');
    assert.equal(await save.isDisabled(), true);
    const stored = (
      await api<{ threads: { subject: string; analysis: unknown }[] }>('/api/mail/threads?limit=100')
    ).threads.find((th) => th.subject === 'Checkout is down');
    assert.deepEqual(stored?.analysis, {
      priority: 'NORMAL',
      replyStatus: 'WAITING_ON_OTHERS',
      confidence: (stored?.analysis as { confidence: number }).confidence,
      corrected: true,
    });
    // No longer urgent: the filtered list changed, announced rather than moved under the pointer.
    await page.waitForSelector('#new-mail >> text=The list changed — show');
    await page.click('#new-mail');
    await rowOf(page, 'Checkout is down').waitFor({ state: 'detached' });
    await page.waitForSelector(`#page >> text=/of ${urgent.total - 1}$/`);

    // "All": the corrected row shows the user's values and the mark.
    await page.click('#filters button >> text=All');
    const corrected = rowOf(page, 'Checkout is down');
    await corrected.locator('.badge.priority-normal').waitFor();
    assert.deepEqual(await corrected.locator('.badge, .corrected').allTextContents(), [
      'Normal',
      'Waiting on others',
      'corrected',
    ]);
    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, 'demo-desktop-triage.png') });

    // "Needs reply" holds what was analysed as needing one; "Unread" pages with its filter kept.
    await page.click('#filters button >> text=Needs reply');
    await rowOf(page, 'Markup test').waitFor();
    const needsReply = await api<{ total: number }>('/api/mail/threads?replyStatus=NEEDS_REPLY');
    await page.waitForSelector(`#page >> text=/of ${needsReply.total}$/`);
    await page.click('#filters button >> text=Unread');
    const unread = await api<{ total: number }>('/api/mail/threads?unread=true');
    assert.ok(unread.total > 25);
    await page.waitForSelector(`#page >> text=1–25 of ${unread.total}`);
    await page.click('#next');
    await page.waitForSelector(`#page >> text=/^26–\\d+ of ${unread.total}$/`);
    assert.match(listReads.at(-1)!, /"offset":25/);
    assert.match(listReads.at(-1)!, /"unread":true/);
    assert.equal(
      await page.locator('#threads li.unread').count(),
      await page.locator('#threads li').count(),
      'the second page is unread threads too',
    );

    // Opened from the list, an analysed thread offers the correction at once; once a newer
    // message came, there is nothing to correct (NOT_FOUND), said in the panel and the notice line.
    await page.click('#filters button >> text=All');
    await rowOf(page, 'Markup test').locator('.row').click();
    await page.waitForSelector('#detail-pane .card >> text=/^Priority Normal · needs reply · confidence/');
    const mailThreadId = (
      await api<{ threads: { subject: string; mailThreadId: string }[] }>('/api/mail/threads?limit=5')
    ).threads.find((th) => th.subject === html.subject)!.mailThreadId;
    demo.deliver({ threadId: mailThreadId, subject: html.subject, from: html.from, bodyText: 'One more thing.' });
    await page.waitForSelector('#new-mail:not([hidden])');
    await page.selectOption('#detail-pane label:has-text("Priority") select', 'LOW');
    await page.click('#detail-pane form.correction button');
    await page.waitForSelector('#detail-pane .correction >> text=Nothing to correct: a newer message came');
    assert.match((await page.textContent('#notice'))!, /^NOT_FOUND: /);
  });
});
