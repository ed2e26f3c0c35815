/**
 * The OpenAI stand-in's types: the public ones (fault specs, recorded requests and counters,
 * the responder hook, the control API a test drives it with) and the fault queue's entry,
 * which the state and the fault queue share.
 */
export type StandInEndpoint = 'chat' | 'responses' | 'models';

/** 'chat' (default) = chat completions AND responses; the others select one endpoint. */
export type FaultTarget = 'chat' | 'chat.completions' | 'responses' | 'models';

export type FaultKind = 'status' | 'unparseable' | 'schema-invalid' | 'hang' | 'garbage-body';

export interface FaultSpec {
  /** Which endpoint the fault applies to. Default 'chat' (chat completions and responses). */
  endpoint?: FaultTarget;
  /** Default 'status'. */
  kind?: FaultKind;
  /**
   * HTTP status. For kind 'status' (default 500) the body is OpenAI's error shape.
   * For kind 'garbage-body' (default 200) the non-JSON body is sent with this status.
   * Ignored by the other kinds.
   */
  status?: number;
  /** How many requests the fault applies to. Default 1; `Infinity` until clearFaults()/reset(). */
  times?: number;
  /** Adds a `retry-after` header (seconds) to a 'status' fault. */
  retryAfterSeconds?: number;
  /** Override the error body of a 'status' fault. */
  message?: string;
  type?: string;
  code?: string | null;
}

/** A checked fault spec waiting in the queue (fault.queue.ts), with the requests it has left. */
export interface QueuedFault {
  target: FaultTarget;
  kind: FaultKind;
  status: number | undefined;
  remaining: number;
  retryAfterSeconds: number | undefined;
  message: string | undefined;
  type: string | undefined;
  code: string | null | undefined;
}

export interface RecordedRequest {
  method: string;
  /** URL path as received, e.g. '/v1/chat/completions' (query string removed). */
  path: string;
  /** Parsed JSON body; the raw text if it was not JSON; undefined when there was no body. */
  body: any;
  endpoint: StandInEndpoint | 'other';
}

export interface CallCounters {
  /** POST /v1/chat/completions requests received (whatever the outcome: answered, faulted, 400, 401). */
  chat: number;
  /** POST /v1/responses requests received. */
  responses: number;
  /** GET /v1/models[/:id] requests received. */
  models: number;
  /** Requests to any other path. */
  other: number;
  /** Requests answered 401 (included in the per-endpoint counts too). */
  unauthorized: number;
  total: number;
}

export interface ResponderContext {
  endpoint: 'chat' | 'responses';
  /** The JSON schema of the request, when it asked for json_schema output. */
  schema: unknown;
  schemaName: string | undefined;
}

/**
 * Returns the assistant's output. A string is used verbatim as the message content;
 * anything else is JSON-serialised.
 */
export type Responder = (body: any, ctx: ResponderContext) => unknown | Promise<unknown>;

export interface FixedUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

export interface OpenAIStandIn {
  /** e.g. 'http://127.0.0.1:PORT/v1' */
  readonly baseUrl: string;
  readonly apiKey: string;
  /** Every request received, in arrival order (a copy). */
  readonly requests: readonly RecordedRequest[];
  /** Snapshot of the per-endpoint counters. */
  readonly calls: Readonly<CallCounters>;
  /** Zeroes `calls`, empties `requests`, resets peakInFlight(). */
  resetCounters(): void;
  /** resetCounters() plus: no responder, no faults, estimated usage, latency back to the start value, holds released. */
  reset(): void;
  setResponder(fn: Responder | null): void;
  setUsage(usage: FixedUsage | null): void;
  /** Queues a fault; faults are consumed in the order they were injected. */
  injectFault(fault: FaultSpec): void;
  clearFaults(): void;
  /** Delay (ms) before every answer, all endpoints. */
  setLatency(ms: number): void;
  /**
   * While any hold is active, incoming chat/responses requests wait (after being
   * recorded and counted). The returned function releases this hold (idempotent).
   */
  hold(): () => void;
  /** How many chat/responses requests are waiting on a hold. */
  pending(): number;
  /** Resolves once pending() >= n; rejects after timeoutMs (default 5000). */
  waitForPending(n: number, timeoutMs?: number): Promise<void>;
  /** Requests currently being handled (including held, delayed and hung ones). */
  inFlight(): number;
  /** Highest inFlight() seen since start/resetCounters(). */
  peakInFlight(): number;
  /** Stops the server; destroys open connections (held or hung requests included). */
  close(): Promise<void>;
}

export interface StartOptions {
  apiKey?: string;
  latencyMs?: number;
  /** Model ids listed by GET /v1/models. */
  models?: string[];
  /** Reject strict json_schema requests that break OpenAI's strict-mode rules with 400 (default true). */
  enforceStrictSchemaRules?: boolean;
}
