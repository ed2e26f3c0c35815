/**
 * The mail that "arrives live" in the demo: a small rotation of plausible messages (a
 * question, an outage, a newsletter, an invitation, a review request), so that triage and
 * drafts have something different to say about each.
 */
import type { NewMessage } from '../stand-ins/gmail.stand-in.ts';

const LIVE: NewMessage[] = [
  {
    from: { name: 'Priya Raman', address: 'priya@northwind.io' },
    subject: 'Quick question about the invoice',
    bodyText:
      'Hi Alice,\n\nInvoice #4471 lists 12 seats but we only have 10. Could you check which number is right before Friday?\n\nThanks,\nPriya',
  },
  {
    from: { name: 'Ops Pager', address: 'oncall@contoso.com' },
    subject: 'URGENT: production outage in eu-west',
    bodyText:
      'Alice,\n\nThe checkout API is down since 09:40 and customers cannot pay. We need your go-ahead to roll back the release immediately. Please reply ASAP.\n\nMarcus',
  },
  {
    from: { name: 'The Weekly Byte', address: 'newsletter@weeklybyte.news' },
    subject: 'Weekly digest — 7 things worth reading',
    bodyText:
      'This week: faster builds, a new SQL planner and a story about tabs versus spaces.\n\nYou get this newsletter because you subscribed. Unsubscribe anytime.',
  },
  {
    from: { name: 'Kenji Watanabe', address: 'kenji@tailspin.dev' },
    subject: 'Lunch on Friday?',
    bodyText: "Hey Alice,\n\nI'm in town on Friday. Would you like to grab lunch near the office around noon?\n\nKenji",
  },
  {
    from: { name: 'Sofia Alvarez', address: 'sofia@fabrikam.net' },
    subject: 'Can you review my draft?',
    bodyText:
      'Hi Alice,\n\nThe proposal draft is in the shared folder. Can you review the pricing section and send comments by Thursday? The deadline for the client is Monday.\n\nBest,\nSofia',
  },
];

/** The `n`-th live message (rotating), stamped with the time it arrived. */
export function liveMessage(n: number, at = new Date()): NewMessage {
  const m = LIVE[n % LIVE.length]!;
  return { ...m, bodyText: `${m.bodyText}\n\n(Arrived live at ${at.toLocaleTimeString('en-GB')}.)` };
}
