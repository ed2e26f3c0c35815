/**
 * The floor for the sync's CPU: an incremental sync with nothing but the work itself. It makes
 * the service's provider calls (history.list from the stored checkpoint, then messages.get
 * format=metadata with the same headers and fields, 25 at a time) with Node's own undici (its
 * fetch; the `undici` package is not a dependency), and the same writes with plain `pg` in one
 * transaction: threads and messages upserted in one statement (as mail-store.ts does), the
 * touched threads' aggregates recomputed, the checkpoint moved. No lease, credentials, job
 * engine, ORM, validation or live event.
 *
 *   PORT=… DATABASE_URL=… GMAIL_API_URL=… node bench/floor/sync-floor.server.ts
 *   POST /sync  {"accounts":[{"accountId":"…","token":"…"}],"concurrency":1}  -> {"syncs":n,"stored":n,"providerBytes":n}
 */
import { createServer } from 'node:http';
import pg from 'pg';
import { ormOptions } from '../../db/mikro-orm.config.ts';
import { UPSERT_SQL, REFRESH_SQL, CHECKPOINT_SQL, toRow, type WireMeta } from './sync-floor.sql.ts';
import { serveUntilStopped } from '../infra/serve.infra.ts';

const url = process.env.DATABASE_URL;
const gmailUrl = process.env.GMAIL_API_URL;
if (!url || !gmailUrl) throw new Error('DATABASE_URL and GMAIL_API_URL are required');
const orm = ormOptions(url);
const pool = new pg.Pool({ ...(orm.driverOptions as pg.PoolConfig), connectionString: url, max: orm.pool?.max ?? 10 });
const users = new URL('gmail/v1/users/me/', gmailUrl);
const META =
  'format=metadata&metadataHeaders=From&metadataHeaders=Subject&metadataHeaders=Date&fields=id%2CthreadId%2ClabelIds%2Csnippet%2CinternalDate%2Cpayload%2Fheaders';

/** Bytes of the provider's answers so far (bodies as received), reported with each /sync. */
let providerBytes = 0;

async function get<T>(path: string, token: string): Promise<T> {
  const res = await fetch(new URL(path, users), { headers: { authorization: `Bearer ${token}` } });
  if (!res.ok) throw new Error(`${path.split('?')[0]} answered ${res.status}`);
  const text = await res.text();
  providerBytes += Buffer.byteLength(text);
  return JSON.parse(text) as T;
}

async function mapLimit<T, R>(xs: T[], limit: number, fn: (x: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(xs.length);
  let next = 0;
  const worker = async () => {
    while (next < xs.length) {
      const i = next++;
      out[i] = await fn(xs[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, xs.length) }, worker));
  return out;
}

interface History {
  history?: { messagesAdded?: { message: { id: string; labelIds?: string[] } }[] }[];
  historyId: string;
}

/** One incremental sync of one account; the number of messages stored. */
async function syncAccount(accountId: string, token: string): Promise<number> {
  const { rows } = await pool.query<{ history_id: string | null }>(
    'select history_id from sync_states where account_id = $1',
    [accountId],
  );
  const from = rows[0]?.history_id;
  if (!from) throw new Error(`account ${accountId} has no checkpoint`);
  const history = await get<History>(`history?startHistoryId=${from}&maxResults=500`, token);
  const ids = [
    ...new Set(
      (history.history ?? []).flatMap((h) =>
        (h.messagesAdded ?? []).filter((a) => a.message.labelIds?.includes('INBOX')).map((a) => a.message.id),
      ),
    ),
  ];
  const metas = await mapLimit(ids, 25, (id) => get<WireMeta>(`messages/${id}?${META}`, token));
  const client = await pool.connect();
  try {
    await client.query('begin');
    if (metas.length) {
      const touched = await client.query<{ thread_id: string }>(UPSERT_SQL, [
        JSON.stringify(metas.map(toRow)),
        accountId,
      ]);
      await client.query(REFRESH_SQL, [[...new Set(touched.rows.map((r) => r.thread_id))]]);
    }
    await client.query(CHECKPOINT_SQL, [accountId, history.historyId]);
    await client.query('commit');
  } catch (err) {
    await client.query('rollback').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
  return metas.length;
}

const server = createServer((req, res) => {
  if (req.url === '/health') return void res.end('{"ok":true}');
  if (req.method !== 'POST' || req.url !== '/sync') return void res.writeHead(404).end();
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const body = JSON.parse(Buffer.concat(chunks).toString()) as {
      accounts: { accountId: string; token: string }[];
      concurrency?: number;
    };
    const bytesBefore = providerBytes;
    mapLimit(body.accounts, body.concurrency ?? 1, (a) => syncAccount(a.accountId, a.token)).then(
      (stored) =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            syncs: stored.length,
            stored: stored.reduce((x, y) => x + y, 0),
            providerBytes: providerBytes - bytesBefore,
          }),
        ),
      (err: unknown) => res.writeHead(500).end(String(err)),
    );
  });
});
serveUntilStopped(server, pool);
