/**
 * The floor for the thread-list benchmark: a bare Koa handler that runs the service's own
 * list statement (imported: the same named prepared statement) through the same driver (pg,
 * a pool of the ORM's size and connection settings) and answers the same JSON body. No
 * session, rate limit, validation or middleware: what serving that query costs at the least.
 *
 *   PORT=… DATABASE_URL=… node bench/bare-server.ts
 *   GET /api/mail/threads?account=<uuid>&limit=50&offset=0
 */
import { createServer } from 'node:http';
import Koa from 'koa';
import pg from 'pg';
import {
  LIST_THREADS,
  listThreadsParams,
  toThreadList,
  type ThreadListRow,
} from '../server/domain/mail/threads/thread.service.ts';
import { ormOptions } from '../db/mikro-orm.config.ts';
import { serveUntilStopped } from './infra/serve.infra.ts';

const url = process.env.DATABASE_URL;
if (!url) throw new Error('DATABASE_URL is required');
const orm = ormOptions(url);
// The ORM pool's size and connection settings (timeouts, plan cache mode).
const pool = new pg.Pool({ ...(orm.driverOptions as pg.PoolConfig), connectionString: url, max: orm.pool?.max ?? 10 });

const app = new Koa();
app.use(async (ctx) => {
  if (ctx.path === '/health') {
    ctx.body = { ok: true };
    return;
  }
  if (ctx.path !== '/api/mail/threads') {
    ctx.status = 404;
    return;
  }
  const page = { limit: Number(ctx.query.limit ?? 20), offset: Number(ctx.query.offset ?? 0) };
  const { rows } = await pool.query<ThreadListRow>({
    ...LIST_THREADS,
    values: listThreadsParams(String(ctx.query.account), page),
  });
  ctx.body = toThreadList(rows, page);
});

const server = createServer(app.callback());
serveUntilStopped(server, pool);
