/**
 * Fetching message metadata for a sync, one message at a time as far as failures go: a
 * message the provider will not return or that cannot be read costs itself, not the call:
 * it is set aside (recorded in mail_set_aside, retried on its own with a growing delay) and
 * the rest of the call, the account and its checkpoint move on.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { GmailApi } from '../../../providers/gmail.ts';
import { AppError } from '../../errors.ts';
import type { SetAside, StoreChanges } from '../mail-store.ts';
import { dueSetAside, recordedFailures } from './set-aside.ts';
import type { MessageMeta, MetadataQuota } from '../../../providers/gmail.ts';

/** At least this many failed, and at least half of those asked: the provider itself is failing, not the messages. */
const OUTAGE_FAILURES = 3;

/** The cause of a call failed by an outage-like share of failing messages (the sync service records them). */
export class MessageFetchFailures extends Error {
  readonly failures: SetAside[];
  constructor(failures: SetAside[]) {
    super(`${failures.length} message(s) could not be fetched or read`);
    this.failures = failures;
  }
}

/**
 * The metadata of these messages, normalised. A message the provider will not return, or
 * that cannot be read, is set aside with the call's commit (retried later on its own, from a
 * minute, doubling): what the call fetched is kept, a backfill goes on at quota speed, and a
 * transient failure of one message never rolls back or backs off the whole account.
 * When several and at least half of the fetches failed, the provider itself is failing: the
 * call fails (SYNC_FAILED, its job retries with backoff) and the failures are recorded; if
 * the same messages fail so again, they are set aside then (a cluster of bad messages must
 * not stop the account for good).
 */
export async function fetchMeta(
  p: { api: GmailApi; em: EntityManager; accountId: string },
  ids: string[],
  threadOf?: ReadonlyMap<string, string>,
): Promise<Fetched> {
  if (!ids.length) return { metas: [], setAside: [] };
  const fetched = normalise(await (threadOf ? p.api.getMetadata(ids, threadOf) : p.api.getMetadata(ids)));
  const failed = fetched.setAside.length;
  if (failed < OUTAGE_FAILURES || failed * 2 < ids.length) return fetched;
  const known = new Set(
    await recordedFailures(
      p.em,
      p.accountId,
      fetched.setAside.map((x) => x.providerMessageId),
    ),
  );
  const fresh = fetched.setAside.filter((x) => !known.has(x.providerMessageId));
  if (fresh.length) throw new AppError('SYNC_FAILED', { cause: new MessageFetchFailures(fresh) });
  return fetched;
}

export interface Fetched {
  metas: MessageMeta[];
  setAside: SetAside[];
  /** The quota ran out part-way: what was fetched is here; `unfetched` ids are neither gone nor failed. */
  quota?: MetadataQuota;
}

/** The provider normalised each message on its own: one it could not read is set aside, not the batch. */
function normalise(got: Awaited<ReturnType<GmailApi['getMetadata']>>): Fetched {
  return {
    metas: got.messages,
    setAside: got.failed.map((f) => ({ providerMessageId: f.id, reason: f.reason })),
    ...(got.quota ? { quota: got.quota } : {}),
  };
}

/** Of `asked`, the ids the provider no longer has: neither returned, nor failed, nor left unfetched by the quota. */
export function goneOf(asked: string[], got: Fetched): string[] {
  const answered = new Set([
    ...got.metas.map((m) => m.providerMessageId),
    ...got.setAside.map((x) => x.providerMessageId),
    ...(got.quota?.unfetched ?? []),
  ]);
  return asked.filter((id) => !answered.has(id));
}

/** Set-aside messages tried again per sync call that has caught up. */
const SET_ASIDE_RETRIES = 10;

/**
 * Another try at the account's set-aside messages that are due: those the provider now
 * returns are stored (whatever their labels say), those it no longer has are forgotten, the
 * others wait longer. Never fails the sync: a failure here is the set-aside's own.
 */
export async function planSetAsideRetry(
  api: GmailApi,
  em: EntityManager,
  accountId: string,
): Promise<Pick<StoreChanges, 'upserts' | 'setAside' | 'setAsideGone' | 'setAsideRecovered'>> {
  const due = await dueSetAside(em, accountId, SET_ASIDE_RETRIES);
  if (!due.length) return { upserts: [] };
  let fetched: Fetched;
  try {
    fetched = normalise(await api.getMetadata(due));
  } catch {
    return { upserts: [] }; // quota or the grant: the next call tries again
  }
  return {
    upserts: fetched.metas,
    setAside: fetched.setAside,
    setAsideGone: goneOf(due, fetched),
    setAsideRecovered: fetched.metas.map((m) => m.providerMessageId),
  };
}
