/** Listening and graceful stop: refuse new connections, let in-flight requests finish. */
import { createServer, type Server } from 'node:http';
import type Koa from 'koa';

export interface RunningServer extends Server {
  stop(graceMs?: number): Promise<void>;
}

export function listen(app: Koa, port: number, host: string): Promise<RunningServer> {
  const server = createServer(app.callback()) as RunningServer;
  server.keepAliveTimeout = 5_000;
  server.stop = (graceMs = 10_000) =>
    new Promise<void>((resolve) => {
      const force = setTimeout(() => server.closeAllConnections(), graceMs).unref();
      // A keep-alive connection busy when the stop began turns idle once its response is
      // sent; close it then, instead of waiting keepAliveTimeout for the client to leave.
      const sweep = setInterval(() => server.closeIdleConnections(), 100).unref();
      server.close(() => {
        clearTimeout(force);
        clearInterval(sweep);
        resolve();
      });
      server.closeIdleConnections();
    });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}
