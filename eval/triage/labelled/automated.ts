/**
 * English mail no person wrote or that nobody needs to answer: alerts, billing, CI, calendar,
 * receipts, newsletters, marketing, cold outreach and phishing. Automated is not the same as
 * LOW: an outage alert is URGENT, a failed deploy on main IMPORTANT (this owner's own
 * preference, which the corrections teach).
 */
import type { LabelledMessage } from './types.ts';

export const AUTOMATED: LabelledMessage[] = [
  {
    id: 'en-alert-pager-1',
    fromName: 'PagerDuty',
    fromAddress: 'no-reply@pagerduty.example',
    subject: '[Triggered] CRITICAL: api-prod error rate 38%',
    bodyText:
      'Incident #4821 triggered at 08:27 UTC.\nService: api-prod\n5xx error rate 38% over 5 minutes (threshold 5%).\nYou are on call. Acknowledge in the app.',
    expected: { priority: 'URGENT', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'automated', 'alert', 'outage'],
  },
  {
    id: 'en-domain-expiry-1',
    fromName: 'Registrar Billing',
    fromAddress: 'billing@registrar.example',
    subject: 'Renewal failed: northwind.example expires today',
    bodyText:
      'The automatic renewal of northwind.example failed: the card on file was declined. The domain expires at 23:59 UTC today, after which your website and email stop working. Sign in to your account and update the payment method to renew.',
    expected: { priority: 'URGENT', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'automated', 'billing'],
  },
  {
    id: 'en-ci-failed-1',
    fromName: 'GitHub',
    fromAddress: 'notifications@github.example',
    subject: '[northwind/api] Run failed: deploy - main (a1c9e3f)',
    bodyText:
      'The workflow run "deploy" failed on main.\nJob "migrate" exited with code 1.\nThe last successful deploy was 2 days ago.\n\nYou are receiving this because you are subscribed to this repository.',
    expected: { priority: 'IMPORTANT', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'automated', 'ci', 'preference'],
  },
  {
    id: 'en-invoice-due-1',
    fromName: 'HostingCo Billing',
    fromAddress: 'billing@hostingco.example',
    subject: 'Invoice INV-2026-0311: $4,210.00 due 20 March',
    bodyText:
      'Your invoice for February is available.\nAmount due: $4,210.00\nDue date: 20 March 2026\nPayment: bank transfer\n\nThis is an automated message.',
    expected: { priority: 'IMPORTANT', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'automated', 'billing'],
  },
  {
    id: 'en-support-ack-1',
    fromName: 'Acme Tools Support',
    fromAddress: 'support@acme-tools.example',
    subject: '[Ticket #48213] We received your request',
    bodyText:
      'Thanks for contacting us about exporting reports as CSV. Ticket #48213 is in the queue and an agent will reply within 3 business days. Reply to this email to add details.',
    expected: { priority: 'LOW', replyStatus: 'WAITING_ON_OTHERS' },
    tags: ['en', 'automated', 'support', 'preference'],
  },
  {
    id: 'en-invite-1',
    fromName: 'Marcus Webb (via Calendar)',
    fromAddress: 'calendar@northwind.example',
    subject: 'Invitation: Halcyon kickoff @ Mon 16 Mar 10:00 - 11:00',
    bodyText:
      'Marcus Webb has invited you to Halcyon kickoff.\nMonday 16 March, 10:00 - 11:00, Room 2\nGoing? Yes - Maybe - No',
    expected: { priority: 'NORMAL', replyStatus: 'NEEDS_REPLY' },
    tags: ['en', 'automated', 'calendar', 'preference'],
  },
  {
    id: 'en-calendar-reminder-1',
    fromName: 'Calendar',
    fromAddress: 'calendar-notification@calendar.example',
    subject: 'Reminder: Standup @ Tue 10 Mar 09:30',
    bodyText:
      'This is a reminder for the following event.\nStandup, Tuesday 10 March 09:30 - 09:45\nYou are receiving this reminder because you set one.',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'automated', 'calendar'],
  },
  {
    id: 'en-calendar-accepted-1',
    fromName: 'Laura Chen (via Calendar)',
    fromAddress: 'calendar@northwind.example',
    subject: 'Accepted: Q2 planning @ Thu 12 Mar 14:00',
    bodyText: 'Laura Chen has accepted this invitation.\nQ2 planning, Thursday 12 March 14:00 - 15:30',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'automated', 'calendar'],
  },
  {
    id: 'en-ci-passed-1',
    fromName: 'GitHub',
    fromAddress: 'notifications@github.example',
    subject: '[northwind/web] Run succeeded: test - feature/login (77de01b)',
    bodyText: 'All jobs of the workflow run "test" succeeded on feature/login.\n412 tests passed in 3m 12s.',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'automated', 'ci'],
  },
  {
    id: 'en-receipt-ride-1',
    fromName: 'Rideshare',
    fromAddress: 'receipts@ride.example',
    subject: 'Your Tuesday morning trip receipt',
    bodyText:
      'Thanks for riding with us.\nTotal: EUR 14.20 (card ending 4417)\nPickup 07:52, drop-off 08:11.\nRate your driver in the app.',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'automated', 'receipt'],
  },
  {
    id: 'en-shipped-1',
    fromName: 'Corner Bookshop',
    fromAddress: 'orders@cornerbookshop.example',
    subject: 'Order #10442 has shipped',
    bodyText:
      'Good news: your order #10442 (2 items) is on its way and should arrive on Thursday. Track it at https://cornerbookshop.example/track/10442',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'automated', 'receipt'],
  },
  {
    id: 'en-profile-views-1',
    fromName: 'ProNet',
    fromAddress: 'notifications@pronet.example',
    subject: 'Marcus Webb and 3 others viewed your profile',
    bodyText:
      'Your profile is getting noticed. See who viewed your profile this week and grow your network.\n\nUnsubscribe from these emails.',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'automated', 'notification'],
  },
  {
    id: 'en-newsletter-1',
    fromName: 'The Pragmatic Weekly',
    fromAddress: 'newsletter@pragweekly.example',
    subject: 'This week: Postgres 19, type stripping, and a bug hunt',
    bodyText:
      'In this issue:\n1. What is new in Postgres 19\n2. Running TypeScript without a build step\n3. A three-day bug hunt in a connection pool\n\nView in browser | Unsubscribe',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'newsletter'],
  },
  {
    id: 'en-newsletter-2',
    fromName: 'Kestrel Product Updates',
    fromAddress: 'updates@kestrel.example',
    subject: 'What is new in Kestrel: March',
    bodyText:
      'This month: dark mode, faster exports and a new API for webhooks. Read the full changelog on our blog.\n\nYou are receiving this because you signed up for product updates. Unsubscribe.',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'newsletter'],
  },
  {
    id: 'en-marketing-1',
    fromName: 'Shoe Outlet',
    fromAddress: 'deals@shoeoutlet.example',
    subject: '48 hours only: 40% off running shoes',
    bodyText:
      'Spring is here! Take 40% off every running shoe until Thursday midnight. Use code SPRING40 at checkout.\n\nUnsubscribe | Privacy',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'newsletter', 'marketing'],
  },
  {
    id: 'en-recruiter-1',
    fromName: 'Chloe from TalentBridge',
    fromAddress: 'chloe@talentbridge.example',
    subject: 'Exciting Staff Engineer role: open to a chat?',
    bodyText:
      'Hi Sam, I came across your profile and think you would be a great fit for a Staff Engineer role at a fast-growing scale-up. Would you be open to a quick 15-minute call this week?\n\nChloe',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'recruiter', 'preference'],
  },
  {
    id: 'en-cold-sales-1',
    fromName: 'Victor at LeadRocket',
    fromAddress: 'victor@leadrocket.example',
    subject: "Quick question about Northwind's sales pipeline",
    bodyText:
      'Hi Sam, are you the right person to talk to about lead generation at Northwind? Teams like yours book 30% more demos with LeadRocket. Do you have 15 minutes on Thursday?\n\nVictor',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'sales', 'preference'],
  },
  {
    id: 'en-phishing-mailbox-1',
    fromName: 'Mail Administrator',
    fromAddress: 'admin@examp1e-mail.example',
    subject: 'Your mailbox is 98% full: verify now',
    bodyText:
      'Dear user,\n\nyour mailbox has exceeded its storage quota. Verify your password within 24 hours at https://examp1e-mail.example/verify or your account will be deleted.\n\nMail Administrator',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'phishing'],
  },
  {
    id: 'en-phishing-ceo-1',
    fromName: 'Ruth Okafor',
    fromAddress: 'ruth.okafor.ceo@freemail.example',
    subject: 'Urgent favour: are you at your desk?',
    bodyText:
      'Sam, I am in a meeting and cannot talk. I need you to buy five $200 gift cards for a client today and send me the codes. I will reimburse you. Keep this between us for now.\n\nRuth\nSent from my phone',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'phishing'],
  },
  {
    id: 'en-phishing-parcel-1',
    fromName: 'ParcelNow Delivery',
    fromAddress: 'delivery@parcelnow-track.example',
    subject: 'Your parcel is on hold: customs fee unpaid',
    bodyText:
      'We tried to deliver your parcel today but a customs fee of EUR 1.99 is unpaid. Pay within 24 hours at https://parcelnow-track.example/pay or the parcel is returned to the sender.',
    expected: { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'phishing'],
  },
];
