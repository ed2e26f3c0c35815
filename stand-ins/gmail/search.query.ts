/**
 * The subset of Gmail's `q` search syntax the stand-in understands, compiled to a predicate
 * over stored messages (messages.list?q=...).
 */
import { htmlToText } from './message.wire.ts';
import type { Address, StandInMessage } from './mailbox.types.ts';

const UNIT_MS: Record<string, number> = { h: 3_600_000, d: 86_400_000, m: 30 * 86_400_000, y: 365 * 86_400_000 };

function parseDateTerm(v: string): number | null {
  if (/^\d{9,}$/.test(v)) return Number(v) * 1000;
  const m = /^(\d{4})[/-](\d{1,2})[/-](\d{1,2})$/.exec(v);
  return m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : null;
}

/**
 * Supported: in:inbox|sent|spam|trash|anywhere, is:unread|read|starred|important, label:X,
 * newer_than:/older_than:<n>[hdmy], after:/before:<yyyy/mm/dd|epoch s>, has:attachment,
 * from:, to:, subject:, bare words (case-insensitive substring of subject/from/body); a term
 * after `-` is negated (`-in:inbox`: everything outside the inbox). Unknown `key:value` terms are ignored. Returns the predicate and whether spam/trash is searched.
 */
export function compileQuery(
  q: string,
  now = Date.now(),
): { match: (m: StandInMessage) => boolean; anywhere: boolean } {
  const preds: ((m: StandInMessage) => boolean)[] = [];
  let anywhere = false;
  const has = (l: string) => (m: StandInMessage) => m.labelIds.includes(l);
  const addrText = (as: Address[]) => as.map((a) => `${a.name} ${a.address}`.toLowerCase()).join(' ');
  for (const quoted of q.match(/(?:[^\s"]+|"[^"]*")+/g) ?? []) {
    const negated = quoted.length > 1 && quoted.startsWith('-');
    const raw = negated ? quoted.slice(1) : quoted;
    const first = preds.length;
    const term = raw.replace(/"/g, '');
    const idx = term.indexOf(':');
    const key = idx > 0 ? term.slice(0, idx).toLowerCase() : '';
    const val = (idx > 0 ? term.slice(idx + 1) : term).toLowerCase();
    if (key === 'in' || key === 'label') {
      if (val === 'anywhere') anywhere = true;
      else {
        const label =
          key === 'in' || /^(inbox|sent|spam|trash|unread|starred|important)$/.test(val)
            ? val.toUpperCase()
            : term.slice(idx + 1);
        if (label === 'SPAM' || label === 'TRASH') anywhere = true;
        preds.push(has(label));
      }
    } else if (key === 'is') {
      if (val === 'read') preds.push((m) => !m.labelIds.includes('UNREAD'));
      else preds.push(has(val.toUpperCase()));
    } else if (key === 'newer_than' || key === 'older_than') {
      const m = /^(\d+)([hdmy])$/.exec(val);
      if (!m) continue;
      const edge = now - Number(m[1]) * UNIT_MS[m[2]!]!;
      preds.push(key === 'newer_than' ? (x) => x.internalDate > edge : (x) => x.internalDate < edge);
    } else if (key === 'after' || key === 'before') {
      const t = parseDateTerm(val);
      if (t === null) continue;
      preds.push(key === 'after' ? (x) => x.internalDate >= t : (x) => x.internalDate < t);
    } else if (key === 'has') {
      if (val === 'attachment') preds.push((m) => m.attachments.length > 0);
    } else if (key === 'from') {
      preds.push((m) => addrText([m.from]).includes(val));
    } else if (key === 'to') {
      preds.push((m) => addrText([...m.to, ...m.cc]).includes(val));
    } else if (key === 'subject') {
      preds.push((m) => m.subject.toLowerCase().includes(val));
    } else if (key === '') {
      preds.push((m) =>
        `${m.subject} ${addrText([m.from])} ${m.bodyText ?? ''} ${m.bodyHtml ? htmlToText(m.bodyHtml) : ''}`
          .toLowerCase()
          .includes(val),
      );
    }
    if (negated && preds.length > first) {
      const term = preds.splice(first);
      preds.push((m) => !term.every((p) => p(m)));
    }
  }
  return { match: (m) => preds.every((p) => p(m)), anywhere };
}
