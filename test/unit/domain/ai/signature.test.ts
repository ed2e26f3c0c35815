import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { analysisPrompt, draftPrompt, type PromptMessage } from '../../../../server/domain/ai/prompt.ts';
import { ownerSignatureLines, stripSignature, trailingSignature } from '../../../../server/domain/ai/signature.ts';

const OWNER = 'alice@example.com';
const msg = (fromAddress: string, bodyText: string, fromName = 'Someone'): PromptMessage => ({
  fromName,
  fromAddress,
  subject: 'Plans',
  snippet: '',
  sentAt: new Date(0),
  bodyText,
});
const SIGNED = 'Sounds good, see you Monday.\n\nBest regards,\nAlice Martin\nHead of Sales, Acme Ltd\n+44 20 7946 0000';
const DELIMITED =
  'Yes, Tuesday works.\n-- \nAlice Martin | Acme Ltd\nMobile +44 7700 900123\n\nOn Mon, Bob wrote:\n> Tuesday?';

describe("the owner's signature", () => {
  it('is found after a "-- " delimiter, or after a closing at the end of the message', () => {
    assert.deepEqual(trailingSignature(SIGNED), ['alice martin', 'head of sales, acme ltd', '+44 20 7946 0000']);
    assert.deepEqual(trailingSignature('Short note.\n--\nA. Martin\nAcme'), ['a. martin', 'acme']);
    assert.deepEqual(
      trailingSignature('Thanks for the update. I will read it tonight\nand answer tomorrow.'),
      [],
      'a thank-you sentence is no closing',
    );
  });

  it("is cut from the owner's message and from anybody's text that repeats its lines", () => {
    const lines = ownerSignatureLines([SIGNED], 'Alice Martin\nwww.acme.example');
    assert.equal(stripSignature(SIGNED, lines, true), 'Sounds good, see you Monday.\n\nBest regards,');
    const quoting =
      'Great, Monday then.\nAlice Martin\nHead of Sales, Acme Ltd\n+44 20 7946 0000\nwww.acme.example\nBob';
    assert.equal(stripSignature(quoting, lines, false), 'Great, Monday then.\nBob');
  });

  it("analysis learns it from the owner's earlier messages of the thread, which it never sends", () => {
    const quoting = msg('bob@x.example', 'See you then.\nAlice Martin | Acme Ltd\nMobile +44 7700 900123', 'Bob');
    const p = analysisPrompt({
      threadSubject: 'Plans',
      latest: quoting,
      earlier: [msg(OWNER, DELIMITED, 'Alice')],
      ownerAddress: OWNER,
    });
    assert.ok(!p.user.includes('7700') && !p.user.includes('Tuesday works'), p.user);
    assert.match(p.user, /See you then\./);
  });

  it("never reaches the model: analysis of the owner's own message, and a draft with the owner's replies as context", () => {
    const secrets = ['Alice Martin', 'Head of Sales', '7946', '7700', 'Acme'];
    const analysis = analysisPrompt({
      threadSubject: 'Plans',
      latest: msg(OWNER, SIGNED, 'Alice'),
      ownerAddress: OWNER,
    });
    for (const s of secrets.slice(0, 3)) assert.ok(!analysis.user.includes(s), `${s} in ${analysis.user}`);
    const thread = [
      msg('bob@x.example', 'Monday?', 'Bob'),
      msg(OWNER, DELIMITED, 'Alice'),
      msg(
        'bob@x.example',
        'Perfect. Which number do I call?\n\nAlice Martin | Acme Ltd\nMobile +44 7700 900123',
        'Bob',
      ),
    ];
    const draft = draftPrompt({
      threadSubject: 'Plans',
      messages: thread,
      ownerAddress: OWNER,
      style: { tone: 'default', length: 'short' },
      ownerSignature: 'Alice Martin\nHead of Sales, Acme Ltd',
    });
    for (const s of secrets) assert.ok(!draft.user.includes(s), `${s} in ${draft.user}`);
    assert.match(draft.user, /Yes, Tuesday works\./);
    assert.match(draft.user, /Which number do I call\?/, "the rest of a message quoting the owner's signature stays");
  });
});
