/**
 * GET /api/mail/events: the account's live events as Server-Sent Events, served through the
 * `mail.events` procedure (a server-side caller), so the rate limit (counted once per
 * stream), the session check and the events are the subscription's own. Refusals (no
 * session, too many streams) are the JSON envelope, before the stream opens. Each event is
 * `id:`, `event:` (its type) and one `data:` line of JSON; a comment line every
 * `heartbeatMs` (the service's setting, 25 s by default) keeps idle connections open. `Last-Event-ID` resumes.
 */
import { PassThrough } from 'node:stream';
import type Koa from 'koa';
import type { MailEvent } from '../../shared/schemas/events.ts';
import type { AppRouter } from '../trpc/routers/index.ts';
import { requestContext, type RequestContextDeps } from './request-context.ts';

export const EVENTS_PATH = '/api/mail/events';

/** One event as the stream writes it. */
export function sseFrame(id: string, data: MailEvent): string {
  return `id: ${id}\nevent: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`;
}

function drained(body: PassThrough, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      body.off('drain', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    body.once('drain', done);
    signal.addEventListener('abort', done, { once: true });
  });
}

export function eventsRoute(appRouter: AppRouter, deps: RequestContextDeps): Koa.Middleware {
  const { heartbeatMs } = deps.services.events;
  return async (ctx, next) => {
    if (ctx.path.toLowerCase() !== EVENTS_PATH || ctx.method !== 'GET') return next();
    ctx.state.procedurePath = 'mail.events';
    const abort = new AbortController();
    ctx.req.once('close', () => abort.abort());
    ctx.res.once('close', () => abort.abort());
    const header = ctx.get('Last-Event-ID');
    const caller = appRouter.createCaller(requestContext(ctx, deps), { signal: abort.signal });
    // Throws (AUTH_REQUIRED, RATE_LIMITED, VALIDATION_FAILED) before anything is written.
    const events = await caller.mail.events(header ? { lastEventId: header } : undefined);

    const body = new PassThrough();
    ctx.req.socket.setTimeout(0);
    ctx.req.socket.setNoDelay(true);
    ctx.status = 200;
    ctx.type = 'text/event-stream';
    ctx.set('Cache-Control', 'no-store');
    ctx.set('X-Accel-Buffering', 'no');
    ctx.body = body;
    const heartbeat = setInterval(() => body.write(': ping\n\n'), heartbeatMs);
    heartbeat.unref();
    void (async () => {
      try {
        for await (const item of events) {
          // A server-side caller yields tracked() envelopes as they are: [id, data, symbol].
          const [id, data] = Array.isArray(item) ? (item as unknown as [string, MailEvent]) : [item.id, item.data];
          // A slow reader: wait for the socket (the stream coalesces what happens meanwhile).
          if (!body.write(sseFrame(id, data))) await drained(body, abort.signal);
          if (abort.signal.aborted) break;
        }
      } catch (err) {
        ctx.state.log?.warn({ err: (err as Error).name }, 'event stream failed');
      } finally {
        clearInterval(heartbeat);
        abort.abort();
        body.end();
      }
    })();
  };
}
