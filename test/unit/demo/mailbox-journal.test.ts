/** The demo's mailbox journal (restart safety) and its data-directory rules. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { JOURNAL_FILE, openMailboxJournal } from '../../../demo/mailbox-journal.ts';
import { browserHost, setAsideDatabase } from '../../../demo/start-demo.ts';

const initial = { email: 'alice@example.com', seed: 1, count: 50, spanDays: 45 };

describe('demo mailbox journal', () => {
  it('is created once, with the first start’s clock, and read back unchanged', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mia-journal-'));
    const first = openMailboxJournal(dir, { ...initial, now: 1_700_000_000_000 });
    assert.equal(first.fresh, true);
    first.append({ id: 'abc', internalDate: 1_700_000_100_000, subject: 'Live one' });
    const again = openMailboxJournal(dir, { ...initial, count: 300, now: 1_800_000_000_000 });
    assert.equal(again.fresh, false);
    assert.deepEqual(again.seed, { version: 1, ...initial, now: 1_700_000_000_000 }, 'the first parameters win');
    assert.deepEqual(again.live, [{ id: 'abc', internalDate: 1_700_000_100_000, subject: 'Live one' }]);
  });

  it('skips a torn last line', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mia-journal-'));
    openMailboxJournal(dir, initial).append({ id: 'one', internalDate: 1 });
    appendFileSync(path.join(dir, JOURNAL_FILE), '{"id":"two","internalD');
    const j = openMailboxJournal(dir, initial);
    assert.deepEqual(
      j.live.map((m) => m.id),
      ['one'],
    );
    j.append({ id: 'three', internalDate: 3 });
    assert.match(readFileSync(j.file, 'utf8'), /"three"/);
    assert.deepEqual(
      openMailboxJournal(dir, initial).live.map((m) => m.id),
      ['one', 'three'],
    );
  });

  it('moves an old embedded database aside when the mailbox is new', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mia-journal-'));
    const db = path.join(dir, 'demo-postgres');
    assert.equal(setAsideDatabase(db), null);
    mkdirSync(db);
    assert.equal(setAsideDatabase(db, 42), `${db}.stale-42`);
    assert.equal(existsSync(db), false);
    assert.equal(existsSync(`${db}.stale-42`), true);
  });

  it('gives browsers a host name they can reach', () => {
    assert.equal(browserHost('127.0.0.1'), 'localhost');
    assert.equal(browserHost('0.0.0.0'), 'localhost');
    assert.equal(browserHost('::'), 'localhost');
    assert.equal(browserHost('192.168.1.20'), '192.168.1.20');
    assert.equal(browserHost('fd00::1'), '[fd00::1]');
  });
});
