/**
 * A stand-in for the OpenAI HTTP API, for tests. Plain `node:http` on 127.0.0.1:0.
 *
 * Serves, under `baseUrl` (`http://127.0.0.1:PORT/v1`, what `new OpenAI({ baseURL })` takes):
 *   POST /v1/chat/completions   Chat Completions (response_format json_schema | json_object | text)
 *   POST /v1/responses          Responses API (text.format json_schema | json_object | text)
 *   GET  /v1/models, /v1/models/:id
 *
 * The assistant message is a JSON object generated to be valid against the JSON
 * schema of the request (see json-schema-sample.ts), deterministic for a given
 * request body, unless a responder is set. Faults, latency, holds and fixed usage
 * can be configured per test. Streaming is not supported (400).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { corruptSample, hashString, sampleFromSchema, strictSchemaProblems } from './json-schema-sample.ts';

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

const DEFAULT_MODELS = ['gpt-4o-mini', 'gpt-4.1-mini', 'gpt-4o'];
const MODEL_CREATED = 1715367049;

interface ErrorBody {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

interface QueuedFault {
  target: FaultTarget;
  kind: FaultKind;
  status: number | undefined;
  remaining: number;
  retryAfterSeconds: number | undefined;
  message: string | undefined;
  type: string | undefined;
  code: string | null | undefined;
}

interface OutputSpec {
  mode: 'json_schema' | 'json_object' | 'text';
  schema: unknown;
  name: string | undefined;
  strict: boolean;
}

class Aborted extends Error {}

function defaultError(status: number): ErrorBody {
  if (status === 400)
    return { message: 'Invalid request (stand-in fault).', type: 'invalid_request_error', param: null, code: null };
  if (status === 401)
    return { message: 'Incorrect API key provided.', type: 'invalid_request_error', param: null, code: 'invalid_api_key' };
  if (status === 403)
    return { message: 'You are not allowed to sample from this model.', type: 'invalid_request_error', param: null, code: null };
  if (status === 404)
    return { message: 'The model does not exist or you do not have access to it.', type: 'invalid_request_error', param: null, code: 'model_not_found' };
  if (status === 429)
    return {
      message: 'Rate limit reached for requests (stand-in fault). Please try again later.',
      type: 'requests',
      param: null,
      code: 'rate_limit_exceeded',
    };
  if (status === 503)
    return { message: 'The server is overloaded or not ready yet.', type: 'server_error', param: null, code: null };
  if (status >= 500)
    return {
      message: 'The server had an error while processing your request. Sorry about that!',
      type: 'server_error',
      param: null,
      code: null,
    };
  return { message: `Stand-in fault with status ${status}.`, type: 'api_error', param: null, code: null };
}

function maskKey(key: string): string {
  return key.length <= 8 ? '***' : `${key.slice(0, 3)}***${key.slice(-4)}`;
}

export async function startOpenAIStandIn(opts: StartOptions = {}): Promise<OpenAIStandIn> {
  const apiKey = opts.apiKey ?? 'test-openai-key';
  const models = opts.models ?? DEFAULT_MODELS;
  const enforceStrict = opts.enforceStrictSchemaRules ?? true;
  const initialLatency = opts.latencyMs ?? 0;

  let latencyMs = initialLatency;
  let responder: Responder | null = null;
  let fixedUsage: FixedUsage | null = null;
  let faults: QueuedFault[] = [];
  let requests: RecordedRequest[] = [];
  const newCounters = (): CallCounters => ({ chat: 0, responses: 0, models: 0, other: 0, unauthorized: 0, total: 0 });
  let counters = newCounters();
  let seq = 0;
  let inFlight = 0;
  let peak = 0;
  let closed = false;

  // holds
  let holdCount = 0;
  const waiters = new Set<{ resolve: () => void }>();
  const pendingListeners = new Set<() => void>();
  const notifyPending = () => {
    for (const l of [...pendingListeners]) l();
  };
  const releaseWaiters = () => {
    for (const w of [...waiters]) w.resolve();
    waiters.clear();
    notifyPending();
  };

  const activeRequests = new Set<AbortController>();

  const waitForRelease = (signal: AbortSignal): Promise<void> => {
    if (holdCount === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        resolve: () => {
          signal.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      const onAbort = () => {
        waiters.delete(waiter);
        notifyPending();
        reject(new Aborted());
      };
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      waiters.add(waiter);
      notifyPending();
    });
  };

  const sleep = (ms: number, signal: AbortSignal): Promise<void> => {
    if (ms <= 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        clearTimeout(timer);
        reject(new Aborted());
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
    });
  };

  const takeFault = (endpoint: StandInEndpoint): QueuedFault | undefined => {
    const idx = faults.findIndex(
      (f) =>
        f.remaining > 0 &&
        (f.target === endpoint ||
          (f.target === 'chat' && (endpoint === 'chat' || endpoint === 'responses')) ||
          (f.target === 'chat.completions' && endpoint === 'chat')),
    );
    if (idx < 0) return undefined;
    const fault = faults[idx];
    fault.remaining -= 1;
    if (fault.remaining <= 0) faults.splice(idx, 1);
    return fault;
  };

  const send = (
    res: http.ServerResponse,
    status: number,
    body: string,
    headers: Record<string, string> = {},
    contentType = 'application/json',
  ) => {
    if (res.headersSent || res.destroyed) return;
    seq += 1;
    res.writeHead(status, {
      'content-type': contentType,
      'content-length': Buffer.byteLength(body),
      'x-request-id': `req_standin_${seq.toString(16).padStart(8, '0')}`,
      'openai-processing-ms': '1',
      ...headers,
    });
    res.end(body);
  };
  const sendJson = (res: http.ServerResponse, status: number, value: unknown, headers?: Record<string, string>) =>
    send(res, status, JSON.stringify(value), headers);
  const sendError = (
    res: http.ServerResponse,
    status: number,
    error: Partial<ErrorBody> = {},
    headers?: Record<string, string>,
  ) => sendJson(res, status, { error: { ...defaultError(status), ...error } }, headers);

  const outputSpec = (endpoint: 'chat' | 'responses', body: any): OutputSpec => {
    if (endpoint === 'chat') {
      const rf = body?.response_format;
      if (rf?.type === 'json_schema') {
        const js = rf.json_schema ?? {};
        return { mode: 'json_schema', schema: js.schema, name: js.name, strict: js.strict === true };
      }
      if (rf?.type === 'json_object') return { mode: 'json_object', schema: undefined, name: undefined, strict: false };
      return { mode: 'text', schema: undefined, name: undefined, strict: false };
    }
    const fmt = body?.text?.format;
    if (fmt?.type === 'json_schema')
      return { mode: 'json_schema', schema: fmt.schema, name: fmt.name, strict: fmt.strict === true };
    if (fmt?.type === 'json_object') return { mode: 'json_object', schema: undefined, name: undefined, strict: false };
    return { mode: 'text', schema: undefined, name: undefined, strict: false };
  };

  /** Returns an error to answer with, or undefined when the request is acceptable. */
  const validate = (endpoint: 'chat' | 'responses', body: any, spec: OutputSpec): Partial<ErrorBody> | undefined => {
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      return { message: 'The request body must be a JSON object.', param: null };
    if (typeof body.model !== 'string' || body.model === '')
      return { message: 'you must provide a model parameter', param: 'model' };
    if (body.stream === true)
      return { message: 'The OpenAI stand-in does not support stream: true.', param: 'stream', code: 'unsupported_value' };
    if (endpoint === 'chat') {
      if (!Array.isArray(body.messages) || body.messages.length === 0)
        return {
          message: "Missing required parameter: 'messages'.",
          param: 'messages',
          code: 'missing_required_parameter',
        };
    } else if (body.input === undefined && body.prompt === undefined && body.previous_response_id === undefined) {
      return { message: "Missing required parameter: 'input'.", param: 'input', code: 'missing_required_parameter' };
    }
    if (spec.mode === 'json_schema') {
      const param = endpoint === 'chat' ? 'response_format' : 'text.format';
      if (typeof spec.name !== 'string' || !/^[a-zA-Z0-9_-]{1,64}$/.test(spec.name))
        return {
          message: `Invalid '${param}.name': must be 1-64 characters of a-z, A-Z, 0-9, underscores and dashes.`,
          param: `${param}.name`,
          code: 'invalid_value',
        };
      if (typeof spec.schema !== 'object' || spec.schema === null || Array.isArray(spec.schema))
        return { message: `Missing required parameter: '${param}.schema'.`, param: `${param}.schema`, code: 'missing_required_parameter' };
      if (spec.strict && enforceStrict) {
        const problems = strictSchemaProblems(spec.schema);
        if (problems.length > 0)
          return {
            message: `Invalid schema for response_format '${spec.name}': ${problems[0]}`,
            param: endpoint === 'chat' ? 'response_format' : 'text.format.schema',
            code: 'invalid_json_schema',
          };
      }
    }
    return undefined;
  };

  const generateContent = async (
    endpoint: 'chat' | 'responses',
    body: any,
    spec: OutputSpec,
    fault: QueuedFault | undefined,
  ): Promise<string> => {
    const seed = hashString(JSON.stringify(body));
    if (fault?.kind === 'unparseable') {
      return 'Sure! Here is the analysis you asked for: {"priority": "URGENT", "reason": "the sender';
    }
    let value: unknown;
    if (responder && fault?.kind !== 'schema-invalid') {
      value = await responder(body, { endpoint, schema: spec.schema, schemaName: spec.name });
      return typeof value === 'string' ? value : JSON.stringify(value);
    }
    if (spec.mode === 'json_schema') value = sampleFromSchema(spec.schema, { seed });
    else if (spec.mode === 'json_object') value = { result: 'Sample result' };
    else value = 'This is a sample reply from the OpenAI stand-in.';
    if (fault?.kind === 'schema-invalid') {
      value = spec.mode === 'json_schema' ? corruptSample(spec.schema, value) : ['not', 'the', 'expected', 'shape'];
    }
    return typeof value === 'string' ? value : JSON.stringify(value);
  };

  const usageFor = (endpoint: 'chat' | 'responses', body: any, content: string): FixedUsage => {
    if (fixedUsage) return fixedUsage;
    const promptText =
      endpoint === 'chat'
        ? JSON.stringify(body.messages ?? [])
        : JSON.stringify(body.input ?? '') + (typeof body.instructions === 'string' ? body.instructions : '');
    const schemaText = endpoint === 'chat' ? JSON.stringify(body.response_format ?? '') : JSON.stringify(body.text ?? '');
    return {
      prompt_tokens: Math.max(1, Math.ceil((promptText.length + schemaText.length) / 4)),
      completion_tokens: Math.max(1, Math.ceil(content.length / 4)),
    };
  };

  const chatBody = (body: any, content: string, usage: FixedUsage) => ({
    id: `chatcmpl-standin${(seq + 1).toString(16).padStart(8, '0')}`,
    object: 'chat.completion',
    created: Math.floor(Date.now() / 1000),
    model: body.model,
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content, refusal: null, annotations: [] },
        finish_reason: 'stop',
        logprobs: null,
      },
    ],
    usage: {
      prompt_tokens: usage.prompt_tokens,
      completion_tokens: usage.completion_tokens,
      total_tokens: usage.prompt_tokens + usage.completion_tokens,
      prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
      completion_tokens_details: {
        reasoning_tokens: 0,
        audio_tokens: 0,
        accepted_prediction_tokens: 0,
        rejected_prediction_tokens: 0,
      },
    },
    service_tier: 'default',
    system_fingerprint: 'fp_standin',
  });

  const responsesBody = (body: any, content: string, usage: FixedUsage) => {
    const id = (seq + 1).toString(16).padStart(8, '0');
    return {
      id: `resp_standin${id}`,
      object: 'response',
      created_at: Math.floor(Date.now() / 1000),
      status: 'completed',
      background: false,
      error: null,
      incomplete_details: null,
      instructions: body.instructions ?? null,
      max_output_tokens: body.max_output_tokens ?? null,
      metadata: body.metadata ?? {},
      model: body.model,
      output: [
        {
          id: `msg_standin${id}`,
          type: 'message',
          status: 'completed',
          role: 'assistant',
          content: [{ type: 'output_text', text: content, annotations: [], logprobs: [] }],
        },
      ],
      parallel_tool_calls: true,
      previous_response_id: body.previous_response_id ?? null,
      reasoning: { effort: null, summary: null },
      service_tier: 'default',
      store: body.store ?? true,
      temperature: body.temperature ?? 1,
      text: { format: body.text?.format ?? { type: 'text' }, verbosity: 'medium' },
      tool_choice: 'auto',
      tools: [],
      top_p: body.top_p ?? 1,
      truncation: 'disabled',
      usage: {
        input_tokens: usage.prompt_tokens,
        input_tokens_details: { cached_tokens: 0 },
        output_tokens: usage.completion_tokens,
        output_tokens_details: { reasoning_tokens: 0 },
        total_tokens: usage.prompt_tokens + usage.completion_tokens,
      },
      user: null,
    };
  };

  const modelObject = (id: string) => ({ id, object: 'model', created: MODEL_CREATED, owned_by: 'system' });

  /** Answers a fault that does not depend on the endpoint's normal output; returns true if it did. */
  const answerTransportFault = (res: http.ServerResponse, fault: QueuedFault): boolean => {
    if (fault.kind === 'hang') return true; // never answer; the connection is closed by the client or close()
    if (fault.kind === 'garbage-body') {
      send(res, fault.status ?? 200, '<html><body><h1>502 Bad Gateway</h1>upstream glitch</body></html>');
      return true;
    }
    if (fault.kind === 'status') {
      const status = fault.status ?? 500;
      const headers: Record<string, string> = {};
      if (fault.retryAfterSeconds !== undefined) headers['retry-after'] = String(fault.retryAfterSeconds);
      if (status === 429) {
        headers['x-ratelimit-limit-requests'] = '500';
        headers['x-ratelimit-remaining-requests'] = '0';
        headers['x-ratelimit-reset-requests'] = `${fault.retryAfterSeconds ?? 1}s`;
      }
      const override: Partial<ErrorBody> = {};
      if (fault.message !== undefined) override.message = fault.message;
      if (fault.type !== undefined) override.type = fault.type;
      if (fault.code !== undefined) override.code = fault.code;
      sendError(res, status, override, headers);
      return true;
    }
    return false;
  };

  const readBody = async (req: http.IncomingMessage): Promise<string> => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse, signal: AbortSignal) => {
    const method = req.method ?? 'GET';
    const path = new URL(req.url ?? '/', 'http://stand-in').pathname.replace(/\/+$/, '') || '/';
    const text = await readBody(req);
    let body: any = undefined;
    let badJson = false;
    if (text.length > 0) {
      try {
        body = JSON.parse(text);
      } catch {
        body = text;
        badJson = true;
      }
    }

    let endpoint: StandInEndpoint | 'other' = 'other';
    let modelId: string | undefined;
    if (method === 'POST' && path === '/v1/chat/completions') endpoint = 'chat';
    else if (method === 'POST' && path === '/v1/responses') endpoint = 'responses';
    else if (method === 'GET' && path === '/v1/models') endpoint = 'models';
    else if (method === 'GET' && path.startsWith('/v1/models/')) {
      endpoint = 'models';
      modelId = decodeURIComponent(path.slice('/v1/models/'.length));
    }

    requests.push({ method, path, body, endpoint });
    counters[endpoint] += 1;
    counters.total += 1;

    const auth = req.headers.authorization;
    if (auth !== `Bearer ${apiKey}`) {
      counters.unauthorized += 1;
      const given = auth?.startsWith('Bearer ') ? auth.slice(7) : undefined;
      return sendError(res, 401, {
        message: given
          ? `Incorrect API key provided: ${maskKey(given)}. You can find your API key at https://platform.openai.com/account/api-keys.`
          : "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        code: given ? 'invalid_api_key' : null,
      });
    }

    if (endpoint === 'other') {
      return sendError(res, 404, { message: `Invalid URL (${method} ${path})`, code: null });
    }
    if (badJson) {
      return sendError(res, 400, {
        message:
          "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)",
      });
    }

    if (endpoint === 'models') {
      const fault = takeFault('models');
      await sleep(latencyMs, signal);
      if (fault && answerTransportFault(res, fault)) return;
      if (modelId !== undefined) {
        if (!models.includes(modelId))
          return sendError(res, 404, {
            message: `The model '${modelId}' does not exist`,
            param: 'model',
            code: 'model_not_found',
          });
        return sendJson(res, 200, modelObject(modelId));
      }
      return sendJson(res, 200, { object: 'list', data: models.map(modelObject) });
    }

    const spec = outputSpec(endpoint, body);
    const invalid = validate(endpoint, body, spec);
    if (invalid) return sendError(res, 400, invalid);

    const fault = takeFault(endpoint);
    await waitForRelease(signal);
    await sleep(latencyMs, signal);
    if (fault && answerTransportFault(res, fault)) return;

    let content: string;
    try {
      content = await generateContent(endpoint, body, spec, fault);
    } catch (err) {
      return sendError(res, 500, {
        message: `OpenAI stand-in responder threw: ${err instanceof Error ? err.message : String(err)}`,
      });
    }
    const usage = usageFor(endpoint, body, content);
    return sendJson(res, 200, endpoint === 'chat' ? chatBody(body, content, usage) : responsesBody(body, content, usage));
  };

  const server = http.createServer((req, res) => {
    const controller = new AbortController();
    activeRequests.add(controller);
    inFlight += 1;
    peak = Math.max(peak, inFlight);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      inFlight -= 1;
      activeRequests.delete(controller);
      controller.abort();
    };
    res.on('close', finish);
    res.on('finish', finish);
    if (closed) {
      res.destroy();
      return;
    }
    handle(req, res, controller.signal).catch((err: unknown) => {
      if (err instanceof Aborted || controller.signal.aborted) return;
      if (!res.headersSent && !res.destroyed) {
        sendError(res, 500, { message: `OpenAI stand-in internal error: ${String(err)}` });
      } else {
        res.destroy();
      }
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  let closePromise: Promise<void> | undefined;

  const standIn: OpenAIStandIn = {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    apiKey,
    get requests() {
      return [...requests];
    },
    get calls() {
      return { ...counters };
    },
    resetCounters() {
      counters = newCounters();
      requests = [];
      peak = inFlight;
    },
    reset() {
      standIn.resetCounters();
      responder = null;
      fixedUsage = null;
      faults = [];
      latencyMs = initialLatency;
      holdCount = 0;
      releaseWaiters();
    },
    setResponder(fn) {
      responder = fn;
    },
    setUsage(usage) {
      fixedUsage = usage ? { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens } : null;
    },
    injectFault(fault) {
      const kind = fault.kind ?? 'status';
      const target = fault.endpoint ?? 'chat';
      const times = fault.times ?? 1;
      if (!(times > 0)) throw new RangeError(`injectFault: times must be > 0 (got ${times})`);
      if (target === 'models' && (kind === 'unparseable' || kind === 'schema-invalid'))
        throw new TypeError(`injectFault: kind '${kind}' does not apply to the models endpoint`);
      if (fault.status !== undefined && !(Number.isInteger(fault.status) && fault.status >= 100 && fault.status <= 599))
        throw new RangeError(`injectFault: bad status ${fault.status}`);
      if (kind === 'status' && fault.status !== undefined && fault.status < 400)
        throw new RangeError(`injectFault: kind 'status' needs an error status (got ${fault.status})`);
      faults.push({
        target,
        kind,
        status: fault.status,
        remaining: times,
        retryAfterSeconds: fault.retryAfterSeconds,
        message: fault.message,
        type: fault.type,
        code: fault.code,
      });
    },
    clearFaults() {
      faults = [];
    },
    setLatency(ms) {
      latencyMs = Math.max(0, ms);
    },
    hold() {
      holdCount += 1;
      let released = false;
      return () => {
        if (released) return;
        released = true;
        holdCount = Math.max(0, holdCount - 1);
        if (holdCount === 0) releaseWaiters();
      };
    },
    pending() {
      return waiters.size;
    },
    waitForPending(n, timeoutMs = 5000) {
      if (waiters.size >= n) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        const listener = () => {
          if (waiters.size >= n) {
            clearTimeout(timer);
            pendingListeners.delete(listener);
            resolve();
          }
        };
        const timer = setTimeout(() => {
          pendingListeners.delete(listener);
          reject(new Error(`waitForPending(${n}): only ${waiters.size} pending after ${timeoutMs} ms`));
        }, timeoutMs);
        pendingListeners.add(listener);
      });
    },
    inFlight() {
      return inFlight;
    },
    peakInFlight() {
      return peak;
    },
    close() {
      if (closePromise) return closePromise;
      closed = true;
      closePromise = new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const controller of [...activeRequests]) controller.abort();
        server.closeAllConnections();
      });
      return closePromise;
    },
  };
  return standIn;
}
