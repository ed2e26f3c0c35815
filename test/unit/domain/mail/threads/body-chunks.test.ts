import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { bodyRuns } from '../../../../../server/domain/mail/threads/body-chunks.ts';

type Row = { id: string; bodyText?: string; bodyHtml?: string };
const size = (r: Row) => (r.bodyText?.length ?? 0) + (r.bodyHtml?.length ?? 0);
const row = (id: string, text: number, html = 0): Row => ({
  id,
  bodyText: 'x'.repeat(text),
  ...(html ? { bodyHtml: 'y'.repeat(html) } : {}),
});

/** The runs `rows` are stored in, by their ids; `fail` makes the store of that run (by its place) fail. */
async function runsOf(rows: Row[], max: number, fail?: number): Promise<{ runs: string[]; error?: unknown }> {
  const runs: string[] = [];
  const runner = bodyRuns<Row>(
    async (run) => {
      await new Promise((r) => setImmediate(r)); // a store takes time: the next run fills meanwhile
      if (runs.length === fail) throw new Error(`store ${fail} failed`);
      runs.push(run.map((r) => r.id).join(''));
    },
    size,
    max,
  );
  for (const r of rows) runner.add(r);
  try {
    await runner.end();
    return { runs };
  } catch (error) {
    return { runs, error };
  }
}

describe('bodyRuns', () => {
  it('stores the rows in order, each once, in runs that end once they reach the bound', async () => {
    const rows = [row('a', 40), row('b', 30, 30), row('c', 10), row('d', 90), row('e', 5)];
    assert.deepEqual(await runsOf(rows, 100), { runs: ['ab', 'cd', 'e'] });
  });

  it('never splits a message: one over the bound ends its run (a run exceeds the bound by one message at most)', async () => {
    assert.deepEqual(await runsOf([row('a', 500), row('b', 1), row('c', 300, 300), row('d', 1)], 100), {
      runs: ['a', 'bc', 'd'],
    });
  });

  it('stores one run for an ordinary thread, none for no rows; rows without bodies count nothing', async () => {
    assert.deepEqual(await runsOf([row('a', 10), { id: 'b' }, row('c', 20)], 100), { runs: ['abc'] });
    assert.deepEqual(await runsOf([], 100), { runs: [] });
  });

  it('stores a full run while the next fills, and ends only once every store has', async () => {
    const started: string[] = [];
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const runner = bodyRuns<Row>(
      async (run) => {
        started.push(run.map((r) => r.id).join(''));
        await gate;
      },
      size,
      10,
    );
    runner.add(row('a', 10));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(started, ['a'], 'the first run is stored as soon as it is full');
    runner.add(row('b', 1));
    let ended = false;
    const end = runner.end().then(() => (ended = true));
    await new Promise((r) => setImmediate(r));
    assert.equal(ended, false, 'end waits for the stores');
    release();
    await end;
    assert.deepEqual(started, ['a', 'b']);
  });

  it('drops the rows after a failed store and ends with its error', async () => {
    const { runs, error } = await runsOf([row('a', 100), row('b', 100), row('c', 100)], 100, 1);
    assert.deepEqual(runs, ['a']);
    assert.match(String(error), /store 1 failed/);
  });
});
