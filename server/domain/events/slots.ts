/**
 * This instance's places among the cluster's open streams (server/domain/events/stream-slots.ts):
 * a stream takes one before it opens and frees it when it ends; while any is held, one
 * heartbeat per instance (not per stream) keeps all of them alive. Places freed together (a
 * proxy dropping every connection at once) are freed in one statement per turn, not one per
 * stream: thousands of deletes at once would queue on the pool. Stopped with the hub: every
 * place of the instance is freed in one statement.
 */
import { randomUUID } from 'node:crypto';
import type { MikroORM } from '@mikro-orm/postgresql';
import { claimSlot, refreshSlots, releaseInstance, releaseSlots, type SlotLimits } from './stream-slots.ts';

export interface StreamSlots {
  /** The instance's id in `event_streams`. */
  readonly instance: string;
  /** A place for a stream of the account and session: its id, or null past a limit. */
  claim(accountId: string, sessionKey: string): Promise<string | null>;
  /** Frees a place (once; resolves when it is free, errors left to the row's expiry). */
  release(id: string): Promise<void>;
  /** Frees every place of this instance. */
  stop(): Promise<void>;
}

export function createStreamSlots(deps: {
  orm: MikroORM;
  limits: SlotLimits;
  refreshMs: number;
  onError?: (err: unknown) => void;
  /** Also run on each heartbeat (the streams' session check), awaited by the stop like the refresh. */
  onBeat?: () => Promise<void>;
}): StreamSlots {
  const { orm, limits } = deps;
  const instance = randomUUID();
  const held = new Set<string>();
  let beat: NodeJS.Timeout | undefined;
  let beating: Promise<void> | undefined;
  let stopped = false;
  const failed = (err: unknown) => deps.onError?.(err);
  /** Places to free in the next statement (one statement in flight at a time), and its outcome. */
  let pending: { ids: string[]; done: Promise<void> } | undefined;
  let inflight: Promise<void> = Promise.resolve();

  function free(id: string): Promise<void> {
    if (pending) {
      pending.ids.push(id);
      return pending.done;
    }
    const batch: { ids: string[]; done: Promise<void> } = { ids: [id], done: inflight };
    batch.done = inflight
      .then(() => new Promise<void>((resolve) => setImmediate(resolve)))
      .then(() => {
        if (pending === batch) pending = undefined;
        return stopped ? undefined : releaseSlots(orm.em.fork(), batch.ids).catch(failed);
      });
    pending = batch;
    inflight = batch.done;
    return batch.done;
  }

  function refresh() {
    if (beating || !held.size) return;
    beating = Promise.all([
      refreshSlots(orm.em.fork(), instance, [...held], limits.ttlMs).catch(failed),
      deps.onBeat?.().catch(failed),
    ])
      .then(() => undefined)
      .finally(() => (beating = undefined));
  }

  return {
    instance,
    async claim(accountId, sessionKey) {
      const id = randomUUID();
      if (!(await claimSlot(orm.em.fork(), { id, accountId, sessionKey, instance }, limits))) return null;
      if (stopped) {
        // Taken while the instance stopped (its rows were freed already): the hub ends the stream.
        await releaseSlots(orm.em.fork(), [id]).catch(failed);
        return id;
      }
      held.add(id);
      if (!beat) {
        beat = setInterval(refresh, deps.refreshMs);
        beat.unref();
      }
      return id;
    },
    async release(id) {
      if (!held.delete(id)) return;
      if (!held.size && beat) {
        clearInterval(beat);
        beat = undefined;
      }
      // After the stop, the instance's rows are gone already (one statement for all).
      if (!stopped) await free(id);
    },
    async stop() {
      stopped = true;
      if (beat) clearInterval(beat);
      beat = undefined;
      held.clear();
      await beating;
      // A statement freeing places may be on its way: it ends before the pool closes.
      await inflight;
      await releaseInstance(orm.em.fork(), instance).catch(failed);
    },
  };
}
