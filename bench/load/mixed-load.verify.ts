/**
 * After the mixed load: were writes lost? Analytics events acknowledged but not stored, and, after
 * a final drain of every account, upstream inbox messages missing from the store or stored twice.
 */
import type { GmailStandIn } from '../../stand-ins/gmail.stand-in.ts';
import { csrf } from '../../harness/client.ts';
import { sql } from '../../harness/pg-cluster.ts';
import type { ServiceProcess } from '../../harness/service-process.ts';
import { sleep } from '../../harness/wait.ts';
import type { Account, Sample } from './mixed-load.model.ts';

export interface Writes {
  acknowledged: string[];
  analyticsMissing: number;
  upstreamMessages: number;
  upstreamMissing: number;
  duplicates: number;
}

export async function verifyWrites(
  dbUrl: string,
  service: ServiceProcess,
  accounts: Account[],
  samples: Sample[],
  gmail: GmailStandIn,
): Promise<Writes> {
  const acknowledged = samples.filter((s) => s.route === 'analytics' && s.status === 200).map((s) => s.key!);
  const storedKeys = new Set(
    (
      await sql<{ anonymous_id: string }>(
        dbUrl,
        'select anonymous_id from analytics_events where anonymous_id = any($1::uuid[])',
        [acknowledged],
      )
    ).map((r) => r.anonymous_id),
  );
  const analyticsMissing = acknowledged.filter((k) => !storedKeys.has(k)).length;

  // Final drain: leases cut off by the restart are left to expire (simulated), then every
  // account syncs to the end; the store must then hold each provider inbox exactly.
  await sql(dbUrl, "update sync_states set lease_until = now() - interval '1 second' where lease_until is not null");
  for (const [i, acc] of accounts.entries()) {
    if (!service.alive) break;
    for (let k = 0; k < 20; k++) {
      const r = await fetch(`${service.url}/api/mail/sync`, {
        method: 'POST',
        headers: { Cookie: acc.cookie, ...csrf(acc.csrfToken), 'X-Forwarded-For': `172.18.${i}.${k}` },
      });
      const b = await r.json();
      if (r.status === 429 && b.error.code === 'RATE_LIMITED') {
        await sleep(500);
        continue;
      }
      if (r.status !== 200 || !b.hasMore) break;
    }
  }
  let upstreamMessages = 0;
  let upstreamMissing = 0;
  for (const acc of accounts) {
    const inbox = gmail.inbox(acc.email).map((m) => m.id);
    upstreamMessages += inbox.length;
    const rows = await sql<{ id: string }>(
      dbUrl,
      'select m.provider_message_id as id from mail_messages m join accounts a on a.id = m.account_id where a.email = $1 and m.in_inbox',
      [acc.email],
    );
    const have = new Set(rows.map((r) => r.id));
    upstreamMissing += inbox.filter((id) => !have.has(id)).length;
  }
  const [{ n: duplicates }] = await sql<{ n: number }>(
    dbUrl,
    'select count(*)::int as n from (select 1 from mail_messages group by account_id, provider_message_id having count(*) > 1) d',
  );
  return { acknowledged, analyticsMissing, upstreamMessages, upstreamMissing, duplicates };
}
