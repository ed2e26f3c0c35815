/**
 * The triage eval's labelled set and the owner's corrections, gathered from the files of
 * labelled/ (split by language and kind to stay readable), and the check that a set is
 * usable: known label values, unique ids, and no correction that is also a test message (it
 * would be graded on its own answer).
 */
import { priority, replyStatus } from '../../shared/schemas/ai.ts';
import { AUTOMATED } from './labelled/automated.ts';
import { CORRECTIONS } from './labelled/corrections.ts';
import { ENGLISH } from './labelled/english.ts';
import { FRENCH, GERMAN } from './labelled/german-french.ts';
import { INJECTION } from './labelled/injection.ts';
import { JAPANESE, SPANISH } from './labelled/spanish-japanese.ts';
import type { LabelledMessage } from './labelled/types.ts';

export { CORRECTIONS };
export { OWNER, SENT_AT, type LabelledMessage, type Priority, type ReplyStatus } from './labelled/types.ts';

export const LABELLED: LabelledMessage[] = [
  ...ENGLISH,
  ...AUTOMATED,
  ...GERMAN,
  ...FRENCH,
  ...SPANISH,
  ...JAPANESE,
  ...INJECTION,
];

/** The problems of a labelled set and its corrections, one line each; empty when usable. */
export function labelledSetProblems(
  messages: readonly LabelledMessage[],
  corrections: readonly LabelledMessage[] = [],
): string[] {
  const problems: string[] = [];
  const ids = new Set<string>();
  for (const m of [...messages, ...corrections]) {
    if (ids.has(m.id)) problems.push(`${m.id}: id used twice`);
    ids.add(m.id);
    if (!priority.safeParse(m.expected.priority).success)
      problems.push(`${m.id}: unknown priority ${String(m.expected.priority)}`);
    if (!replyStatus.safeParse(m.expected.replyStatus).success)
      problems.push(`${m.id}: unknown replyStatus ${String(m.expected.replyStatus)}`);
    if (!m.subject.trim() || !m.bodyText.trim() || !m.fromAddress.includes('@'))
      problems.push(`${m.id}: subject, body and sender address are required`);
  }
  const subjects = new Set(messages.map((m) => m.subject.trim().toLowerCase()));
  for (const c of corrections)
    if (subjects.has(c.subject.trim().toLowerCase()))
      problems.push(`${c.id}: a correction must not be a labelled message`);
  return problems;
}
