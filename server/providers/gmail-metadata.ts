/**
 * A sync's message metadata at the fewest quota units (runtime contract part 3 "Quota"): where
 * several of the wanted messages share a thread and the thread's own answer (threads.get,
 * format=metadata) costs less than theirs one by one (messages.get each), the thread is read
 * once and the wanted messages taken from it; the thread's other messages are not kept (each
 * message is stored from one answer only). A thread that fails, or that no longer holds a
 * wanted message, leaves those messages to messages.get, one by one, as before.
 */
import { AppError } from '../domain/errors.ts';
import { statusOf } from './gmail-errors.ts';
import type { GmailMessage } from './gmail-wire.ts';
import { mapLimit } from './map-limit.ts';

export interface MetadataReads {
  /** One message; null when it is gone (404). `expect`: units the caller spends right after. */
  one(id: string, expect: number): Promise<GmailMessage | null>;
  /** A thread's messages; null when it is gone. `expect`: units the caller spends right after. */
  thread(threadId: string, expect: number): Promise<GmailMessage[] | null>;
  /** A method's units (the pacer's profile); absent: every message is read on its own. */
  cost?: (method: 'messages.get' | 'threads.get') => number;
  concurrency: number;
}

export interface MetadataAnswers {
  /** By position of `ids`: the message, null (gone or failed), undefined (not fetched: the quota ran out). */
  got: (GmailMessage | null | undefined)[];
  failed: { id: string; reason: string }[];
  refused?: AppError;
}

/** Threads worth reading whole: more wanted messages in them than a thread read costs. */
function threadsWorthIt(
  ids: readonly string[],
  threadOf: ReadonlyMap<string, string> | undefined,
  cost: MetadataReads['cost'],
): Map<string, string[]> {
  const out = new Map<string, string[]>();
  if (!threadOf || !cost) return out;
  for (const id of ids) {
    const t = threadOf.get(id);
    if (t) out.set(t, [...(out.get(t) ?? []), id]);
  }
  for (const [t, members] of out) if (members.length * cost('messages.get') <= cost('threads.get')) out.delete(t);
  return out;
}

export async function readMetadata(
  r: MetadataReads,
  ids: readonly string[],
  threadOf?: ReadonlyMap<string, string>,
): Promise<MetadataAnswers> {
  const failed: { id: string; reason: string }[] = [];
  let refused: AppError | undefined;
  const found = new Map<string, GmailMessage | null>();
  const quotaOrThrow = (err: unknown): boolean => {
    if (err instanceof AppError && err.code === 'MAIL_RATE_LIMITED') return Boolean((refused ??= err));
    if (!(err instanceof AppError) || err.code !== 'SYNC_FAILED') throw err; // the grant, a timeout: the whole sync waits
    return false;
  };
  const threads = threadsWorthIt(ids, threadOf, r.cost);
  const inThreads = new Set([...threads.values()].flat());
  const readOne = async (id: string, expect: number) => {
    try {
      found.set(id, await r.one(id, expect));
    } catch (err) {
      if (quotaOrThrow(err)) return;
      const status = statusOf((err as AppError).cause);
      failed.push({ id, reason: status ? `HTTP_${status}` : 'UNREADABLE' });
      found.set(id, null);
    }
  };
  const readThread = async (threadId: string, members: string[], expect: number) => {
    try {
      const messages = await r.thread(threadId, expect);
      for (const m of messages ?? []) if (members.includes(m.id)) found.set(m.id, m);
    } catch (err) {
      quotaOrThrow(err); // a thread the provider fails: its messages are read one by one
    }
  };
  /** Threads and single messages in one pool (one wave of provider latency for both); a grant covers as many of the reads left as it may. */
  const readAll = async (groups: [string, string[]][], singles: string[]) => {
    const cost = (m: 'messages.get' | 'threads.get') => r.cost?.(m) ?? 0;
    let left = groups.length * cost('threads.get') + singles.length * cost('messages.get');
    const items = [...groups.map(([t, members]) => ({ t, members })), ...singles.map((id) => ({ id }))];
    await mapLimit(items, r.concurrency, async (item) => {
      if (refused) return; // the quota ran out: the rest waits (unfetched)
      const expect = left;
      left -= cost('id' in item ? 'messages.get' : 'threads.get');
      return 'id' in item ? readOne(item.id, expect) : readThread(item.t, item.members, expect);
    });
  };
  await readAll(
    [...threads],
    ids.filter((id) => !inThreads.has(id)),
  );
  // A thread that failed or no longer holds a wanted message: those are read one by one (unless the quota ran out).
  const left = [...inThreads].filter((id) => !found.has(id));
  if (left.length && !refused) await readAll([], left);
  return { got: ids.map((id) => found.get(id)), failed, ...(refused ? { refused } : {}) };
}
