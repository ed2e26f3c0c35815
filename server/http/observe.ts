/**
 * An optional observer of every answer the service gives: method, path, status, headers and
 * body as sent, reported once the response is finished. It is the outermost middleware, so
 * it sees the error envelope, the rate-limit refusals and the plain routes alike (tests use
 * it to check every answer against /openapi.json). Off unless `startService({ observe })`
 * is given one; an observer that throws is logged and never disturbs the answer.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import { Stream } from 'node:stream';
import type Koa from 'koa';
import { errorSummary, type Logger } from '../infra/logger.ts';
import { PartsBody } from './parts-body.ts';

export interface ObservedAnswer {
  method: string;
  /** The request's path as received (no query string: it can carry OAuth codes). */
  path: string;
  status: number;
  /** The response headers as sent (lower-case names). */
  headers: Readonly<OutgoingHttpHeaders>;
  /** The body as sent, as text; undefined when none was sent or it was streamed. */
  body: string | undefined;
}

export type AnswerObserver = (answer: ObservedAnswer) => void;

/** The text Koa sends for a body (objects as JSON; a body in parts joined), or undefined for none or a stream. */
function sentText(ctx: Koa.Context, escaped: boolean): string | undefined {
  const body: unknown = ctx.body;
  if (escaped || ctx.method === 'HEAD' || ctx.respond === false || body == null) return undefined;
  if (body instanceof PartsBody) return Buffer.concat(body.parts).toString('utf8');
  if (body instanceof Stream) return undefined;
  if (typeof body === 'string') return body;
  if (Buffer.isBuffer(body)) return body.toString('utf8');
  return JSON.stringify(body);
}

export function observeAnswers(observe: AnswerObserver, log: Logger): Koa.Middleware {
  return async (ctx, next) => {
    // Set when an error escaped every middleware: Koa then answers on its own, not with ctx.body.
    let escaped = false;
    ctx.res.once('finish', () => {
      try {
        observe({
          method: ctx.method,
          path: ctx.path,
          status: ctx.res.statusCode,
          headers: ctx.res.getHeaders(),
          body: sentText(ctx, escaped),
        });
      } catch (err) {
        log.error(errorSummary(err), 'answer observer failed');
      }
    });
    try {
      await next();
    } catch (err) {
      escaped = true;
      throw err;
    }
  };
}
