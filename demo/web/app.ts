// The demo's single-page web client, built on the typed client package: sign in, sync,
// watch live updates arrive, open threads, analyze and draft. Plain DOM, no framework.
import { createClient, isApiError } from '../../shared/client.ts';

declare const __API_BASE__: string;
const api = createClient({ baseUrl: __API_BASE__ });
const $ = <T extends HTMLElement>(id: string) => document.getElementById(id) as T;
const PAGE = 25;
let offset = 0;
let selected: string | null = null;

function el<K extends keyof HTMLElementTagNameMap>(tag: K, text?: string, cls?: string): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (cls) node.className = cls;
  return node;
}

function notice(text: string) {
  $('notice').textContent = text;
}

function explain(err: unknown): string {
  return isApiError(err) ? `${err.code}: ${err.message}` : 'The service could not be reached.';
}

async function renderAccount() {
  const box = $('account');
  box.textContent = '';
  const session = await api.auth.session.query();
  if (!session.authenticated) {
    const link = el('a', 'Sign in');
    link.href = `${__API_BASE__}/auth/provider`;
    box.append(link);
    return false;
  }
  const out = el('button', 'Sign out');
  out.onclick = async () => { await api.auth.logout.mutate(); location.href = '/'; };
  box.append(el('span', `${session.email} `), out);
  ($('sync') as HTMLButtonElement).disabled = false;
  return true;
}

async function renderThreads() {
  try {
    const list = await api.mail.threads.query({ limit: PAGE, offset });
    const ul = $('threads');
    ul.textContent = '';
    for (const t of list.threads) {
      const li = el('li');
      li.classList.toggle('unread', t.isUnread);
      li.classList.toggle('selected', t.id === selected);
      li.append(el('span', t.subject || '(no subject)', 'subject'), el('span', t.snippet, 'snippet'));
      li.onclick = () => void openThread(t.id);
      ul.append(li);
    }
    $('page').textContent = `${list.total ? offset + 1 : 0}–${offset + list.threads.length} of ${list.total}`;
    ($('prev') as HTMLButtonElement).disabled = offset === 0;
    ($('next') as HTMLButtonElement).disabled = !list.hasMore;
    const state = await api.mail.syncState.query();
    $('sync-state').textContent = state.lastSyncedAt ? `synced ${new Date(state.lastSyncedAt).toLocaleTimeString()}` : 'never synced';
  } catch (err) {
    notice(explain(err));
  }
}

/**
 * The sanitised HTML body in a sandboxed frame (no scripts, no same origin). Remote images
 * arrive unloadable (`data-remote-src`/`data-remote-srcset`, see the README); "Show images"
 * restores them for this message only, on the user's request.
 */
function htmlBody(html: string): HTMLElement[] {
  const frame = el('iframe', undefined, 'mail-html');
  frame.setAttribute('sandbox', '');
  frame.setAttribute('referrerpolicy', 'no-referrer');
  frame.srcdoc = html;
  if (!/data-remote-src/.test(html)) return [frame];
  const show = el('button', 'Show images');
  show.onclick = () => {
    const doc = new DOMParser().parseFromString(html, 'text/html');
    doc.querySelectorAll('img').forEach((img) => {
      const src = img.getAttribute('data-remote-src');
      const srcset = img.getAttribute('data-remote-srcset');
      if (src) img.setAttribute('src', src);
      if (srcset) img.setAttribute('srcset', srcset);
    });
    frame.srcdoc = doc.body.innerHTML;
    show.remove();
  };
  return [show, frame];
}

async function openThread(id: string) {
  selected = id;
  const pane = $('detail-pane');
  pane.textContent = 'Loading…';
  try {
    const thread = await api.mail.thread.query({ threadId: id });
    pane.textContent = '';
    pane.append(el('h2', thread.subject || '(no subject)'));
    for (const m of thread.messages) {
      const box = el('div', undefined, 'message');
      box.append(el('strong', `${m.fromName || m.fromAddress} `), el('span', new Date(m.sentAt).toLocaleString(), 'muted'));
      if (m.bodyHtml) box.append(...htmlBody(m.bodyHtml));
      else box.append(el('pre', m.bodyText || m.snippet));
      if (m.attachments.length) box.append(el('p', `Attachments: ${m.attachments.map((a) => a.filename).join(', ')}`, 'muted'));
      pane.append(box);
    }
    const analyze = el('button', 'Analyze');
    const draft = el('button', 'Draft a reply');
    const tone = el('select');
    for (const v of ['default', 'professional', 'friendly']) tone.append(new Option(v, v));
    const length = el('select');
    for (const v of ['short', 'medium', 'long']) length.append(new Option(v, v));
    const out = el('div');
    analyze.onclick = async () => {
      out.textContent = 'Analyzing…';
      try {
        const a = await api.mail.analyze.mutate({ threadId: id });
        out.textContent = '';
        const card = el('div', undefined, 'card');
        card.append(el('p', `Priority ${a.priority} · ${a.replyStatus} · confidence ${Math.round(a.confidence * 100)}%`), el('p', a.reason), el('p', `Suggested: ${a.suggestedAction}`, 'muted'));
        out.append(card);
      } catch (err) { out.textContent = explain(err); }
    };
    draft.onclick = async () => {
      out.textContent = 'Drafting…';
      try {
        const d = await api.mail.draft.mutate({ threadId: id, tone: tone.value as 'default', length: length.value as 'short' });
        out.textContent = '';
        const text = el('textarea');
        text.value = d.draft.body;
        out.append(el('p', `${d.draft.subject} (${d.draft.language})`), text);
      } catch (err) { out.textContent = explain(err); }
    };
    pane.append(el('div', undefined, 'toolbar'));
    pane.lastElementChild!.append(analyze, tone, length, draft);
    pane.append(out);
    void renderThreads();
  } catch (err) {
    pane.textContent = explain(err);
  }
}

$('sync').onclick = async () => {
  notice('Syncing…');
  try {
    const r = await api.mail.sync.mutate();
    notice(`Synced ${r.messagesSynced} messages${r.hasMore ? ' — more remain, press Sync again' : ''}.`);
    await renderThreads();
  } catch (err) {
    // The inbox is being synced in the background (the sign-in's backfill, a new message): not an error for the user.
    if (isApiError(err) && err.code === 'RATE_LIMITED') notice('Syncing in the background — the list fills by itself.');
    else notice(explain(err));
  }
};
$('prev').onclick = () => { offset = Math.max(0, offset - PAGE); void renderThreads(); };
$('next').onclick = () => { offset += PAGE; void renderThreads(); };

const params = new URLSearchParams(location.search);
if (params.get('error')) notice('Sign-in failed; please try again.');
if (await renderAccount()) {
  if (params.get('connected')) notice('Connected. Press Sync to fetch your inbox; new mail then arrives by itself.');
  await renderThreads();
  setInterval(() => void renderThreads(), 2_000);
}
