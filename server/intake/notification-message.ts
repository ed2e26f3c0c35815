/**
 * A Pub/Sub notification of the mail provider as the intake reads it: the mailbox it names
 * and the history id after the change, decoded defensively (anything else is dropped), and
 * whether the stored copy already covers it.
 */
import type { ReceivedNotification } from '../providers/pubsub.ts';

export interface Decoded {
  email: string;
  /** The mailbox's history id after the change (null when absent or malformed: then it always syncs). */
  historyId: bigint | null;
}

function historyIdOf(value: unknown): bigint | null {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  if (typeof value === 'string' && /^\d{1,20}$/.test(value)) return BigInt(value);
  return null;
}

export function decode(n: ReceivedNotification): Decoded | null {
  try {
    const body = JSON.parse(n.data.toString('utf8')) as { emailAddress?: unknown; historyId?: unknown };
    if (typeof body.emailAddress !== 'string' || body.emailAddress.length > 320) return null;
    return { email: body.emailAddress.toLowerCase(), historyId: historyIdOf(body.historyId) };
  } catch {
    return null;
  }
}

/** Every notification of the group reports a change the stored copy already includes. */
export function covered(group: { historyId: bigint | null }[], syncedThrough: string | null): boolean {
  if (syncedThrough === null) return false;
  const through = BigInt(syncedThrough);
  return group.every((d) => d.historyId !== null && d.historyId <= through);
}

export interface Notified {
  message: ReceivedNotification;
  historyId: bigint | null;
}

/** A pulled batch by mailbox (its notifications coalesce into one sync), and the ack ids of what cannot be decoded. */
export function groupByMailbox(messages: ReceivedNotification[]): {
  byEmail: Map<string, Notified[]>;
  undecodable: string[];
} {
  const byEmail = new Map<string, Notified[]>();
  const undecodable: string[] = [];
  for (const m of messages) {
    const d = decode(m);
    if (!d) {
      undecodable.push(m.ackId);
      continue;
    }
    const group = byEmail.get(d.email);
    if (group) group.push({ message: m, historyId: d.historyId });
    else byEmail.set(d.email, [{ message: m, historyId: d.historyId }]);
  }
  return { byEmail, undecodable };
}
