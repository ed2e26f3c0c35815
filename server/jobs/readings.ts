/** The live inbox's state as GET /metrics reports it: queue depths and the accounts' sync lag. */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { ClusterReadings } from '../infra/metrics.ts';
import { QUEUES, type JobEngine } from './engine.ts';

export function liveInboxReadings(orm: MikroORM, engine: Pick<JobEngine, 'count'>): ClusterReadings {
  return {
    async queueDepth() {
      const names = Object.values(QUEUES);
      const counts = await Promise.all(names.map((name) => engine.count(name)));
      return Object.fromEntries(names.map((name, i) => [name, counts[i]!]));
    },
    async syncState() {
      const [row] = await orm.em.getConnection().execute<{ lag: number; backlog: number; set_aside: number; watches_expiring: number }[]>(
        `select coalesce(extract(epoch from max(now() - coalesce(s.last_synced_at, a.created_at))), 0)::float8 as lag,
                count(*) filter (where s.last_notification_at > coalesce(s.last_synced_at, '-infinity'))::int as backlog,
                count(*) filter (where s.set_aside_at is not null)::int as set_aside,
                count(*) filter (where s.watch_expires_at < now() + interval '48 hours'
                                   and coalesce(s.watch_renewed_at, '-infinity') < now() - interval '24 hours')::int as watches_expiring
           from accounts a join credentials c on c.account_id = a.id join sync_states s on s.account_id = a.id
          where not a.needs_reconnect`,
      );
      return {
        maxLagSeconds: Math.round(row?.lag ?? 0),
        backlogAccounts: row?.backlog ?? 0,
        setAsideAccounts: row?.set_aside ?? 0,
        watchesExpiringAccounts: row?.watches_expiring ?? 0,
      };
    },
  };
}
