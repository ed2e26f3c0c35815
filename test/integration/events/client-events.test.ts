/**
 * The client package's `mail.events` subscription: typed events from createClient, over
 * Server-Sent Events with the session cookie. Node has no EventSource without a flag, so the
 * test passes a small fetch-based one (what a Node consumer would pass as a polyfill).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createClient } from '../../../shared/client.ts';
import type { MailEvent } from '../../../shared/schemas/events.ts';
import { ALICE, startMailApp } from '../mail/mail-app.ts';
import { readSse } from './sse-reader.ts';

/** Just enough of EventSource for tRPC's httpSubscriptionLink, sending `headers` (the cookie). */
function fetchEventSource(headers: Record<string, string>): typeof EventSource {
  class FetchEventSource extends EventTarget {
    static readonly CONNECTING = 0;
    static readonly OPEN = 1;
    static readonly CLOSED = 2;
    readonly CLOSED = 2;
    readyState = 0;
    private readonly abort = new AbortController();
    constructor(url: string) {
      super();
      void fetch(url, { headers: { Accept: 'text/event-stream', ...headers }, signal: this.abort.signal }).then(
        (res) => {
          this.readyState = 1;
          readSse(res, this.abort, (f) => {
            if (f.data !== undefined && this.readyState !== 2)
              this.dispatchEvent(new MessageEvent(f.event ?? 'message', { data: f.data, lastEventId: f.id ?? '' }));
          });
        },
        () => undefined,
      );
    }
    close() {
      this.readyState = 2;
      this.abort.abort();
    }
  }
  return FetchEventSource as unknown as typeof EventSource;
}

describe('client package: mail.events', () => {
  it('subscribes with the session and gets typed events with ids', async (t) => {
    const mail = await startMailApp(t);
    const cookie = { Cookie: mail.browser.cookieHeader() };
    const api = createClient({ baseUrl: mail.app.url, headers: cookie, EventSource: fetchEventSource(cookie) });
    const got: { id: string; data: MailEvent }[] = [];
    let wake = () => {};
    const sub = api.mail.events.subscribe(undefined, {
      onData: (e) => {
        got.push(e);
        wake();
      },
    });
    t.after(() => sub.unsubscribe());
    const until = async (ok: () => boolean) => {
      while (!ok()) await new Promise<void>((r) => (wake = r));
    };
    await until(() => got.length > 0);
    assert.equal(got[0]!.data.type, 'sync');
    assert.match(got[0]!.id, /^\d+$/);
    mail.gmail.seed(ALICE, 2, { sentReplies: false });
    await mail.drain();
    await until(() => got.some((e) => e.data.type === 'sync' && e.data.state === 'current'));
    assert.ok(got.some((e) => e.data.type === 'threads' && e.data.threadIds.length > 0));
  });
});
