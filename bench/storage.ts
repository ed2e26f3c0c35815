/**
 * What the stored mail takes on disk at the end of a run: each mail table's bytes (heap, TOAST
 * and indexes) per row, and the average row of the messages the service itself synced (their
 * snippet, subject and labels as the stand-in served them; the seeded rows are shorter).
 */
import type pg from 'pg';

export interface StorageReading {
  tables: {
    table: string;
    rows: number;
    heapBytes: number;
    toastBytes: number;
    indexBytes: number;
    bytesPerRow: number;
  }[];
  /** Average pg_column_size of message rows the service synced (not seeded), with and without bodies. */
  syncedMessageRowBytes: { metadataOnly: number | null; withBodies: number | null; rows: number };
}

export async function readStorage(pool: pg.Pool): Promise<StorageReading> {
  await pool.query('/*bench*/ analyze mail_messages, mail_threads, sync_states, accounts');
  const { rows } = await pool.query<{ table: string; rows: string; heap: string; toast: string; index: string }>(
    `/*bench*/ select c.relname as table, greatest(c.reltuples, 0)::bigint as rows,
       pg_relation_size(c.oid) as heap, coalesce(pg_total_relation_size(nullif(c.reltoastrelid, 0)), 0) as toast, pg_indexes_size(c.oid) as index
     from pg_class c where c.relname in ('mail_messages', 'mail_threads', 'sync_states', 'accounts', 'mail_set_aside') and c.relkind = 'r'`,
  );
  const synced = (
    await pool.query<{ meta: string | null; bodies: string | null; n: string }>(
      `/*bench*/ select avg(pg_column_size(m.*)) filter (where body_fetched_at is null) as meta, avg(pg_column_size(m.*)) filter (where body_fetched_at is not null) as bodies, count(*) as n
     from mail_messages m where from_address not in ('bob@partner.example', 'billing@supplier.example')`,
    )
  ).rows[0]!;
  return {
    tables: rows.map((r) => {
      const n = Math.max(1, Number(r.rows));
      return {
        table: r.table,
        rows: Number(r.rows),
        heapBytes: Number(r.heap),
        toastBytes: Number(r.toast),
        indexBytes: Number(r.index),
        bytesPerRow: Math.round((Number(r.heap) + Number(r.toast) + Number(r.index)) / n),
      };
    }),
    syncedMessageRowBytes: {
      metadataOnly: synced.meta === null ? null : Math.round(Number(synced.meta)),
      withBodies: synced.bodies === null ? null : Math.round(Number(synced.bodies)),
      rows: Number(synced.n),
    },
  };
}

export function renderStorage(s: StorageReading): string[] {
  const out = [
    '## Storage — the mail tables at the end of the run',
    '',
    '| table | rows | heap | TOAST | indexes | bytes per row, all included |',
    '|---|---:|---:|---:|---:|---:|',
  ];
  const mib = (b: number) => `${(b / 2 ** 20).toFixed(1)} MiB`;
  for (const t of s.tables)
    out.push(
      `| ${t.table} | ${t.rows} | ${mib(t.heapBytes)} | ${mib(t.toastBytes)} | ${mib(t.indexBytes)} | ${t.rows ? t.bytesPerRow : 'n/a'} |`,
    );
  out.push('');
  const m = s.syncedMessageRowBytes;
  out.push(
    `Message rows the service synced itself (${m.rows}; the seeded ones are shorter): ${m.metadataOnly ?? 'n/a'} bytes on average with metadata only, ${m.withBodies ?? 'n/a'} bytes with bodies fetched (pg_column_size, before TOAST compression of large bodies is counted in the table above).`,
  );
  out.push('');
  return out;
}
