// The demo's single-page web client, built on the typed client package: sign in, watch the
// inbox fill and live mail arrive, filter it by triage, open threads, analyze (and correct
// the analysis) and draft, turn triage of new mail on or off. Plain DOM, no framework.
import { isApiError } from '../../shared/client.ts';
import { $, API_BASE, api, busy, el, notice, report } from './dom.ts';
import { createInbox } from './inbox.ts';
import { renderThread } from './thread-view.ts';
import { showTriageToggle } from './triage-toggle.ts';
import type { ShownAnalysis } from './triage.ts';

async function renderAccount(): Promise<string | null> {
  const box = $('account');
  box.textContent = '';
  const session = await api.auth.session.query();
  if (!session.authenticated) {
    const link = el('a', 'Sign in', 'button');
    link.href = `${API_BASE}/auth/provider`;
    box.append(link);
    $('sync-state').textContent = 'Sign in to see your inbox.';
    return null;
  }
  const out = el('button', 'Sign out');
  out.type = 'button';
  out.onclick = () =>
    void busy(out, 'Signing out…', async () => {
      await api.auth.logout.mutate();
      location.href = '/';
    });
  box.append(el('span', session.email ?? '', 'email'), out);
  ($('sync') as HTMLButtonElement).disabled = false;
  return session.email ?? '';
}

async function openThread(id: string, analysis: ShownAnalysis | null) {
  const pane = $('detail-pane');
  pane.replaceChildren(el('p', 'Loading…', 'muted'));
  pane.setAttribute('aria-busy', 'true');
  document.body.classList.add('reading');
  try {
    const thread = await api.mail.thread.query({ threadId: id });
    renderThread(thread, () => document.body.classList.remove('reading'), analysis);
    return thread;
  } catch (err) {
    pane.replaceChildren(
      el(
        'p',
        isApiError(err, 'NOT_FOUND')
          ? 'This conversation is no longer in the inbox.'
          : 'The conversation could not be loaded.',
      ),
    );
    report(err);
    return null;
  } finally {
    pane.removeAttribute('aria-busy');
  }
}

const params = new URLSearchParams(location.search);
if (params.get('error')) notice('Sign-in failed; please try again.');
const email = await renderAccount().catch((err: unknown) => (report(err), null));
if (email !== null) {
  const inbox = createInbox({ open: openThread });
  void showTriageToggle().catch(report);
  const sync = $('sync') as HTMLButtonElement;
  sync.onclick = () =>
    void busy(sync, 'Syncing…', async () => {
      try {
        const r = await api.mail.sync.mutate();
        notice(`Synced ${r.messagesSynced} messages${r.hasMore ? '; the rest follows in the background' : ''}.`);
        await inbox.refresh(); // its events would bring it too, a moment later
      } catch (err) {
        // The inbox is being synced in the background (the sign-in's backfill, a new message): not an error for the user.
        if (isApiError(err, 'RATE_LIMITED')) notice('Syncing in the background — the list fills by itself.');
        else report(err);
      }
    });
  if (params.get('connected')) {
    notice('Connected. Your inbox is being fetched; new mail then arrives by itself.');
    history.replaceState(null, '', '/');
  }
  inbox.start();
}
