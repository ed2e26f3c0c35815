import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bodyChunks } from '../../../../server/domain/mail/body-chunks.ts';

const row = (id: string, text: number, html = 0): { id: string; bodyText?: string; bodyHtml?: string } => ({ id, bodyText: 'x'.repeat(text), ...(html ? { bodyHtml: 'y'.repeat(html) } : {}) });
const ids = (chunks: { id: string }[][]) => chunks.map((c) => c.map((r) => r.id).join(''));

describe('bodyChunks', () => {
  it('keeps the rows in order, each once, in runs that stop once they reach the bound', () => {
    const rows = [row('a', 40), row('b', 30, 30), row('c', 10), row('d', 90), row('e', 5)];
    assert.deepEqual(ids([...bodyChunks(rows, 100)]), ['ab', 'cd', 'e']);
  });

  it('never splits a message: one over the bound ends its run (a run exceeds the bound by one message at most)', () => {
    assert.deepEqual(ids([...bodyChunks([row('a', 500), row('b', 1), row('c', 300, 300), row('d', 1)], 100)]), ['a', 'bc', 'd']);
  });

  it('gives one run for an ordinary thread, none for no rows; rows without bodies count nothing', () => {
    assert.deepEqual(ids([...bodyChunks([row('a', 10), { id: 'b' } as { id: string; bodyText?: string }, row('c', 20)], 100)]), ['abc']);
    assert.deepEqual([...bodyChunks([], 100)], []);
  });
});
