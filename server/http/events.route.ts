/**
 * GET /api/mail/events: the account's live events as Server-Sent Events, served through the
 * `mail.events` procedure (a server-side caller), so the rate limit (counted once per
 * stream), the session check and the events are the subscription's own. Refusals (no
 * session, too many streams) are the JSON envelope, before the stream opens. Each event is
 * `id:`, `event:` (its type) and one `data:` line of JSON; a comment line every
 * `heartbeatMs` (the service's setting, 25 s by default) keeps idle connections open. `Last-Event-ID` resumes.
 *
 * Thousands of streams stay open, idle (a few tens of KiB each at most): the frames are written to
 * the response itself, not piped through a stream body of Koa's (a PassThrough, Koa's
 * pipeline and its finish listeners cost about 10 KiB a stream), and one timer beats for all.
 */
import type { ServerResponse } from 'node:http';
import type Koa from 'koa';
import type { MailEvent } from '../../shared/schemas/events.ts';
import type { AppRouter } from '../trpc/routers/index.ts';
import { createHeartbeat } from './heartbeat.ts';
import { requestContext, type RequestContextDeps } from './request-context.ts';

export const EVENTS_PATH = '/api/mail/events';

/** One event as the stream writes it. */
export function sseFrame(id: string, data: MailEvent): string {
  return `id: ${id}\nevent: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
}

function drained(res: ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    res.once('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

export function eventsRoute(appRouter: AppRouter, deps: RequestContextDeps): Koa.Middleware {
  const heartbeat = createHeartbeat(deps.services.events.heartbeatMs, ': ping\n\n');

  /** Writes the events to the response until either side ends. */
  async function pump(
    res: ServerResponse,
    events: AsyncIterable<{ id: string; data: MailEvent }>,
    abort: AbortController,
    log: RequestContextDeps['log'],
  ) {
    heartbeat.add(res);
    try {
      // The head on its own, before the first event: Node then writes the header string it
      // keeps for the response's life as it is, flat (about 1.4 KiB a stream less than pieces).
      res.flushHeaders();
      for await (const item of events) {
        // A server-side caller yields tracked() envelopes as they are: [id, data, symbol].
        const [id, data] = Array.isArray(item) ? (item as unknown as [string, MailEvent]) : [item.id, item.data];
        // A slow reader: wait for the socket (the stream coalesces what happens meanwhile).
        if (!res.write(sseFrame(id, data))) await drained(res, abort.signal);
        if (abort.signal.aborted) break;
      }
    } catch (err) {
      log.warn({ err: (err as Error).name }, 'event stream failed');
    } finally {
      heartbeat.delete(res);
      abort.abort();
      res.end();
    }
  }

  return async (ctx, next) => {
    if (ctx.path.toLowerCase() !== EVENTS_PATH || ctx.method !== 'GET') return next();
    ctx.state.procedurePath = 'mail.events';
    const abort = new AbortController();
    // The response closes when the connection does (the client went away), or once it ended.
    ctx.res.once('close', () => abort.abort());
    const header = ctx.get('Last-Event-ID');
    const caller = appRouter.createCaller(requestContext(ctx, deps), { signal: abort.signal });
    // Throws (AUTH_REQUIRED, RATE_LIMITED, VALIDATION_FAILED) before anything is written.
    const events = await caller.mail.events(header ? { lastEventId: header } : undefined);

    ctx.req.socket.setTimeout(0);
    ctx.req.socket.setNoDelay(true);
    ctx.status = 200;
    ctx.type = 'text/event-stream';
    ctx.set('Cache-Control', 'no-store');
    ctx.set('X-Accel-Buffering', 'no');
    // Written by this route, started by the outermost middleware once every other one has run.
    ctx.respond = false;
    const log = ctx.state.log ?? deps.log;
    ctx.state.startStream = () => {
      if (ctx.status === 200 && ctx.body == null) return void pump(ctx.res, events, abort, log);
      // Replaced by an error envelope: Koa sends that, and the stream is let go.
      ctx.respond = true;
      abort.abort();
    };
  };
}
