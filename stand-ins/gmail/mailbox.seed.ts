/**
 * Generates realistic seeded mailboxes (people and robots, threads, replies, attachments,
 * read and unread) for tests, the demo and the bench; deterministic for a given seed.
 */
import { hashString, prng } from '../seeded-random.ts';
import type { MailStore, Mailbox } from './mailbox.model.ts';
import { escapeHtml } from './message.wire.ts';
import type { Address, AttachmentSpec, SeedOptions, StandInMessage } from './mailbox.types.ts';

const PEOPLE: [string, string][] = [
  ['Priya Raman', 'northwind.io'],
  ['Marcus Feld', 'contoso.com'],
  ['Sofia Alvarez', 'fabrikam.net'],
  ['Kenji Watanabe', 'tailspin.dev'],
  ['Amara Okafor', 'wingtip.co'],
  ['Lukas Brandt', 'adatum.de'],
  ["Liam O'Connor", 'litware.ie'],
  ['Chloé Martin', 'proseware.fr'],
  ['Noah Goldberg', 'fourthcoffee.com'],
  ['Mei Chen', 'woodgrove.bank'],
  ['Ravi Patel', 'northwind.io'],
  ['Hannah Schmidt', 'contoso.com'],
];
const ROBOTS: [string, string, string][] = [
  ['GitHub', 'notifications@github.com', 'CATEGORY_UPDATES'],
  ['Acme Billing', 'billing@acme-cloud.com', 'CATEGORY_UPDATES'],
  ['Calendar', 'calendar-notification@google.com', 'CATEGORY_UPDATES'],
  ['The Weekly Byte', 'newsletter@weeklybyte.news', 'CATEGORY_PROMOTIONS'],
  ['Skyway Airlines', 'no-reply@skyway.example', 'CATEGORY_UPDATES'],
  ['Bookshop Deals', 'deals@bookshop.example', 'CATEGORY_PROMOTIONS'],
];
const PERSON_SUBJECTS = [
  'Q{n} budget review',
  'Offsite planning',
  'Design review: onboarding flow',
  'Lunch on Thursday?',
  'Contract renewal for {org}',
  'Candidate feedback',
  'Can you review the proposal?',
  'Quick question about the API migration',
  'Slides for Monday',
  'Intro: {name} <> you',
  'Follow-up from our call',
  'Hiring plan draft',
  'Vendor quotes',
  'Re-org FAQ — please read',
  'Travel to Lisbon',
];
const ROBOT_SUBJECTS = [
  '[repo/{org}] Pull request #{n} merged',
  'Your invoice #{n} is available',
  'Invitation: Sync @ Tue 10:00',
  'This week: {n} things worth reading',
  'Your flight confirmation {code}',
  '20% off this weekend only',
  'Security alert: new sign-in',
  'Reminder: payment due in 3 days',
];
const SENTENCES = [
  "I've attached the latest numbers so you can take a look before the meeting.",
  "Let's aim to wrap this up by end of week.",
  'Could you confirm whether the timeline still works for your team?',
  "We're still waiting on legal, but I don't expect surprises.",
  'The draft is in the shared folder; comments welcome.',
  'Happy to jump on a call if that is easier.',
  'Thanks again for pulling this together so quickly.',
  'One open question is whether we need sign-off from finance & ops.',
  'I moved the review to Thursday at 2pm because of the holiday.',
  'Please reply with any changes by tomorrow morning.',
  'The vendor came back with a revised quote that is 12% lower.',
  'Let me know if anything looks off — numbers are < 5% apart from last quarter.',
  'We shipped the fix last night and error rates are back to normal.',
  "I'm out next week, so Sam will cover for me.",
];
const ATTACHMENTS: [string, string, number, number][] = [
  ['invoice.pdf', 'application/pdf', 20_000, 400_000],
  ['photo.jpg', 'image/jpeg', 80_000, 2_500_000],
  ['notes.txt', 'text/plain', 300, 8_000],
  ['report.xlsx', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', 10_000, 900_000],
  ['slides.pdf', 'application/pdf', 150_000, 3_000_000],
  ['calendar.ics', 'text/calendar', 800, 3_000],
];

interface Plan {
  thread: number;
  at: number;
  sent: boolean;
  from: Address;
  to: Address;
  subject?: string;
  labels: string[];
  read: boolean;
  robot: boolean;
}

/**
 * Fills `mb` with `count` received messages (plus optional SENT replies) in
 * threads, added in chronological order so history and ids look natural.
 * Deterministic for a given seed, email, `now` and count.
 */
export function seedMailbox(mb: Mailbox, store: MailStore, count: number, opts: SeedOptions = {}): StandInMessage[] {
  const rnd = prng((opts.seed ?? store.seed) ^ hashString(mb.email));
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const now = opts.now ?? Date.now();
  const span = (opts.spanDays ?? 21) * 86_400_000;
  const readRatio = opts.readRatio ?? 0.4;
  const owner: Address = { name: mb.ownerName, address: mb.email };
  const fill = (t: string, name: string, org: string) =>
    t
      .replace('{n}', String(int(2, 9999)))
      .replace('{org}', org)
      .replace('{name}', name)
      .replace(
        '{code}',
        Math.floor(rnd() * 36 ** 6)
          .toString(36)
          .toUpperCase(),
      );

  const plans: Plan[] = [];
  let remaining = count;
  for (let thread = 0; remaining > 0; thread++) {
    const robot = rnd() < 0.35;
    const r = rnd();
    const size = robot ? 1 : Math.min(remaining, r < 0.65 ? 1 : r < 0.83 ? 2 : r < 0.95 ? 3 : 4);
    remaining -= size;
    let correspondent: Address;
    let labels: string[];
    let subject: string;
    if (robot) {
      const [name, address, category] = pick(ROBOTS);
      correspondent = { name, address };
      labels = [category];
      subject = fill(pick(ROBOT_SUBJECTS), name, address.split('@')[1]!.split('.')[0]!);
    } else {
      const [name, domain] = pick(PEOPLE);
      correspondent = {
        name,
        address: `${name
          .split(' ')[0]!
          .toLowerCase()
          .normalize('NFD')
          .replace(/[^a-z]/g, '')}@${domain}`,
      };
      labels = rnd() < 0.3 ? ['CATEGORY_PERSONAL', 'IMPORTANT'] : ['CATEGORY_PERSONAL'];
      subject = fill(pick(PERSON_SUBJECTS), pick(PEOPLE)[0], domain.split('.')[0]!);
    }
    if (!(rnd() < (opts.archivedRatio ?? 0))) labels.push('INBOX');
    let at = now - span + rnd() * Math.max(span - 7_200_000, 1);
    for (let i = 0; i < size; i++) {
      if (i > 0) at += 600_000 + rnd() * 1.5 * 86_400_000;
      const last = i === size - 1;
      const reply = !last && opts.sentReplies !== false && rnd() < 0.5;
      const read = reply || (last ? rnd() < readRatio : rnd() < 0.85);
      plans.push({
        thread,
        at,
        sent: false,
        from: correspondent,
        to: owner,
        subject: i === 0 ? subject : undefined,
        labels,
        read,
        robot,
      });
      if (reply) {
        at += 300_000 + rnd() * 6 * 3_600_000;
        plans.push({ thread, at, sent: true, from: owner, to: correspondent, labels: ['SENT'], read: true, robot });
      }
    }
  }
  plans.sort((a, b) => a.at - b.at);
  let prev = -Infinity;
  for (const p of plans) {
    p.at = Math.round(Math.min(p.at, now - 60_000));
    if (p.at <= prev) p.at = prev + 1;
    prev = p.at;
  }

  const threadIds = new Map<number, string>();
  const created: StandInMessage[] = [];
  for (const p of plans) {
    const paragraphs = Array.from({ length: int(1, 3) }, () =>
      Array.from({ length: int(1, 3) }, () => pick(SENTENCES)).join(' '),
    );
    const greeting = `Hi ${p.to.name.split(' ')[0]},`;
    const signoff = p.robot ? '— The team' : `Best,\n${p.from.name.split(' ')[0]}`;
    const text = [greeting, ...paragraphs, signoff].join('\n\n');
    const html = `<div dir="ltr"><p>${escapeHtml(greeting)}</p>${paragraphs.map((x) => `<p>${escapeHtml(x)}</p>`).join('')}<p>${escapeHtml(signoff).replace('\n', '<br>')}</p></div>`;
    const kind = rnd();
    const both = p.robot ? kind < 0.6 : kind < 0.7;
    const htmlOnly = !both && (p.robot || kind > 0.9);
    const attachments: AttachmentSpec[] = [];
    if (!p.sent && rnd() < 0.15) {
      for (let i = int(1, 2); i > 0; i--) {
        const [filename, mimeType, lo, hi] = pick(ATTACHMENTS);
        attachments.push({ filename, mimeType, size: int(lo, hi) });
      }
    }
    const threadId = threadIds.get(p.thread);
    const m = mb.add({
      ...(threadId ? { threadId } : {}),
      ...(p.subject !== undefined ? { subject: p.subject } : {}),
      labelIds: [...p.labels],
      // Newsletters and deals carry the header that tells bulk mail (RFC 2369).
      ...(p.robot && p.labels.includes('CATEGORY_PROMOTIONS')
        ? { headers: [{ name: 'List-Unsubscribe', value: `<mailto:unsubscribe@${p.from.address.split('@')[1]}>` }] }
        : {}),
      read: p.read,
      from: p.from,
      to: p.to,
      ...(!p.robot && rnd() < 0.15
        ? { cc: [{ name: pick(PEOPLE)[0], address: `team@${p.from.address.split('@')[1]}` }] }
        : {}),
      internalDate: p.at,
      bodyText: htmlOnly ? null : text,
      bodyHtml: both || htmlOnly ? html : null,
      attachments,
    });
    if (threadId === undefined) threadIds.set(p.thread, m.id);
    created.push(m);
  }
  return created;
}
