/**
 * OpenTelemetry tracing, imported by main.ts only when the OTEL_* variables ask for it (config's
 * `tracing.enabled`), and before the rest of the service: its instrumentations patch `http`,
 * `pg` and `@grpc/grpc-js` as those modules load (undici's `fetch` is traced through its
 * diagnostics channel). An instance without tracing loads none of this.
 *
 * Spans: each request (its server span, opened by the request-id middleware and named after
 * its route template, with its tRPC procedure; not the /health and /metrics probes) with the
 * SQL statements and provider calls made for it (fetch: OAuth, Gmail, OpenAI; http: the Google
 * clients; gRPC: Pub/Sub), pg-boss's own spans, the intake's notification batches and each sync
 * job (trace-hooks.ts). Work without a parent span (the engine's and the intake's polling) is
 * not traced. Every span is scrubbed as it ends (trace-scrub.ts); headers, bodies and SQL
 * parameter values are never recorded.
 *
 * The server span is the service's own rather than the http instrumentation's: that one bound
 * every request and response emitter to the context and parsed every header, and cost a list
 * request more than its SQL spans did (bench item 10).
 *
 * Configured by the standard variables: OTEL_TRACES_EXPORTER (otlp | console),
 * OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL (http/protobuf | http/json | grpc), ..._ENDPOINT,
 * ..._HEADERS, ..._TIMEOUT (read by the exporter), OTEL_BSP_*, OTEL_TRACES_SAMPLER[_ARG],
 * OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES (read by the SDK). Traces only: metrics stay on
 * GET /metrics and logs on stdout.
 */
import {
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  TraceFlags,
  type Link,
} from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace';
import { installTraceHooks, type SpanOptions } from './trace-hooks.ts';
import { scrubSpan } from './trace-scrub.ts';

export interface Tracing {
  /** What the log line about it says: exporter and protocol. */
  readonly exporter: string;
  /** Flushes the spans still buffered and stops exporting. */
  stop(): Promise<void>;
}

/** Answers nobody needs a trace of, asked every few seconds by probes and scrapers. */
const PROBES = new Set(['/health', '/metrics']);
const KINDS = { internal: SpanKind.INTERNAL, consumer: SpanKind.CONSUMER, producer: SpanKind.PRODUCER } as const;
const w3c = new W3CTraceContextPropagator();

const numberFrom = (v: string | undefined) => (v && /^\d+$/.test(v) ? Number(v) : undefined);

/** The span exporter the variables name, and how it is described in the start-up log line. */
async function exporterFromEnv(
  env: NodeJS.ProcessEnv,
): Promise<{ exporter: SpanExporter; batch: boolean; name: string }> {
  const { ConsoleSpanExporter } = await import('@opentelemetry/sdk-trace');
  if (env.OTEL_TRACES_EXPORTER?.trim() === 'console')
    return { exporter: new ConsoleSpanExporter(), batch: false, name: 'console' };
  const protocol =
    (env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? env.OTEL_EXPORTER_OTLP_PROTOCOL)?.trim() || 'http/protobuf';
  // Only the chosen one is loaded (the gRPC exporter brings @grpc/grpc-js with it).
  const { OTLPTraceExporter } =
    protocol === 'grpc'
      ? await import('@opentelemetry/exporter-trace-otlp-grpc')
      : protocol === 'http/json'
        ? await import('@opentelemetry/exporter-trace-otlp-http')
        : await import('@opentelemetry/exporter-trace-otlp-proto');
  return { exporter: new OTLPTraceExporter(), batch: true, name: `otlp ${protocol}` };
}

/** Intercepts the ESM imports of the instrumented modules only (CommonJS ones are patched through require). */
async function hookModules(names: string[]): Promise<void> {
  const iitm = await import('import-in-the-middle/register-hooks.mjs');
  if (iitm.supportsSyncHooks()) {
    iitm.register({ include: names });
    return;
  }
  const { register } = await import('node:module');
  register('import-in-the-middle/hook.mjs', import.meta.url, { data: { include: names } });
}

function linksTo(traceparent: string | undefined): Link[] | undefined {
  if (!traceparent) return undefined;
  const parent = trace.getSpanContext(
    w3c.extract(context.active(), { traceparent }, { get: (c, k) => c[k], keys: (c) => Object.keys(c) }),
  );
  return parent && trace.isSpanContextValid(parent) ? [{ context: parent }] : undefined;
}

const errorType = (err: unknown) => {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : err instanceof Error ? err.name : 'unknown';
};

/**
 * `trustTraceparent` (TRUST_TRACEPARENT): continue a request's incoming `traceparent`. Off, a
 * request always starts a trace of its own: under a parent-based sampler a client's header would
 * force its requests to be sampled (exported at its will) and pick the trace id written into log lines.
 */
export async function startTracing(
  env: NodeJS.ProcessEnv = process.env,
  opts: { trustTraceparent?: boolean } = {},
): Promise<Tracing> {
  const [{ HttpInstrumentation }, { UndiciInstrumentation }, { PgInstrumentation }, { GrpcInstrumentation }] =
    await Promise.all([
      import('@opentelemetry/instrumentation-http'),
      import('@opentelemetry/instrumentation-undici'),
      import('@opentelemetry/instrumentation-pg'),
      import('@opentelemetry/instrumentation-grpc'),
    ]);
  const instrumentations = [
    new HttpInstrumentation({ disableIncomingRequestInstrumentation: true, requireParentforOutgoingSpans: true }),
    new UndiciInstrumentation({ requireParentforSpans: true }),
    new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true, enhancedDatabaseReporting: false }),
    // The intake's pull waits for notifications (a span per idle wait would bury the rest); acks are traced.
    new GrpcInstrumentation({ ignoreGrpcMethods: ['Pull'] }),
  ];
  await hookModules([...new Set(instrumentations.flatMap((i) => i.getModuleDefinitions().map((d) => d.name)))]);

  const [{ NodeSDK }, { BatchSpanProcessor, SimpleSpanProcessor }] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/sdk-trace'),
  ]);
  const { exporter, batch, name } = await exporterFromEnv(env);
  const scrubber: SpanProcessor = {
    onStart() {},
    onEnding: scrubSpan,
    onEnd() {},
    forceFlush: async () => {},
    shutdown: async () => {},
  };
  const exporting = batch
    ? new BatchSpanProcessor({
        exporter,
        maxQueueSize: numberFrom(env.OTEL_BSP_MAX_QUEUE_SIZE),
        maxExportBatchSize: numberFrom(env.OTEL_BSP_MAX_EXPORT_BATCH_SIZE),
        scheduledDelayMillis: numberFrom(env.OTEL_BSP_SCHEDULE_DELAY),
        exportTimeoutMillis: numberFrom(env.OTEL_BSP_EXPORT_TIMEOUT),
      })
    : new SimpleSpanProcessor({ exporter });
  const sdk = new NodeSDK({
    serviceName: env.OTEL_SERVICE_NAME ? undefined : 'mail-inbox-assistant',
    instrumentations,
    spanProcessors: [scrubber, exporting],
    metricReaders: [],
    logRecordProcessors: [],
  });
  sdk.start();

  const tracer = trace.getTracer('mail-inbox-assistant');
  installTraceHooks({
    serveRequest(req, fn) {
      if (PROBES.has(req.path)) return fn();
      // A trusted caller's traceparent (a proxy that sets or strips it) makes the request part of its trace.
      const parent = opts.trustTraceparent
        ? propagation.extract(ROOT_CONTEXT, req.headers, defaultTextMapGetter)
        : ROOT_CONTEXT;
      const span = tracer.startSpan(
        req.method,
        { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method } },
        parent,
      );
      // A request the sampler left out costs no more than its context.
      if (!span.isRecording()) return context.with(trace.setSpan(parent, span), fn);
      span.setAttribute('url.path', req.path);
      if (req.querystring) span.setAttribute('url.query', req.querystring); // redacted when it ends (trace-scrub.ts)
      return context.with(trace.setSpan(parent, span), async () => {
        try {
          await fn();
        } finally {
          span.setAttribute('http.response.status_code', req.status);
          if (req.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
          span.end();
        }
      });
    },
    logFields() {
      const span = trace.getActiveSpan();
      if (!span) return undefined;
      const { traceId, spanId, traceFlags } = span.spanContext();
      // Ids of a trace the sampler left out would point at nothing.
      return traceFlags & TraceFlags.SAMPLED ? { trace_id: traceId, span_id: spanId } : undefined;
    },
    nameRequest(method, route, procedure) {
      // Called by the request metrics, inside the request's server span.
      const span = trace.getActiveSpan();
      if (!span) return;
      if (route) span.updateName(`${method} ${route}`).setAttribute('http.route', route);
      if (procedure) span.setAttributes({ 'rpc.system': 'trpc', 'rpc.method': procedure });
    },
    inSpan<T>(
      spanName: string,
      attributes: Record<string, string | number | boolean>,
      fn: () => Promise<T>,
      opts?: SpanOptions,
    ) {
      return tracer.startActiveSpan(
        spanName,
        { kind: KINDS[opts?.kind ?? 'internal'], attributes, links: linksTo(opts?.linkTo) },
        async (span) => {
          try {
            return await fn();
          } catch (err) {
            span.setAttribute('error.type', errorType(err));
            span.setStatus({ code: SpanStatusCode.ERROR });
            throw err;
          } finally {
            span.end();
          }
        },
      );
    },
    traceparent() {
      const carrier: Record<string, string> = {};
      w3c.inject(context.active(), carrier, defaultTextMapSetter);
      return carrier.traceparent;
    },
  });

  return {
    exporter: name,
    async stop() {
      installTraceHooks(undefined);
      await sdk.shutdown();
    },
  };
}
