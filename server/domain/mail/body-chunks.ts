/**
 * A thread's bodies split for storing: one statement's JSON parameter (and the event loop's
 * turn that builds it) holds about a megabyte, not the whole thread (a hundred messages of
 * hundreds of kilobytes each were one parameter of ~19 MB and a stall of ~150 ms).
 */
import type { MessageBodies } from '../../providers/gmail.ts';

/** Body characters one statement carries, about (a message's bodies are never split). */
export const BODY_CHARS_PER_STATEMENT = 1 << 20;

/** `rows` in order, in runs that stop once their bodies reach `max` characters (a run has at least one row). */
export function* bodyChunks<T extends Partial<MessageBodies>>(rows: readonly T[], max = BODY_CHARS_PER_STATEMENT): Generator<T[]> {
  for (let i = 0; i < rows.length; ) {
    const chunk: T[] = [];
    for (let chars = 0; i < rows.length && (!chunk.length || chars < max); i++) {
      chars += (rows[i]!.bodyText?.length ?? 0) + (rows[i]!.bodyHtml?.length ?? 0);
      chunk.push(rows[i]!);
    }
    yield chunk;
  }
}
