/** Listening and graceful stop: refuse new connections, let in-flight requests finish. */
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { Server as NetServer } from 'node:net';
import type { Duplex } from 'node:stream';
import type Koa from 'koa';
import { invalidInput } from '../domain/errors.ts';
import { renderEnvelope } from './envelope.ts';

/**
 * Requests Node refuses before Koa sees them (headers too large, malformed HTTP) still get
 * the envelope, instead of Node's bare 400/431 reply.
 */
function answerClientError(err: Error & { code?: string }, socket: Duplex) {
  if (!socket.writable) return socket.destroy();
  const requestId = randomUUID();
  const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
  const rendered = renderEnvelope(invalidInput(tooLarge ? 'headers_too_large' : 'malformed_request'), requestId);
  const body = JSON.stringify(rendered.body);
  socket.end(
    `HTTP/1.1 ${rendered.status} Bad Request\r\nContent-Type: application/json\r\n` +
      `X-Request-Id: ${requestId}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/** Connections an instance accepts beyond its streams' cap: ordinary requests, idle keep-alive sockets among them. */
export const CONNECTIONS_BEYOND_STREAMS = 2_000;

export interface RunningServer extends Server {
  stop(graceMs?: number): Promise<void>;
}

/**
 * `bound`: a socket already listening (its port known before the config was built) to take over instead of binding anew.
 * `maxConnections`: past it Node closes a new connection at once, so sockets (and file descriptors) stay bounded
 * whatever the clients do; set above the streams' cap (each open stream holds one) with room for ordinary requests.
 */
export function listen(
  app: Koa,
  port: number,
  host: string,
  bound?: NetServer,
  maxConnections?: number,
): Promise<RunningServer> {
  const server = createServer(app.callback()) as RunningServer;
  server.keepAliveTimeout = 5_000;
  if (maxConnections) server.maxConnections = maxConnections;
  // No inactivity timeout on sockets (server.timeout stays 0): a slow request bounded by Node's own
  // headersTimeout (60 s) and requestTimeout (300 s) is cut already; an idle one is by keepAliveTimeout;
  // a stream is idle between events by design and ends with its session or its longest life.
  server.on('clientError', answerClientError);
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
    if (bound) server.listen(bound, () => resolve(server));
    else server.listen(port, host, () => resolve(server));
  });
}
