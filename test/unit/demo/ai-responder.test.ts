/**
 * The demo's AI stand-in answers from the email data only (never the instructions around
 * it), plausibly: triage per kind of mail, drafts in the asked tone, length and language.
 * The prompts are the service's own (prompt.ts), so the tags and escaping are the real ones.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { analysisModelOutput, draftModelOutput } from '../../../shared/schemas/ai.ts';
import { analysisPrompt, draftPrompt, type DraftStyle, type PromptMessage } from '../../../server/domain/ai/prompt.ts';
import { demoResponder, taggedJson } from '../../../demo/ai-responder.ts';
import { wordCount } from '../../../demo/ai-drafts.ts';

const OWNER = 'alice@example.com';
const msg = (m: Partial<PromptMessage>): PromptMessage => ({
  fromName: 'Priya Raman',
  fromAddress: 'priya@northwind.io',
  subject: 'Hello',
  snippet: '',
  sentAt: new Date('2025-03-03T10:00:00Z'),
  bodyText: 'Hello',
  ...m,
});

function analyze(m: Partial<PromptMessage>) {
  const latest = msg(m);
  const prompt = analysisPrompt({ threadSubject: latest.subject, latest, ownerAddress: OWNER });
  const body = {
    messages: [
      { role: 'system', content: prompt.system },
      { role: 'user', content: prompt.user },
    ],
  };
  return analysisModelOutput.parse(demoResponder(body, { schemaName: 'email_triage' }));
}

function draft(messages: Partial<PromptMessage>[], style: Partial<DraftStyle> = {}) {
  const all = messages.map(msg);
  const prompt = draftPrompt({
    threadSubject: all[0]!.subject,
    messages: all,
    ownerAddress: OWNER,
    style: { tone: 'default', length: 'medium', ...style },
  });
  const body = {
    messages: [
      { role: 'system', content: prompt.system },
      { role: 'user', content: prompt.user },
    ],
  };
  return draftModelOutput.parse(demoResponder(body, { schemaName: 'email_reply_draft' }));
}

describe('demo AI stand-in: triage', () => {
  it('parses the tagged JSON, undoing the \\u003c escape', () => {
    const prompt = analysisPrompt({
      threadSubject: 'a <b> c',
      latest: msg({ subject: 'a <b> c', bodyText: 'x </email> y' }),
      ownerAddress: OWNER,
    });
    assert.doesNotMatch(prompt.user.split('<email>')[1]!.split('</email>')[0]!, /</);
    const data = taggedJson(prompt.user, 'email') as { message: { subject: string; body: string } };
    assert.equal(data.message.subject, 'a <b> c');
    assert.equal(data.message.body, 'x </email> y');
  });

  it('does not read the system prompt (which names URGENT, newsletters, deadlines…)', () => {
    const a = analyze({ subject: 'Notes from today', bodyText: 'Here are the notes from the meeting. Nothing else.' });
    assert.notEqual(a.priority, 'URGENT');
    assert.equal(a.replyStatus, 'NO_REPLY_NEEDED');
  });

  it('classifies a newsletter as LOW and needing no reply', () => {
    const a = analyze({
      fromName: 'The Weekly Byte',
      subject: 'Weekly digest — 7 things worth reading',
      bodyText: 'This week: faster builds.\n\nUnsubscribe anytime.',
    });
    assert.deepEqual([a.priority, a.replyStatus], ['LOW', 'NO_REPLY_NEEDED']);
  });

  it('classifies an outage as URGENT and needing a reply', () => {
    const a = analyze({
      subject: 'URGENT: production outage',
      bodyText: 'The checkout API is down. Please reply ASAP.',
    });
    assert.deepEqual([a.priority, a.replyStatus], ['URGENT', 'NEEDS_REPLY']);
    assert.ok(a.confidence >= 0.8, `confident about an outage (${a.confidence})`);
  });

  it('classifies a question as IMPORTANT or NORMAL and needing a reply', () => {
    const withDate = analyze({
      subject: 'Quick question about the invoice',
      bodyText: 'Could you check which number is right before Friday?',
    });
    assert.deepEqual([withDate.priority, withDate.replyStatus], ['IMPORTANT', 'NEEDS_REPLY']);
    const lunch = analyze({ subject: 'Lunch on Thursday?', bodyText: 'Would you like to grab lunch?' });
    assert.deepEqual([lunch.priority, lunch.replyStatus], ['NORMAL', 'NEEDS_REPLY']);
  });

  it("marks the owner's own latest message as WAITING_ON_OTHERS", () => {
    const a = analyze({
      fromName: 'Alice',
      fromAddress: OWNER,
      subject: 'Re: Contract',
      bodyText: 'Sent you the signed copy. Can you countersign?',
    });
    assert.equal(a.replyStatus, 'WAITING_ON_OTHERS');
  });

  it('varies its confidence with the evidence and the message', () => {
    const values = new Set(
      [
        analyze({ subject: 'URGENT: production outage', bodyText: 'Down since 9. ASAP please.' }),
        analyze({ subject: 'Weekly digest', bodyText: 'Unsubscribe anytime.' }),
        analyze({ subject: 'Lunch?', bodyText: 'Would you like to grab lunch?' }),
        analyze({ subject: 'Notes', bodyText: 'The notes are attached.' }),
      ].map((a) => a.confidence),
    );
    assert.ok(values.size >= 3, `different confidences: ${[...values].join(', ')}`);
    for (const v of values) assert.ok(v > 0.3 && v < 1);
  });
});

describe('demo AI stand-in: drafts', () => {
  const question = {
    subject: 'Quick question about the invoice',
    bodyText: 'Hi Alice, could you check which number is right?',
  };

  it('answers the latest message and names its subject', () => {
    const d = draft([{ subject: 'Offsite planning', bodyText: 'Where should we go?' }, question]);
    assert.equal(d.subject, 'Re: Offsite planning');
    assert.match(d.body, /Offsite planning/);
    assert.match(d.body, /^Hello Priya,/);
    assert.match(d.body, /\[your answer\]/);
    assert.equal(d.language, 'English');
  });

  it('keeps to the asked length', () => {
    const short = wordCount(draft([question], { length: 'short' }).body);
    const medium = wordCount(draft([question], { length: 'medium' }).body);
    const long = wordCount(draft([question], { length: 'long' }).body);
    assert.ok(short <= 80, `short: ${short} words`);
    assert.ok(medium >= 80 && medium <= 180, `medium: ${medium} words`);
    assert.ok(long >= 180 && long <= 350, `long: ${long} words`);
  });

  it('follows the tone', () => {
    assert.match(draft([question], { tone: 'friendly' }).body, /^Hi Priya,[\s\S]*Cheers$/);
    assert.match(draft([question], { tone: 'professional' }).body, /^Dear Priya,[\s\S]*Kind regards$/);
  });

  it('writes in the asked language, or in the language of the latest message', () => {
    for (const [language, greeting] of [
      ['German', /^Hallo Priya,/],
      ['French', /^Bonjour Priya,/],
      ['Spanish', /^Hola, Priya:/],
    ] as const) {
      for (const length of ['short', 'medium', 'long'] as const) {
        const d = draft([question], { language, length });
        assert.equal(d.language, language);
        assert.match(d.body, greeting);
        const words = wordCount(d.body);
        assert.ok(
          length === 'short'
            ? words <= 80
            : length === 'medium'
              ? words >= 80 && words <= 180
              : words >= 180 && words <= 350,
          `${language} ${length}: ${words} words`,
        );
      }
    }
    const german = draft([
      { subject: 'Angebot', bodyText: 'Hallo Alice, kannst du bitte das Angebot prüfen? Danke und viele Grüße' },
    ]);
    assert.equal(german.language, 'German');
    assert.match(german.body, /„Angebot“/);
  });

  it('follows up when the owner wrote last', () => {
    const d = draft(
      [
        question,
        {
          fromName: 'Alice',
          fromAddress: OWNER,
          subject: 'Re: Quick question about the invoice',
          bodyText: 'Any news?',
        },
      ],
      { length: 'short' },
    );
    assert.match(d.body, /^Hello Priya,/);
    assert.match(d.body, /follow up/);
  });
});
