import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { analysisPrompt } from '../../../../server/domain/ai/prompt.ts';
import { estimateTextTokens, fitTokens } from '../../../../server/domain/ai/token-budget.ts';

/** What the prompt carries: the text JSON-encoded, `<` escaped (prompt.ts `tagged`). */
const real = (text: string) => countTokens(JSON.stringify(text).replace(/</g, '\\u003c')) - 2; // less its two quotes

const SAMPLES: Record<string, string> = {
  english: 'Hi Bob, the quarterly report is attached. Could you review the figures before Friday? Thanks.\n'.repeat(40),
  german:
    'Sehr geehrte Damen und Herren, anbei erhalten Sie die Rechnung für Oktober. Mit freundlichen Grüßen\n'.repeat(30),
  russian: 'Здравствуйте! Напоминаем, что срок оплаты счёта истекает завтра. С уважением, бухгалтерия.\n'.repeat(30),
  chinese: '您好，关于下周的会议安排，请确认您是否可以参加。谢谢！'.repeat(60),
  japanese: 'お世話になっております。来週の打ち合わせの件でご連絡いたしました。'.repeat(60),
  arabic: 'مرحبا، نود تذكيرك بموعد الاجتماع غدا في الساعة العاشرة صباحا. '.repeat(40),
  emoji: '🎉🔥💸🚀✅❗️👉 '.repeat(200),
  markup: '<<<>>>&&& <div class="x"><a href="#">&nbsp;</a></div>\n'.repeat(60),
  quotes: '"\\"\\\\ \t\t"'.repeat(300),
  base64: 'TWFpbCBJbmJveCBBc3Npc3RhbnQgcmFuZG9tIGJ5dGVzOiB4K3kvej0='.repeat(60),
  digits: '4111 1111 1111 1111 0044 2079 460000 '.repeat(80),
  zalgo: 'Z̷̢̛a̸̧͝l̵̨̛g̶̢̛o̷̧͘ '.repeat(100),
};

describe('token budget', () => {
  it('estimates at or above the o200k_base count of the JSON-encoded text, for mail in many scripts and shapes', () => {
    for (const [name, text] of Object.entries(SAMPLES)) {
      assert.ok(
        estimateTextTokens(text) >= real(text),
        `${name}: estimate ${estimateTextTokens(text)} < real ${real(text)}`,
      );
    }
  });

  it('holds on generated text too (fast-check, replayable seed)', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary', maxLength: 400 }),
        fc.string({ unit: 'grapheme', maxLength: 200 }),
        (a, b) => estimateTextTokens(a + b) >= real(a + b),
      ),
      { seed: 17, numRuns: 300 },
    );
  });

  it('fitTokens keeps text within the budget, cut at a word, never half a surrogate pair', () => {
    for (const text of Object.values(SAMPLES)) {
      const cut = fitTokens(text, 300);
      assert.ok(real(cut) <= 300 + 8, `${real(cut)} tokens`);
      assert.equal(cut, cut.toWellFormed());
    }
    assert.equal(fitTokens('short text', 300), 'short text');
    assert.match(fitTokens('word '.repeat(1_000), 50), /word\n\[…truncated\]$/);
  });

  it('an analysis prompt stays within 2,500 o200k_base tokens whatever the message holds', () => {
    for (const [name, text] of Object.entries(SAMPLES)) {
      const big = text.repeat(50);
      const latest = {
        fromName: big.slice(0, 5_000),
        fromAddress: 'x@y.example',
        subject: big.slice(0, 20_000),
        snippet: big.slice(0, 500),
        sentAt: new Date(0),
        bodyText: big,
        bodyHtml: null,
      };
      const p = analysisPrompt({ threadSubject: big.slice(0, 20_000), latest, ownerAddress: 'owner@example.com' });
      const tokens = countTokens(p.system) + countTokens(p.user);
      assert.ok(tokens <= 2_500, `${name}: ${tokens} tokens`);
    }
  });
});
