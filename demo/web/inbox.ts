// The thread list: fills by itself after sign-in (polling the sync state) with visible
// progress, shows each thread's sender and date, and announces new mail instead of
// moving the rows under the pointer ("N new messages — show").
import type { ThreadDetail, ThreadList, ThreadSummary } from '../../shared/schemas/mail.ts';
import { $, api, el, report, when } from './dom.ts';

const PAGE = 25;
const POLL_MS = 2_000;
/** The list counts as filling while its total grew within this long. */
const FILLING_MS = 4_000;

export function createInbox(opts: { open: (id: string) => Promise<ThreadDetail | null> }) {
  let offset = 0;
  let shown: ThreadSummary[] = [];
  let pending: ThreadList | null = null;
  let selected: string | null = null;
  let lastSyncedAt: string | null | undefined;
  let total: number | undefined;
  let grewAt = 0;
  /** Once the inbox was in, growth is new mail, not the fill. */
  let filled = false;
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

  /** New list: shown at once when it only appends to what is shown, else announced. */
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
    if (total !== undefined && list.total > total) grewAt = Date.now();
    total = list.total;
    if (announce) offer(list);
    else render(list);
  }

  function progress() {
    const filling = lastSyncedAt === null || (!filled && Date.now() - grewAt < FILLING_MS);
    filled ||= !filling;
    $('fill').hidden = !filling;
    $('sync-state').textContent = filling
      ? `Fetching your inbox… ${total ?? 0} conversation${total === 1 ? '' : 's'} so far`
      : `Up to date · synced ${new Date(lastSyncedAt!).toLocaleTimeString()}`;
    return filling;
  }

  async function poll() {
    try {
      const state = await api.mail.syncState.query();
      const changed = state.lastSyncedAt !== lastSyncedAt;
      lastSyncedAt = state.lastSyncedAt;
      const filling = progress();
      if (changed || filling || total === undefined) await refresh(true);
      progress();
    } catch (err) {
      report(err);
    }
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
      void refresh(false);
    }
    $('list-scroll').scrollTop = 0;
  };
  $('prev').onclick = () => { offset = Math.max(0, offset - PAGE); void refresh(false).catch(report); };
  $('next').onclick = () => { offset += PAGE; void refresh(false).catch(report); };

  return {
    /** Starts polling; `expectFill` after a sign-in shows progress from the first moment. */
    start(expectFill: boolean) {
      if (expectFill) grewAt = Date.now();
      void poll();
      setInterval(() => void poll(), POLL_MS);
    },
    /** After a manual sync: show what it brought. */
    refresh: () => refresh(true).then(progress),
  };
}
