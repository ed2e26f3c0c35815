/**
 * The service's side of tracing, free of OpenTelemetry: what the logger, the request metrics,
 * the job engine, the sync worker and the intake call. Until `installTraceHooks` runs (only
 * when tracing is configured: infra/tracing.ts, loaded by main.ts) every function here is a
 * no-op that loads nothing, so an instance without tracing pays one `undefined` check.
 *
 * Process-wide on purpose: OpenTelemetry's own registry (one tracer provider, one context
 * manager per process) is, and this mirrors it without importing it.
 */

export type SpanAttributes = Record<string, string | number | boolean>;

export interface SpanOptions {
  kind?: 'internal' | 'consumer' | 'producer';
  /** A W3C traceparent this span follows from (a job's enqueuer), recorded as a link. */
  linkTo?: string;
}

/** What the server span of a request is made of (a Koa context is one). */
export interface TracedRequest {
  readonly method: string;
  readonly path: string;
  readonly querystring: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** Read when the request is done. */
  readonly status: number;
}

export interface TraceHooks {
  /** Runs the handling of a request in its server span (a child of the caller's traceparent, when one is sent and TRUST_TRACEPARENT trusts it). */
  serveRequest(req: TracedRequest, fn: () => Promise<void>): Promise<void>;
  /** The active span's ids for a log line, if a span is active. */
  logFields(): { trace_id: string; span_id: string } | undefined;
  /** Names the request's server span after its route template and tRPC procedure. */
  nameRequest(method: string, route: string | undefined, procedure: string | undefined): void;
  /** Runs `fn` in a new span, a child of the active one. */
  inSpan<T>(name: string, attributes: SpanAttributes, fn: () => Promise<T>, opts?: SpanOptions): Promise<T>;
  /** The active span as a W3C traceparent (for a job to carry), if one is active. */
  traceparent(): string | undefined;
}

let hooks: TraceHooks | undefined;

export function installTraceHooks(h: TraceHooks | undefined): void {
  hooks = h;
}

/** Whether tracing runs in this process. */
export const tracing = (): boolean => hooks !== undefined;

export function traceRequest(req: TracedRequest, fn: () => Promise<void>): Promise<void> {
  return hooks ? hooks.serveRequest(req, fn) : fn();
}

export const traceLogFields = (): { trace_id: string; span_id: string } | undefined => hooks?.logFields();

export function nameRequestSpan(method: string, route: string | undefined, procedure: string | undefined): void {
  hooks?.nameRequest(method, route, procedure);
}

export function inSpan<T>(
  name: string,
  attributes: SpanAttributes,
  fn: () => Promise<T>,
  opts?: SpanOptions,
): Promise<T> {
  return hooks ? hooks.inSpan(name, attributes, fn, opts) : fn();
}

export const currentTraceparent = (): string | undefined => hooks?.traceparent();
