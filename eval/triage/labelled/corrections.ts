/**
 * The owner's corrections, shown to the model as examples in the second pass, as the
 * service shows an account's corrections of other threads (newest first). Each teaches a
 * preference a model would not guess from the prompt alone, and the labelled set holds other
 * messages of the same kinds (tag `preference`), so the pass with examples can show whether
 * the model follows them. None of these messages is in the labelled set. The prompt carries
 * at most LIMITS.examples (5) of them.
 */
import type { LabelledMessage } from './types.ts';

export const CORRECTIONS: LabelledMessage[] = [
  {
    id: 'corr-ci-failed',
    fromName: 'GitHub',
    fromAddress: 'notifications@github.example',
    subject: '[northwind/importer] Run failed: nightly - main (e02b7c4)',
    bodyText:
      'The workflow run "nightly" failed on main.\nJob "import" exited with code 2.\n\nYou are receiving this because you are subscribed to this repository.',
    expected: { priority: 'IMPORTANT', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'automated', 'ci'],
  },
  {
    id: 'corr-invite',
    fromName: 'Marcus Webb (via Calendar)',
    fromAddress: 'calendar@northwind.example',
    subject: 'Invitation: 1:1 Marcus / Sam @ Wed 11 Mar 15:00 - 15:30',
    bodyText:
      'Marcus Webb has invited you to 1:1 Marcus / Sam.\nWednesday 11 March, 15:00 - 15:30\nGoing? Yes - Maybe - No',
    expected: { priority: 'NORMAL', replyStatus: 'NEEDS_REPLY' },
    tags: ['en', 'automated', 'calendar'],
  },
  {
    id: 'corr-recruiter',
    fromName: 'Nadia from Hireloop',
    fromAddress: 'nadia@hireloop.example',
    subject: 'Head of Engineering at a Series B fintech',
    bodyText:
      'Hi Sam, I am working on a Head of Engineering search for a Series B fintech in Berlin. Your background looks like a great match. Could we set up a call this week?',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'recruiter'],
  },
  {
    id: 'corr-cold-sales',
    fromName: 'Grace at Pipewise',
    fromAddress: 'grace@pipewise.example',
    subject: 'Can I get 10 minutes on your calendar?',
    bodyText:
      'Hi Sam, companies like Northwind cut their cloud bill by 25% with Pipewise. Can I get 10 minutes on your calendar next week to show you how?\n\nGrace',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'sales'],
  },
  {
    id: 'corr-support-ack',
    fromName: 'Cloudly Support',
    fromAddress: 'support@cloudly.example',
    subject: '[Case 77120] Your request has been received',
    bodyText:
      'We have received your request about a billing discrepancy. Case 77120 is assigned to our team and we will reply within 2 business days.',
    expected: { priority: 'LOW', replyStatus: 'WAITING_ON_OTHERS' },
    tags: ['en', 'automated', 'support'],
  },
];
