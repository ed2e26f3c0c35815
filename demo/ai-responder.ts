/**
 * Plausible answers for the demo's AI stand-in. It reads only the email data of the
 * request, never the instructions: the user message carries the email as JSON between
 * <email> tags (triage) or the thread between <thread> tags and the reply options between
 * <options> tags (draft), with `<` written as \u003c inside, which JSON.parse undoes. The
 * triage is a keyword reading of that message; the draft is composed in ai-drafts.ts. The
 * service still validates the answers as it would a real model's output.
 */
import { hashString } from '../stand-ins/seeded-random.ts';
import { composeDraft, type DraftOptionsData, type ThreadData } from './ai-drafts.ts';

export interface EmailData {
  from: string;
  sentAt?: string;
  subject: string;
  body: string;
}

type Body = { messages?: { role: string; content: unknown }[]; input?: unknown };

/** The text of the request's user turns (chat messages or a Responses API input). */
function userText(body: Body): string {
  const turns =
    body.messages ??
    (Array.isArray(body.input)
      ? (body.input as { role?: string; content?: unknown }[])
      : [{ role: 'user', content: body.input }]);
  const text = (c: unknown): string =>
    typeof c === 'string'
      ? c
      : Array.isArray(c)
        ? c.map((p) => (typeof p === 'string' ? p : String((p as { text?: unknown })?.text ?? ''))).join('\n')
        : '';
  return turns
    .filter((t) => t?.role === 'user')
    .map((t) => text(t.content))
    .join('\n');
}

/** The JSON document between `<tag>` and `</tag>`, or undefined. */
export function taggedJson(text: string, tag: string): unknown {
  const m = new RegExp(`<${tag}>\\s*([\\s\\S]*?)\\s*</${tag}>`).exec(text);
  if (!m) return undefined;
  try {
    return JSON.parse(m[1]!);
  } catch {
    return undefined;
  }
}

const str = (v: unknown) => (typeof v === 'string' ? v : '');
export function asEmail(v: unknown): EmailData {
  const o = (v && typeof v === 'object' ? v : {}) as Record<string, unknown>;
  return { from: str(o.from), sentAt: str(o.sentAt) || undefined, subject: str(o.subject), body: str(o.body) };
}

export const OWNER = 'the mailbox owner';
const BULK =
  /\bunsubscribe\b|\bnewsletter\b|\bdigest\b|\bpromotions?\b|% off\b|\bdeals?\b|\bthis week:|\bno-?reply\b|\bview (it )?in (your )?browser\b/i;
const AUTOMATED =
  /^\[[^\]]+\]|\binvoice #|\binvitation:|\bconfirmation\b|\breminder:|\bsecurity alert\b|\bnotification\b|— the team\b|\bdo not reply\b/i;
const URGENT =
  /\burgent\b|\basap\b|\bimmediately\b|\boutage\b|\bis down\b|\bdown since\b|\bdeadline\b|\bby (today|tonight|eod|end of (the )?day)\b|\bcritical\b|\bemergency\b/i;
const QUESTION =
  /\?|\bcould you\b|\bcan you\b|\bwould you\b|\bplease (confirm|review|reply|send|check|let me know)\b|\blet me know\b|\bany (thoughts|feedback)\b/i;
const SOON =
  /\breview\b|\bconfirm\b|\bapprov|\bsign-?off\b|\bcontract\b|\bbudget\b|\binvoice\b|\bby (tomorrow|monday|tuesday|wednesday|thursday|friday|end of (the )?week)\b|\bbefore (the meeting|friday|monday)\b/i;
const WAITING = /\bwaiting (on|for)\b|\bi'?ll (get back|send|follow up)\b|\bwill (get back|follow up)\b/i;

/** How many of `patterns` match `text`. */
const hits = (text: string, ...patterns: RegExp[]) => patterns.filter((p) => p.test(text)).length;

export interface Triage {
  priority: 'URGENT' | 'IMPORTANT' | 'NORMAL' | 'LOW';
  replyStatus: 'NEEDS_REPLY' | 'WAITING_ON_OTHERS' | 'NO_REPLY_NEEDED';
  confidence: number;
  reason: string;
  suggestedAction: string;
}

/** A keyword triage of one message; confidence grows with the evidence and varies a little per message. */
export function triage(email: EmailData, threadSubject = ''): Triage {
  const subject = `${email.subject} ${threadSubject}`;
  const all = `${subject}\n${email.body}`;
  const jitter = ((hashString(all) % 9) - 4) / 100; // -0.04 .. +0.04, stable for a message
  const answer = (t: Omit<Triage, 'confidence'>, base: number, evidence: number): Triage => ({
    ...t,
    confidence: Math.round(Math.min(0.97, Math.max(0.35, base + 0.05 * Math.min(evidence, 3) + jitter)) * 100) / 100,
  });

  if (email.from === OWNER) {
    return answer(
      {
        priority: 'NORMAL',
        replyStatus: 'WAITING_ON_OTHERS',
        reason: 'The latest message in this thread was sent by you; the next step is the other side’s.',
        suggestedAction: 'Wait for their answer and follow up in a few days if none arrives.',
      },
      0.8,
      1,
    );
  }
  if (BULK.test(all)) {
    const evidence = hits(
      all,
      /\bunsubscribe\b/i,
      /\bnewsletter\b|\bdigest\b/i,
      /\bweekly\b|\bmonthly\b|\bthis week\b/i,
      /\bsubscribed\b/i,
    );
    return answer(
      {
        priority: 'LOW',
        replyStatus: 'NO_REPLY_NEEDED',
        reason: 'A bulk mailing (newsletter, digest or promotion); nobody waits for an answer.',
        suggestedAction: 'Skim it later or archive it.',
      },
      0.74,
      evidence,
    );
  }
  const automated = AUTOMATED.test(all);
  if (URGENT.test(all)) {
    const urgent = hits(
      all,
      /\burgent\b|\basap\b|\bimmediately\b/i,
      /\boutage\b|\bdown\b/i,
      /\bdeadline\b|\btoday\b/i,
      /^\s*urgent\b/i,
    );
    if (automated) {
      return answer(
        {
          priority: 'IMPORTANT',
          replyStatus: 'NO_REPLY_NEEDED',
          reason: 'An automated notice about something time-sensitive.',
          suggestedAction: 'Check the notice today; no reply is expected.',
        },
        0.62,
        urgent,
      );
    }
    return answer(
      {
        priority: 'URGENT',
        replyStatus: 'NEEDS_REPLY',
        reason:
          'The sender reports something time-critical (an outage, a deadline or an urgent request) and needs an answer quickly.',
        suggestedAction: 'Reply within the hour, or hand it to whoever is on call.',
      },
      0.7,
      urgent + hits(all, QUESTION),
    );
  }
  if (automated) {
    const security = /\bsecurity alert\b|\bnew sign-?in\b/i.test(all);
    return answer(
      {
        priority: security ? 'IMPORTANT' : 'LOW',
        replyStatus: 'NO_REPLY_NEEDED',
        reason: security
          ? 'An automated security notice about your account.'
          : 'An automated notification; nobody waits for an answer.',
        suggestedAction: security ? 'Confirm the sign-in was yours.' : 'File it; no action needed.',
      },
      0.66,
      1,
    );
  }
  if (QUESTION.test(all)) {
    const soon = hits(all, SOON);
    return answer(
      {
        priority: soon ? 'IMPORTANT' : 'NORMAL',
        replyStatus: 'NEEDS_REPLY',
        reason: soon
          ? 'The sender asks you for something with a date or a decision attached.'
          : 'The sender asks you a question.',
        suggestedAction: soon
          ? 'Answer before the date mentioned, or say when you will.'
          : 'Answer the question when you have a moment.',
      },
      0.62,
      hits(all, QUESTION, /\?/) + soon,
    );
  }
  if (WAITING.test(all)) {
    return answer(
      {
        priority: 'NORMAL',
        replyStatus: 'WAITING_ON_OTHERS',
        reason: 'The sender will come back with more; the thread waits on them or a third party.',
        suggestedAction: 'Nothing to do until they follow up.',
      },
      0.55,
      1,
    );
  }
  return answer(
    {
      priority: 'NORMAL',
      replyStatus: 'NO_REPLY_NEEDED',
      reason: 'An informational message with no question or request in it.',
      suggestedAction: 'Read it; no reply seems expected.',
    },
    0.5,
    0,
  );
}

export function demoResponder(body: Body, ctx: { schemaName?: string }) {
  const text = userText(body);
  if (ctx.schemaName && /draft|reply/i.test(ctx.schemaName)) {
    return composeDraft(
      taggedJson(text, 'thread') as ThreadData | undefined,
      taggedJson(text, 'options') as DraftOptionsData | undefined,
    );
  }
  const data = (taggedJson(text, 'email') ?? {}) as { threadSubject?: unknown; message?: unknown };
  return triage(asEmail(data.message), str(data.threadSubject));
}
