// The thread list, kept current by the account's live events (the `mail.events` subscription,
// Server-Sent Events): re-read when an event says threads changed, with a progress line from
// the `sync` event while the first load runs ("1,240 of ~3,000 messages"), and new mail
// announced the moment its event arrives ("N new messages — show") instead of moving the
// rows under the pointer. Nothing is polled. A new analysis or a correction comes as the same
// `threads` event, so a row's triage badges change in place; the filters above the list
// (All, Needs reply, Urgent, Unread) choose what the list, its count and its pages show.
import { isApiError } from '../../shared/client.ts';
import type { MailEvent, SyncEvent } from '../../shared/schemas/events.ts';
import type { ThreadDetail, ThreadList, ThreadSummary } from '../../shared/schemas/mail.ts';
import { $, API_BASE, api, el, notice, reconnectNotice, report, when } from './dom.ts';
import { badges, emptyHint, FILTERS, isFilterId, listInput, type FilterId, type ShownAnalysis } from './triage.ts';

const PAGE = 25;
/** Waits before subscribing again after the server ended the stream, or after a failure (growing, up to the last). */
const RESUBSCRIBE_MS = [500, 2_000, 5_000, 15_000, 30_000];

export function createInbox(opts: {
  open: (id: string, analysis: ShownAnalysis | null) => Promise<ThreadDetail | null>;
}) {
  let offset = 0;
  let filter: FilterId = 'all';
  /** Which filter and page the list shows: an answer read for another one is dropped. */
  let view = 0;
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
    const line = el('span', undefined, 'line');
    for (const badge of badges(t.analysis)) {
      const mark = el('span', badge.text, badge.cls);
      mark.title = badge.title;
      line.append(mark);
    }
    line.append(el('span', t.subject || '(no subject)', 'subject'));
    b.append(from, when(t.lastMessageAt), line, el('span', t.snippet, 'snippet'));
    b.onclick = () => void select(t.id);
    li.replaceChildren(b);
    return li;
  }

  function render(list: ThreadList) {
    shown = list.threads;
    pending = null;
    $('new-mail').hidden = true;
    const empty = () => {
      const li = el('li', FILTERS[filter].empty, 'empty');
      const hint = emptyHint(filter);
      if (hint) li.append(el('span', hint, 'muted'));
      return [li];
    };
    $('threads').replaceChildren(...(list.threads.length ? list.threads.map(row) : empty()));
    $('page').textContent = `${list.total ? offset + 1 : 0}–${offset + list.threads.length} of ${list.total}`;
    ($('prev') as HTMLButtonElement).disabled = offset === 0;
    ($('next') as HTMLButtonElement).disabled = !list.hasMore;
  }

  /** New list: shown at once when it only appends to what is shown (the first load), else announced. */
  function offer(list: ThreadList) {
    const same = shown.every((t, i) => list.threads[i] && key(list.threads[i]) === key(t));
    if (shown.length === 0 || same) return render(list);
    const before = new Set(shown.map(key));
    // New mail sorts above every shown row; a thread that newly matches a filter (just analysed) does not.
    const newest = shown.reduce((n, t) => (t.lastMessageAt > n ? t.lastMessageAt : n), '');
    const fresh = list.threads.filter((t) => !before.has(key(t)) && t.lastMessageAt > newest).length;
    pending = list;
    const banner = $('new-mail');
    banner.textContent = fresh ? `${fresh} new message${fresh === 1 ? '' : 's'} — show` : 'The list changed — show';
    banner.hidden = false;
  }

  async function refresh(announce: boolean) {
    const asked = view;
    const list = await api.mail.threads.query(listInput(filter, offset, PAGE));
    if (asked !== view) return; // the user moved to another filter or page meanwhile: its own read shows it
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
    const resubscribe = () =>
      setTimeout(
        () => listen(last, got ? 0 : failures + 1),
        RESUBSCRIBE_MS[Math.min(failures, RESUBSCRIBE_MS.length - 1)],
      );
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
        if (isApiError(err, 'AUTH_REQUIRED'))
          return notice('You are signed out.', { text: 'Sign in', href: `${API_BASE}/auth/provider` });
        report(err);
        resubscribe();
      },
      onComplete: resubscribe,
    });
  }

  async function select(id: string) {
    selected = id;
    for (const [tid, li] of rows) li.classList.toggle('selected', tid === id);
    await opts.open(id, shown.find((t) => t.id === id)?.analysis ?? null);
  }

  /** Shows another page or filter now (not announced: the user asked for it). */
  function go(to: { offset: number; filter?: FilterId }) {
    offset = to.offset;
    filter = to.filter ?? filter;
    view++;
    pending = null; // an announced list of the view left behind
    $('new-mail').hidden = true;
    void refresh(false).catch(report);
  }

  $('new-mail').onclick = () => {
    if (pending && offset === 0) render(pending);
    else go({ offset: 0 });
    $('list-scroll').scrollTop = 0;
  };
  $('prev').onclick = () => go({ offset: Math.max(0, offset - PAGE) });
  $('next').onclick = () => go({ offset: offset + PAGE });
  $('filters').hidden = false;
  const filterButtons = Array.from($('filters').querySelectorAll<HTMLButtonElement>('button[data-filter]'));
  for (const b of filterButtons) {
    b.onclick = () => {
      const chosen = b.dataset.filter;
      if (!isFilterId(chosen)) return;
      for (const other of filterButtons) other.setAttribute('aria-pressed', String(other === b));
      go({ offset: 0, filter: chosen });
      $('list-scroll').scrollTop = 0;
    };
  }

  return {
    /** Follows the account's events from now on, and shows the list once their stream is open. */
    start() {
      listen();
    },
    /** After a manual sync: show what it brought. */
    refresh: () => reread(),
  };
}
