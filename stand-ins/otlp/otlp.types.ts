/** What the OTLP stand-in hands a test: the spans it received, decoded into one shape whatever the wire format. */

export type AttributeValue = string | number | boolean | null | AttributeValue[] | { [key: string]: AttributeValue };

export interface ReceivedSpan {
  /** Hex, as the W3C traceparent writes them. */
  traceId: string;
  spanId: string;
  /** Absent on a root span. */
  parentSpanId?: string;
  name: string;
  /** OTLP's SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, AttributeValue>;
  events: { name: string; attributes: Record<string, AttributeValue> }[];
  links: { traceId: string; spanId: string; attributes: Record<string, AttributeValue> }[];
  /** 0 unset, 1 ok, 2 error. */
  status: { code: number; message?: string };
  /** The instrumentation scope's name (`@opentelemetry/instrumentation-pg`, `pg-boss`, …). */
  scope: string;
  resource: Record<string, AttributeValue>;
  startNs: bigint;
  endNs: bigint;
}

export interface OtlpStandIn {
  /** Base URL: what OTEL_EXPORTER_OTLP_ENDPOINT takes (the exporter posts to `${url}/v1/traces`). */
  readonly url: string;
  /** Every span received, in arrival order. */
  readonly spans: ReceivedSpan[];
  /** Every export request's body as text (protobuf bytes read as UTF-8: its strings are verbatim), for scanning. */
  readonly bodies: string[];
  /** Export requests received, by content type (`application/json`, `application/x-protobuf`). */
  readonly requests: Map<string, number>;
  /** Resolves with `pick(spans)` as soon as it is not undefined (checked now and after each export), or rejects after `timeoutMs`. */
  waitFor<T>(pick: (spans: ReceivedSpan[]) => T | undefined, timeoutMs?: number): Promise<T>;
  /** Forgets what was received. */
  reset(): void;
  close(): Promise<void>;
}
