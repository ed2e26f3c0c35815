// The thread list, kept current by the account's live events (the `mail.events` subscription,
// Server-Sent Events): re-read when an event says threads changed, with a progress line from
// the `sync` event while the first load runs ("1,240 of ~3,000 messages"), and new mail
// announced the moment its event arrives ("N new messages — show") instead of moving the
// rows under the pointer. Nothing is polled.
import { isApiError } from '../../shared/client.ts';
import type { MailEvent, SyncEvent } from '../../shared/schemas/events.ts';
import type { ThreadDetail, ThreadList, ThreadSummary } from '../../shared/schemas/mail.ts';
import { $, API_BASE, api, el, notice, reconnectNotice, report, when } from './dom.ts';

const PAGE = 25;
/** Waits before subscribing again after the server ended the stream, or after a failure (growing, up to the last). */
const RESUBSCRIBE_MS = [500, 2_000, 5_000, 15_000, 30_000];

export function createInbox(opts: { open: (id: string) => Promise<ThreadDetail | null> }) {
  let offset = 0;
  let shown: ThreadSummary[] = [];
  let pending: ThreadList | null = null;
  let selected: string | null = null;
  const rows = new Map<string, HTMLLIElement>();
  /** A thread as of its latest message: a new message makes it another entry. */
  const key = (t: ThreadSummary) => `${t.id}@${t.lastMessageAt}`;

  function row(t: ThreadSummary): HTMLLIElement {
    const li = rows.get(t.id) ?? el('li');
    rows.set(t.id, li);
    li.classList.toggle('unread', t.isUnread);
    li.classList.toggle('selected', t.id === selected);
    const b = el('button', undefined, 'row');
    b.type = 'button';
    const from = el('span', t.fromName || t.fromAddress, 'from');
    b.append(from, when(t.lastMessageAt), el('span', t.subject || '(no subject)', 'subject'), el('span', t.snippet, 'snippet'));
    b.onclick = () => void select(t.id);
    li.replaceChildren(b);
    return li;
  }

  function render(list: ThreadList) {
    shown = list.threads;
    pending = null;
    $('new-mail').hidden = true;
    $('threads').replaceChildren(...list.threads.map(row));
    $('page').textContent = `${list.total ? offset + 1 : 0}–${offset + list.threads.length} of ${list.total}`;
    ($('prev') as HTMLButtonElement).disabled = offset === 0;
    ($('next') as HTMLButtonElement).disabled = !list.hasMore;
  }

  /** New list: shown at once when it only appends to what is shown (the first load), else announced. */
  function offer(list: ThreadList) {
    const same = shown.every((t, i) => list.threads[i] && key(list.threads[i]) === key(t));
    if (shown.length === 0 || same) return render(list);
    const before = new Set(shown.map(key));
    const fresh = list.threads.filter((t) => !before.has(key(t))).length;
    pending = list;
    const banner = $('new-mail');
    banner.textContent = fresh ? `${fresh} new message${fresh === 1 ? '' : 's'} — show` : 'The list changed — show';
    banner.hidden = false;
  }

  async function refresh(announce: boolean) {
    const list = await api.mail.threads.query({ limit: PAGE, offset });
    if (announce) offer(list);
    else render(list);
  }

  /** Re-reads the list after an event; events that come while a read runs cost one more read, not one each. */
  let reading = false;
  let again = false;
  async function reread() {
    if (reading) {
      again = true;
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        await refresh(true).catch(report);
      } while (again);
    } finally {
      reading = false;
    }
  }

  const count = (n: number) => n.toLocaleString();

  /** The status line and the progress bar, from where the account stands. */
  function showSync(e: SyncEvent) {
    const fill = $('fill') as HTMLProgressElement;
    const p = e.progress;
    fill.hidden = e.state !== 'backfilling';
    if (p?.estimatedTotal) {
      fill.max = p.estimatedTotal;
      fill.value = Math.min(p.stored, p.estimatedTotal);
    } else fill.removeAttribute('value'); // indeterminate
    const synced = e.lastSyncedAt ? ` · synced ${new Date(e.lastSyncedAt).toLocaleTimeString()}` : '';
    const text: Record<SyncEvent['state'], () => string> = {
      backfilling: () =>
        p?.estimatedTotal
          ? `Fetching your inbox… ${count(p.stored)} of ~${count(p.estimatedTotal)} messages`
          : `Fetching your inbox…${p?.stored ? ` ${count(p.stored)} messages so far` : ''}`,
      current: () => `Up to date${synced}`,
      catching_up: () => `Fetching new mail…${synced}`,
      needs_reconnect: () => 'The mail connection needs renewing.',
    };
    $('sync-state').textContent = text[e.state]();
    if (e.state === 'needs_reconnect') reconnectNotice();
  }

  function onEvent(e: MailEvent) {
    if (e.type === 'sync') showSync(e);
    else void reread(); // `threads` (which ones changed) or `reset` (re-read the list): this client shows one page either way
  }

  /**
   * Subscribes to the account's events; when the server ends the stream (its longest life,
   * a restart) subscribes again from the last event seen, so nothing is missed. Without a
   * session any more, says so and stops.
   */
  function listen(lastEventId: string | null = null, failures = 0) {
    let last = lastEventId;
    let got = false;
    const resubscribe = () => setTimeout(() => listen(last, got ? 0 : failures + 1), RESUBSCRIBE_MS[Math.min(failures, RESUBSCRIBE_MS.length - 1)]);
    api.mail.events.subscribe(last ? { lastEventId: last } : undefined, {
      onData: ({ id, data }) => {
        // A new stream's first event: the server listens from before it, so a list read now misses
        // nothing (one read before the stream was open could miss what committed in between).
        if (!got && !lastEventId) void reread();
        last = id;
        got = true;
        onEvent(data);
      },
      onError: (err) => {
        if (isApiError(err, 'AUTH_REQUIRED')) return notice('You are signed out.', { text: 'Sign in', href: `${API_BASE}/auth/provider` });
        report(err);
        resubscribe();
      },
      onComplete: resubscribe,
    });
  }

  async function select(id: string) {
    selected = id;
    for (const [tid, li] of rows) li.classList.toggle('selected', tid === id);
    await opts.open(id);
  }

  $('new-mail').onclick = () => {
    if (pending && offset === 0) render(pending);
    else {
      offset = 0;
      void refresh(false).catch(report);
    }
    $('list-scroll').scrollTop = 0;
  };
  $('prev').onclick = () => { offset = Math.max(0, offset - PAGE); void refresh(false).catch(report); };
  $('next').onclick = () => { offset += PAGE; void refresh(false).catch(report); };

  return {
    /** Follows the account's events from now on, and shows the list once their stream is open. */
    start() {
      listen();
    },
    /** After a manual sync: show what it brought. */
    refresh: () => reread(),
  };
}
