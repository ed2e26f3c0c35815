/**
 * Keeps the demo's stand-in mailbox with its database across restarts. The Gmail stand-in
 * lives in memory, but it seeds deterministically from (seed, now, count, spanDays): this
 * journal stores those parameters once, then one line per live message added since, with
 * the id and date the stand-in gave it. Replaying the journal on start rebuilds the same
 * mailbox (same message and thread ids, same history ids), so the threads the kept database
 * lists still open, and the sync resumes from its checkpoint.
 *
 * File: `<dataDir>/demo-mailbox.jsonl`, JSON lines; a torn last line (a crash mid-write) is
 * skipped. Delete it together with the database to start over (see the README).
 */
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { NewMessage } from '../stand-ins/gmail.stand-in.ts';

export const JOURNAL_FILE = 'demo-mailbox.jsonl';

export interface MailboxSeed {
  version: 1;
  email: string;
  /** The stand-in's PRNG seed. */
  seed: number;
  /** The seeded mailbox's reference time (epoch ms): the first start's clock. */
  now: number;
  count: number;
  spanDays: number;
}

/** A live message as added, with the id and date it got, so a replay recreates it exactly. */
export type LiveMessage = NewMessage & { id: string; internalDate: number };

export interface MailboxJournal {
  readonly file: string;
  readonly seed: MailboxSeed;
  readonly live: LiveMessage[];
  /** True when no journal existed: the mailbox is new (and so must the database be). */
  readonly fresh: boolean;
  append(message: LiveMessage): void;
}

function readJournal(file: string): { seed: MailboxSeed; live: LiveMessage[] } | null {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  // Finish a torn last line, so that the next append starts a line of its own.
  if (text && !text.endsWith('\n')) appendFileSync(file, '\n');
  const rows: unknown[] = [];
  for (const line of text.split('\n')) {
    if (!line.trim()) continue;
    try {
      rows.push(JSON.parse(line));
    } catch {
      // A torn line (the process died while writing it): the message never reached the database either.
    }
  }
  const [seed, ...live] = rows as [MailboxSeed, ...LiveMessage[]];
  if (!seed || seed.version !== 1) return null;
  return { seed, live: live.filter((m) => typeof m?.id === 'string' && typeof m.internalDate === 'number') };
}

/** Opens the journal in `dataDir`, creating it with `initial` (plus `now`) when there is none. */
export function openMailboxJournal(
  dataDir: string,
  initial: Omit<MailboxSeed, 'version' | 'now'> & { now?: number },
): MailboxJournal {
  mkdirSync(dataDir, { recursive: true });
  const file = path.join(dataDir, JOURNAL_FILE);
  const found = readJournal(file);
  const seed: MailboxSeed = found?.seed ?? { version: 1, ...initial, now: initial.now ?? Date.now() };
  if (!found) writeFileSync(file, `${JSON.stringify(seed)}\n`);
  const live = found?.live ?? [];
  return {
    file,
    seed,
    live,
    fresh: !found,
    append(message) {
      live.push(message);
      // Synchronous, before the notification's sync can commit a checkpoint past this message.
      appendFileSync(file, `${JSON.stringify(message)}\n`);
    },
  };
}
