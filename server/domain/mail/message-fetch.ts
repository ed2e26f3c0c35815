/**
 * Fetching message metadata for a sync, one message at a time as far as failures go: a
 * message the provider will not return or that cannot be read costs itself, not the call:
 * it is set aside (recorded in mail_set_aside, retried on its own with a growing delay) and
 * the rest of the call, the account and its checkpoint move on.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { GmailApi } from '../../providers/gmail.ts';
import { AppError } from '../errors.ts';
import type { SetAside, StoreChanges } from './mail-store.ts';
import { dueSetAside } from './set-aside.ts';
import type { MessageMeta, MetadataQuota } from '../../providers/gmail.ts';

/** With none fetched and at least this many failed, the provider itself is failing: nothing is set aside. */
const OUTAGE_FAILURES = 3;

/**
 * The metadata of these messages, normalised. A message the provider will not return, or
 * that cannot be read, is set aside with the call's commit (retried later on its own, from a
 * minute, doubling): what the call fetched is kept, a backfill goes on at quota speed, and a
 * transient failure of one message never rolls back or backs off the whole account. When
 * every one of several fetches failed the provider itself is failing: the sync fails
 * (SYNC_FAILED, retried by its job), nothing is set aside.
 */
export async function fetchMeta(p: { api: GmailApi }, ids: string[], threadOf?: ReadonlyMap<string, string>): Promise<Fetched> {
  if (!ids.length) return { metas: [], setAside: [] };
  const fetched = normalise(await (threadOf ? p.api.getMetadata(ids, threadOf) : p.api.getMetadata(ids)));
  if (!fetched.metas.length && fetched.setAside.length >= OUTAGE_FAILURES) throw new AppError('SYNC_FAILED', { cause: new Error(`every one of ${fetched.setAside.length} message fetches failed`) });
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
  return { metas: got.messages, setAside: got.failed.map((f) => ({ providerMessageId: f.id, reason: f.reason })), ...(got.quota ? { quota: got.quota } : {}) };
}

/** Of `asked`, the ids the provider no longer has: neither returned, nor failed, nor left unfetched by the quota. */
export function goneOf(asked: string[], got: Fetched): string[] {
  const answered = new Set([...got.metas.map((m) => m.providerMessageId), ...got.setAside.map((x) => x.providerMessageId), ...(got.quota?.unfetched ?? [])]);
  return asked.filter((id) => !answered.has(id));
}

/** Set-aside messages tried again per sync call that has caught up. */
const SET_ASIDE_RETRIES = 10;

/**
 * Another try at the account's set-aside messages that are due: those the provider now
 * returns are stored (whatever their labels say), those it no longer has are forgotten, the
 * others wait longer. Never fails the sync: a failure here is the set-aside's own.
 */
export async function planSetAsideRetry(api: GmailApi, em: EntityManager, accountId: string): Promise<Pick<StoreChanges, 'upserts' | 'setAside' | 'setAsideGone' | 'setAsideRecovered'>> {
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
