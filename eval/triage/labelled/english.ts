/**
 * English correspondence from people: customers, colleagues, friends and the owner's own
 * sent mail, across every priority and reply status. The owner (Sam) runs engineering at
 * Northwind, a small software company.
 */
import { OWNER, type LabelledMessage } from './types.ts';

const owner = { fromName: OWNER.name, fromAddress: OWNER.address };

export const ENGLISH: LabelledMessage[] = [
  {
    id: 'en-outage-1',
    fromName: 'Priya Shah',
    fromAddress: 'priya@acme-retail.example',
    subject: 'Checkout has been failing for 40 minutes',
    bodyText:
      'Hi Sam,\n\nsince 08:05 every checkout on our store returns a 502 and we are losing orders. Who is looking at it, and when do you expect a fix? Please reply or call me right away.\n\nPriya',
    expected: { priority: 'URGENT', replyStatus: 'NEEDS_REPLY' },
    tags: ['en', 'work', 'outage'],
  },
  {
    id: 'en-contract-today-1',
    fromName: 'Marcus Webb',
    fromAddress: 'marcus@northwind.example',
    subject: 'Signed contract needed by 3pm today',
    bodyText:
      'Sam, legal needs your signature on the Halcyon renewal before 3pm today or the discount lapses. Can you confirm you will get it to them in time?\n\nMarcus',
    expected: { priority: 'URGENT', replyStatus: 'NEEDS_REPLY' },
    tags: ['en', 'work', 'deadline'],
  },
  {
    id: 'en-leaked-key-1',
    fromName: 'Ana Kowalski',
    fromAddress: 'ana@northwind.example',
    subject: 'Leaked access key: need your OK to rotate now',
    bodyText:
      'Our cloud access key was pushed to a public repository 20 minutes ago. I want to rotate it immediately, which will break the nightly import until we redeploy. Reply yes and I will do it now.\n\nAna',
    expected: { priority: 'URGENT', replyStatus: 'NEEDS_REPLY' },
    tags: ['en', 'work', 'security'],
  },
  {
    id: 'en-owner-outage-1',
    ...owner,
    subject: 'Re: Checkout has been failing since 08:05',
    bodyText:
      'Priya, we found the cause (an expired certificate on the payment gateway) and Jonas is deploying the fix now. I will confirm as soon as checkouts succeed again; please tell me if you still see errors after 10:00.\n\nSam',
    expected: { priority: 'URGENT', replyStatus: 'WAITING_ON_OTHERS' },
    tags: ['en', 'work', 'owner-sent', 'outage'],
  },
  {
    id: 'en-incident-update-1',
    fromName: 'Jonas Berg',
    fromAddress: 'jonas@northwind.example',
    subject: 'Re: Database failover in progress',
    bodyText:
      'Restoring the primary from the 07:50 snapshot now, ETA 25 minutes. The site stays read-only until then. I will send the next update at 09:30; nothing needed from you before that.\n\nJonas',
    expected: { priority: 'URGENT', replyStatus: 'WAITING_ON_OTHERS' },
    tags: ['en', 'work', 'outage'],
  },
  {
    id: 'en-review-friday-1',
    fromName: 'Marcus Webb',
    fromAddress: 'marcus@northwind.example',
    subject: 'Q2 hiring plan: your review by Friday',
    bodyText:
      'Could you go through the attached hiring plan and send me your comments by Friday? I present it to the board on Monday and want your numbers in it.\n\nThanks, Marcus',
    expected: { priority: 'IMPORTANT', replyStatus: 'NEEDS_REPLY' },
    tags: ['en', 'work'],
  },
  {
    id: 'en-client-quote-1',
    fromName: 'Helen Carter',
    fromAddress: 'helen@brightlane.example',
    subject: 'Quote for the mobile app, phase 2',
    bodyText:
      'Hello Sam,\n\nwe would like to start phase 2 in April. Could you send us a quote and a rough timeline by next Wednesday, so that I can get the budget approved?\n\nBest regards,\nHelen Carter\nBrightlane',
    expected: { priority: 'IMPORTANT', replyStatus: 'NEEDS_REPLY' },
    tags: ['en', 'work', 'client'],
  },
  {
    id: 'en-accountant-1',
    fromName: 'Derek Mills',
    fromAddress: 'derek@millsaccounting.example',
    subject: 'Documents for your 2025 tax return',
    bodyText:
      'Hi Sam, to file on time I still need your pension statement and the receipts for the home office. Can you send them by the 24th? Otherwise we will have to ask for an extension.\n\nDerek Mills\nMills & Co Accounting',
    expected: { priority: 'IMPORTANT', replyStatus: 'NEEDS_REPLY' },
    tags: ['en', 'personal', 'finance'],
  },
  {
    id: 'en-owner-proposal-1',
    ...owner,
    subject: 'Phase 2 proposal and timeline',
    bodyText:
      'Helen, attached are the quote and the timeline for phase 2. Could you confirm by the 20th whether you want to go ahead? We need that to book the team for April.\n\nBest,\nSam',
    expected: { priority: 'IMPORTANT', replyStatus: 'WAITING_ON_OTHERS' },
    tags: ['en', 'work', 'owner-sent', 'client'],
  },
  {
    id: 'en-legal-pending-1',
    fromName: 'Olivia Grant',
    fromAddress: 'olivia@halcyon.example',
    subject: 'Re: Revised data processing terms',
    bodyText:
      'Thank you for your comments. Our legal team is reviewing the liability clause and will come back to you with a revised draft by Thursday.\n\nKind regards,\nOlivia Grant, Halcyon Legal',
    expected: { priority: 'IMPORTANT', replyStatus: 'WAITING_ON_OTHERS' },
    tags: ['en', 'work', 'client'],
  },
  {
    id: 'en-launch-moved-1',
    fromName: 'Ruth Okafor',
    fromAddress: 'ruth@northwind.example',
    subject: 'Launch moves to 12 May',
    bodyText:
      "Team, after yesterday's review we are moving the public launch from 14 April to 12 May. No action needed today: plan your sprints against the new date. Details at Thursday's all-hands.\n\nRuth",
    expected: { priority: 'IMPORTANT', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'work', 'announcement'],
  },
  {
    id: 'en-lunch-1',
    fromName: 'Tom Reyes',
    fromAddress: 'tom@northwind.example',
    subject: 'Lunch on Thursday?',
    bodyText:
      'Are you free for lunch on Thursday? I would like to hear how the Halcyon project is going. The new ramen place, maybe?\n\nTom',
    expected: { priority: 'NORMAL', replyStatus: 'NEEDS_REPLY' },
    tags: ['en', 'work'],
  },
  {
    id: 'en-dentist-1',
    fromName: 'Jess Moreau',
    fromAddress: 'jess.moreau@mail.example',
    subject: 'Dentist recommendation?',
    bodyText:
      'Hey! A while ago you mentioned a good dentist near your office. What was their name? Mine is retiring next month.\n\nJess x',
    expected: { priority: 'NORMAL', replyStatus: 'NEEDS_REPLY' },
    tags: ['en', 'personal'],
  },
  {
    id: 'en-intro-1',
    fromName: 'Daniel Kim',
    fromAddress: 'daniel@kestrel.example',
    subject: 'Intro: Sam <> Daniel (data pipelines)',
    bodyText:
      'Hi Sam, Laura suggested we talk: we are building something close to your import service and would love to compare notes. Would you have 30 minutes in the next couple of weeks?\n\nDaniel',
    expected: { priority: 'NORMAL', replyStatus: 'NEEDS_REPLY' },
    tags: ['en', 'work'],
  },
  {
    id: 'en-owner-draft-1',
    ...owner,
    subject: 'Draft of the migration blog post',
    bodyText:
      'Hi Tom, here is the draft of the post about our database migration. No hurry: let me know what you think when you have had a look.\n\nSam',
    expected: { priority: 'NORMAL', replyStatus: 'WAITING_ON_OTHERS' },
    tags: ['en', 'work', 'owner-sent'],
  },
  {
    id: 'en-check-back-1',
    fromName: 'Laura Chen',
    fromAddress: 'laura@northwind.example',
    subject: 'Re: Office move dates',
    bodyText:
      'I will check with facilities which week works for the move and get back to you early next week.\n\nLaura',
    expected: { priority: 'NORMAL', replyStatus: 'WAITING_ON_OTHERS' },
    tags: ['en', 'work'],
  },
  {
    id: 'en-thanks-1',
    fromName: 'Tom Reyes',
    fromAddress: 'tom@northwind.example',
    subject: 'Re: The staging fix',
    bodyText: 'That worked, thanks! Staging is green again.\n\nTom',
    expected: { priority: 'NORMAL', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'work'],
  },
  {
    id: 'en-meeting-notes-1',
    fromName: 'Laura Chen',
    fromAddress: 'laura@northwind.example',
    subject: "Notes from Monday's planning",
    bodyText:
      'Sharing the notes from Monday for the record: we agreed to keep the API freeze until the 20th and to move the retro to Friday. Nothing new in them if you were there.\n\nLaura',
    expected: { priority: 'NORMAL', replyStatus: 'NO_REPLY_NEEDED' },
    tags: ['en', 'work'],
  },
  {
    id: 'en-poll-1',
    fromName: 'Tom Reyes',
    fromAddress: 'tom@northwind.example',
    subject: 'Pizza or tacos for Friday?',
    bodyText: "Quick poll for Friday's team lunch: pizza or tacos? Just reply with one word, whenever.\n\nTom",
    expected: { priority: 'LOW', replyStatus: 'NEEDS_REPLY' },
    tags: ['en', 'work'],
  },
  {
    id: 'en-old-friend-1',
    fromName: 'Ben Hollis',
    fromAddress: 'ben.hollis@mail.example',
    subject: 'Long time!',
    bodyText:
      'Saw your talk is online, great stuff. No rush at all, but I would love to hear what you have been up to when you get a minute.\n\nBen',
    expected: { priority: 'LOW', replyStatus: 'NEEDS_REPLY' },
    tags: ['en', 'personal'],
  },
  {
    id: 'en-owner-recipe-1',
    ...owner,
    subject: 'That lentil soup',
    bodyText:
      'Jess, no rush at all, but could you send me the recipe for the soup you made on Saturday when you come across it?\n\nSam',
    expected: { priority: 'LOW', replyStatus: 'WAITING_ON_OTHERS' },
    tags: ['en', 'personal', 'owner-sent'],
  },
];
