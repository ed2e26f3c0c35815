/** A bench floor's HTTP server: listens on PORT (127.0.0.1), and on SIGTERM or SIGINT closes, ends its pool and exits 0. */
import type { Server } from 'node:http';
import type pg from 'pg';

export function serveUntilStopped(server: Server, pool: pg.Pool): void {
  server.keepAliveTimeout = 5_000;
  server.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
  const stop = () => {
    server.close(() => void pool.end().then(() => process.exit(0)));
    server.closeAllConnections();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
