/**
 * Splitting a thread answer into its messages (answer-split.ts) never changes what the answer
 * says: wherever it splits, the skeleton with the parsed pieces put back is the whole answer's
 * own JSON value; whatever is not of the usual shape is left to the whole parse.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { splitThreadAnswer } from '../../../../server/providers/mail/answer-split.ts';
import { normaliseThreadAnswer } from '../../../../server/providers/mail/thread-answer.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

/** The answer's value as the split gives it, or null when it did not split. */
function reassembled(text: string): unknown {
  const split = splitThreadAnswer(bytes(text));
  if (!split) return null;
  const rest = JSON.parse(split.skeleton) as { messages: unknown[] };
  assert.deepEqual(rest.messages, []);
  rest.messages = split.messages.map((m) => JSON.parse(new TextDecoder().decode(m)));
  return rest;
}

/** JSON text of a value, compact or indented with the given whitespace. */
const spaced = (value: unknown, pad: string) => JSON.stringify(value, null, pad);

describe('splitting a thread answer into its messages', () => {
  it('puts back exactly the value of any thread-shaped answer, strings with quotes and backslashes included', () => {
    const text = fc.string({ unit: 'binary' });
    const part = fc.letrec((tie) => ({
      node: fc.record(
        { mimeType: text, body: fc.record({ data: text }), parts: fc.array(tie('node'), { maxLength: 2 }) },
        { requiredKeys: ['mimeType'] },
      ),
    })).node;
    // Top-level strings as the provider writes them (ids); anything at all further in.
    const plain = fc.stringMatching(/^[0-9a-f]{0,16}$/);
    const answer = fc.record({
      id: plain,
      historyId: fc.option(plain),
      before: fc.array(fc.jsonValue(), { maxLength: 3 }),
      messages: fc.array(fc.record({ id: text, snippet: text, payload: part, extra: fc.jsonValue() }), {
        maxLength: 6,
      }),
      after: fc.dictionary(text, fc.jsonValue(), { maxKeys: 3 }),
    });
    fc.assert(
      fc.property(answer, fc.constantFrom('', ' ', '\t', '\n  ', '\r\n'), (value, pad) => {
        const json = spaced(value, pad);
        assert.deepEqual(reassembled(json), JSON.parse(json));
      }),
      { numRuns: 300, seed: 17 },
    );
  });

  it('leaves every other shape to the whole parse', () => {
    for (const text of [
      '[1, 2]',
      '\uFEFF{"messages": []}',
      '{"id": "t", "messages": {"a": 1}}',
      '{"id": "t", "messages": "x"}',
      '{"id": "t"}',
      '{"thread": {"messages": [1]}}',
      '{"id": "messages", "x": 1}',
      `{"messages": [${'1,'.repeat(10_000)}1]}`,
      '{"messages": [1], "messages": [2]}',
      '{"messages": [1], "\\u006dessages": [2]}',
      '{"id": "t", "messages": [1, 2}',
      '{"id": "t", "messages": [{"a": "unterminated}]}',
      '',
    ]) {
      assert.equal(splitThreadAnswer(bytes(text)), null, text);
    }
    assert.deepEqual(splitThreadAnswer(bytes('{"id":"messages","messages" : [ ] }'))?.messages, []);
    assert.equal(splitThreadAnswer(bytes(`{"messages": [${'1,'.repeat(9_999)}1]}`))?.messages.length, 10_000);
  });

  it('gives the same messages as the whole parse, and the same refusals', async () => {
    const message = (id: string) => ({
      id,
      threadId: 't',
      labelIds: ['INBOX'],
      payload: { mimeType: 'text/plain', body: { data: Buffer.from(`body ${id} "\\`).toString('base64url') } },
    });
    // Behind a byte order mark the answer is not split; the whole parse drops the mark.
    const whole = (text: string) => normaliseThreadAnswer(bytes(`\uFEFF${text}`));
    for (const text of [
      JSON.stringify({ id: 't', messages: [message('a'), message('b')] }),
      JSON.stringify({ id: 't', messages: [] }),
      JSON.stringify({ id: 't', messages: [message('a'), { id: '' }] }),
      JSON.stringify({ messages: [message('a')] }),
      '{"id": "t", "messages": [{"id": "a", "threadId": "t"},]}',
      '{"id": "t", "messages": [{"id": "a", "threadId": "t"}]} trailing',
    ]) {
      assert.ok(splitThreadAnswer(bytes(text)), text);
      assert.deepEqual(await normaliseThreadAnswer(bytes(text)), await whole(text), text);
    }
  });
});
