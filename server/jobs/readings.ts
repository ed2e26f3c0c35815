/** The live inbox's state as GET /metrics reports it: queue depths and the accounts' sync lag. */
import type { MikroORM } from '@mikro-orm/postgresql';
import { readSyncGauges } from '../domain/mail/sync/states/index.ts';
import type { ClusterReadings } from '../infra/metrics.ts';
import { QUEUES, type JobEngine } from './engine.ts';

export function liveInboxReadings(orm: MikroORM, engine: Pick<JobEngine, 'depth'>): ClusterReadings {
  return {
    async queueDepth() {
      const names = Object.values(QUEUES);
      const counts = await Promise.all(names.map((name) => engine.depth(name)));
      return Object.fromEntries(names.map((name, i) => [name, counts[i]!]));
    },
    syncState: () => readSyncGauges(orm.em.getConnection()),
  };
}
