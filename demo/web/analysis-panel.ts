// The thread view's analysis: what Analyze answered (or, before that, what the list knows of
// the thread), and the user's correction of its priority and reply status, saved with
// mail.correctAnalysis (PUT /api/mail/threads/{threadId}/analysis). The model read the mail,
// so everything it wrote is set as text, never as markup.
import { isApiError } from '../../shared/client.ts';
import { api, busy, el, explain, labelledSelect, report } from './dom.ts';
import {
  choices,
  correction,
  fromAnalysis,
  PRIORITY_LABELS,
  REPLY_LABELS,
  summaryLine,
  type Priority,
  type ReplyStatus,
  type ShownAnalysis,
} from './triage.ts';

export interface AnalysisPanel {
  /** The panel's element: empty until there is an analysis to show. */
  node: HTMLElement;
  /** Shows an analysis (Analyze's answer, or a saved correction), keeping the reason already shown when it has none. */
  show(a: ShownAnalysis): void;
}

export function createAnalysisPanel(threadId: string, initial: ShownAnalysis | null): AnalysisPanel {
  const node = el('div');
  node.setAttribute('aria-live', 'polite');
  let shown: ShownAnalysis | null = null;

  const summary = el('p');
  const reason = el('p');
  const suggested = el('p', undefined, 'muted');

  const form = el('form', undefined, 'correction');
  form.setAttribute('aria-label', 'Correct the analysis');
  const priority = labelledSelect('Priority', 'priority', choices(PRIORITY_LABELS));
  const reply = labelledSelect('Reply status', 'replyStatus', choices(REPLY_LABELS));
  const save = el('button', 'Save');
  save.type = 'submit';
  const status = el('span', undefined, 'muted');
  status.setAttribute('role', 'status');
  form.append(priority.label, reply.label, save, status);

  const card = el('div', undefined, 'card analysis');
  card.append(summary, reason, suggested, form);

  const chosen = () => ({
    priority: priority.select.value as Priority,
    replyStatus: reply.select.value as ReplyStatus,
  });
  /** Save is offered only for a change: the API would otherwise mark the model's values as the user's. */
  const offerSave = () => {
    save.disabled = !shown || correction(shown, chosen()) === null;
  };
  priority.select.onchange = reply.select.onchange = () => {
    status.textContent = '';
    offerSave();
  };

  function show(a: ShownAnalysis) {
    shown = { ...a, reason: a.reason ?? shown?.reason, suggestedAction: a.suggestedAction ?? shown?.suggestedAction };
    summary.textContent = summaryLine(shown);
    // The reason explains the model's values: once the user's replace them, it is said to be the model's.
    reason.textContent = shown.reason && shown.corrected ? `The model said: ${shown.reason}` : (shown.reason ?? '');
    reason.hidden = !shown.reason;
    suggested.textContent = shown.suggestedAction ? `Suggested: ${shown.suggestedAction}` : '';
    suggested.hidden = !shown.suggestedAction;
    priority.select.value = shown.priority;
    reply.select.value = shown.replyStatus;
    offerSave();
    if (card.parentNode !== node) node.replaceChildren(card);
  }

  form.onsubmit = (e) => {
    e.preventDefault();
    const change = shown && correction(shown, chosen());
    if (!change) return;
    void busy(save, 'Saving…', async () => {
      status.textContent = '';
      try {
        show(fromAnalysis(await api.mail.correctAnalysis.mutate({ threadId, ...change })));
        status.textContent = 'Saved.';
      } catch (err) {
        // A correction is of the latest message's analysis: a newer message has none yet (or the thread is gone).
        status.textContent = isApiError(err, 'NOT_FOUND')
          ? 'Nothing to correct: a newer message came (press Analyze) or the conversation is gone.'
          : explain(err);
        report(err);
      }
    }).then(offerSave); // busy() re-enables the button; it stays offered only for a change
  };

  if (initial) show(initial);
  return { node, show };
}
