/**
 * Which of an instance's workers a new job wakes. pg-boss's own listener wakes every worker of
 * the queue for each job that lands: eight idle workers made eight fetches for one notified
 * sync, seven of them empty (the dearest statement of the job path; bench item 11, figures in
 * bench/results/HISTORY.md), and each instance's eight did so for every job of the cluster. Here the instance
 * listens itself (pg-listener.ts, on the channel pg-boss notifies for a queue that asks for it)
 * and wakes one idle worker per job, in turn; when all are busy, the first to finish fetches at
 * once. After a reconnect every worker fetches once (what landed meanwhile is unknown).
 */
import { createHash } from 'node:crypto';
import type { Logger } from '../infra/logger.ts';
import { createPgListener, type PgListener } from '../infra/pg-listener.ts';

export interface WakePolicy {
  /** A job landed on the queue. */
  heard(): void;
  /** A worker took jobs, and finished them. */
  started(workerId: string): void;
  finished(workerId: string): void;
  /** The listener was away: every worker fetches once. */
  wakeAll(): void;
}

/** The policy over the workers' ids; `notify` makes one fetch now (pg-boss's notifyWorker). */
export function createWakePolicy(workerIds: readonly string[], notify: (workerId: string) => void): WakePolicy {
  const busy = new Set<string>();
  let next = 0;
  /** A job was heard while every worker was busy. */
  let owed = false;
  return {
    heard() {
      for (let i = 0; i < workerIds.length; i++) {
        const id = workerIds[(next + i) % workerIds.length]!;
        if (busy.has(id)) continue;
        next = (next + i + 1) % workerIds.length;
        notify(id);
        return;
      }
      owed = true;
    },
    started: (id) => void busy.add(id),
    finished(id) {
      busy.delete(id);
      if (!owed) return;
      owed = false;
      notify(id);
    },
    wakeAll: () => workerIds.forEach((id) => notify(id)),
  };
}

/**
 * The channel pg-boss notifies on for a schema (its `notifyChannelSql`: 'pgboss_' and the first
 * 24 hex digits of the name's SHA-224). A test fails if a job no longer wakes a worker.
 */
export const notifyChannel = (schema: string) =>
  `pgboss_${createHash('sha224').update(schema).digest('hex').slice(0, 24)}`;

/** Listens on `channel` and tells each queue's policy when one of its jobs lands. */
export function listenForJobs(deps: {
  databaseUrl: string;
  log: Logger;
  channel: string;
  policies: Map<string, WakePolicy>;
}): PgListener {
  return createPgListener({
    databaseUrl: deps.databaseUrl,
    log: deps.log,
    what: 'job wake-ups',
    channels: [deps.channel],
    hear: (_channel, queue) => deps.policies.get(queue ?? '')?.heard(),
    reconnected: () => deps.policies.forEach((p) => p.wakeAll()),
  });
}
