// The detail pane: a thread's messages, "Show images" for remote images, Analyze (with the
// correction of its answer, analysis-panel.ts) and Draft a reply.
import { $, api, busy, el, explain, labelledSelect, report, when } from './dom.ts';
import type { ThreadDetail } from '../../shared/schemas/mail.ts';
import { createAnalysisPanel } from './analysis-panel.ts';
import { restorableSrc, restorableSrcset } from './remote-images.ts';
import { fromAnalysis, type ShownAnalysis } from './triage.ts';

/**
 * The sanitised HTML body in a sandboxed frame (no scripts, no same origin). Remote images
 * arrive unloadable (`data-remote-src`/`data-remote-srcset`, see the README); "Show images"
 * restores them for this message only, on the user's request.
 */
function htmlBody(html: string): HTMLElement[] {
  const frame = el('iframe', undefined, 'mail-html');
  frame.setAttribute('sandbox', '');
  frame.setAttribute('referrerpolicy', 'no-referrer');
  frame.title = 'Message body';
  frame.srcdoc = html;
  if (!/data-remote-src/.test(html)) return [frame];
  const show = el('button', 'Show images');
  show.type = 'button';
  show.onclick = () => {
    const doc = new DOMParser().parseFromString(html, 'text/html');
    doc.querySelectorAll('img').forEach((img) => {
      // Only absolute http(s) addresses: the attribute came from a sender, whatever the server checked.
      const src = restorableSrc(img.getAttribute('data-remote-src'));
      const srcset = restorableSrcset(img.getAttribute('data-remote-srcset'));
      if (src) img.setAttribute('src', src);
      if (srcset) img.setAttribute('srcset', srcset);
    });
    frame.srcdoc = doc.body.innerHTML;
    show.remove();
  };
  return [show, frame];
}

function button(text: string): HTMLButtonElement {
  const b = el('button', text);
  b.type = 'button';
  return b;
}

function actions(threadId: string, known: ShownAnalysis | null): HTMLElement[] {
  const analyze = button('Analyze');
  const draft = button('Draft a reply');
  const tone = labelledSelect('Tone', 'tone', [
    ['default', 'Default'],
    ['professional', 'Professional'],
    ['friendly', 'Friendly'],
  ]);
  const length = labelledSelect('Length', 'length', [
    ['short', 'Short'],
    ['medium', 'Medium'],
    ['long', 'Long'],
  ]);
  length.select.value = 'medium';
  const language = labelledSelect('Language', 'language', [
    ['', 'As the message'],
    ['English', 'English'],
    ['German', 'German'],
    ['French', 'French'],
    ['Spanish', 'Spanish'],
  ]);
  // The analysis keeps its own place: a draft below it leaves the correction at hand.
  const panel = createAnalysisPanel(threadId, known);
  const out = el('div');
  out.setAttribute('aria-live', 'polite');
  analyze.onclick = () =>
    void busy(analyze, 'Analyzing…', async () => {
      try {
        panel.show(fromAnalysis(await api.mail.analyze.mutate({ threadId })));
      } catch (err) {
        out.textContent = explain(err);
        report(err);
      }
    });
  draft.onclick = () =>
    void busy(draft, 'Drafting…', async () => {
      try {
        const d = await api.mail.draft.mutate({
          threadId,
          tone: tone.select.value as 'default',
          length: length.select.value as 'short',
          ...(language.select.value ? { language: language.select.value } : {}),
        });
        const label = el('label', 'Reply draft (editable)');
        label.htmlFor = `draft-${threadId}`;
        const text = el('textarea');
        text.id = `draft-${threadId}`;
        text.value = d.draft.body;
        const card = el('div', undefined, 'card draft');
        card.append(el('p', `${d.draft.subject} · ${d.draft.language}`, 'muted'), label, text);
        out.replaceChildren(card);
      } catch (err) {
        out.textContent = explain(err);
        report(err);
      }
    });
  const bar = el('div', undefined, 'actions');
  bar.append(analyze, tone.label, length.label, language.label, draft);
  return [bar, panel.node, out];
}

/** Renders `thread` into the detail pane; `onBack` returns to the list (on a phone); `known`: the list's analysis of it. */
export function renderThread(thread: ThreadDetail, onBack: () => void, known: ShownAnalysis | null = null) {
  const pane = $('detail-pane');
  const back = button('← Inbox');
  back.className = 'back';
  back.onclick = onBack;
  const parts: HTMLElement[] = [back, el('h2', thread.subject || '(no subject)')];
  for (const m of thread.messages) {
    const box = el('article', undefined, 'message');
    const head = el('div', undefined, 'message-head');
    head.append(el('strong', m.fromName || m.fromAddress), el('span', m.fromAddress, 'muted'), when(m.sentAt));
    box.append(head);
    if (m.bodyHtml) box.append(...htmlBody(m.bodyHtml));
    else box.append(el('pre', m.bodyText || m.snippet));
    if (m.attachments.length)
      box.append(el('p', `Attachments: ${m.attachments.map((a) => a.filename).join(', ')}`, 'muted'));
    parts.push(box);
  }
  parts.push(...actions(thread.id, known));
  pane.replaceChildren(...parts);
  pane.scrollTop = 0;
}
