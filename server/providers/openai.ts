/**
 * The AI provider: one structured-output completion over the official `openai` client
 * (Chat Completions with a strict JSON-schema response format). Maps every failure to
 * the spec's codes here, so no upstream text or status ever leaves this module:
 * 429 -> AI_RATE_LIMITED (Retry-After from the provider when it sent one); any other
 * error, a timeout or a non-JSON HTTP body -> AI_REQUEST_FAILED. Logs model, tokens and
 * latency per call, never content.
 *
 * Retries: the client runs with `maxRetries: 0`. Its own retry would honour a 429's
 * Retry-After for up to 60 s while the user's request (and a budget reservation) waits,
 * and would retry timeouts, doubling the worst case. Instead this module retries once,
 * after a short pause, only a connection that failed before any answer (not a timeout),
 * where the model cannot have run.
 *
 * The client library is loaded on the first call, not at start-up: its modules take heap
 * that a server which has not called the model yet does not need.
 */
import type { OpenAI } from 'openai';
import { AppError } from '../domain/errors.ts';
import { errorSummary, type Logger } from '../infra/logger.ts';

export interface TokenUsage {
  promptTokens: number;
  completionTokens: number;
}

export interface StructuredRequest {
  /** For logs only: 'analyze' | 'draft'. */
  operation: string;
  system: string;
  user: string;
  schemaName: string;
  /** A strict-mode JSON schema (see strictJsonSchema). */
  schema: Record<string, unknown>;
  maxOutputTokens: number;
}

export interface StructuredAnswer {
  /** The assistant's content (to be parsed by the caller), or null on a refusal or empty answer. */
  text: string | null;
  refused: boolean;
  model: string;
  usage: TokenUsage | null;
}

export interface AiProvider {
  readonly configured: boolean;
  readonly model: string;
  /** Throws AppError AI_RATE_LIMITED / AI_REQUEST_FAILED / SERVICE_UNAVAILABLE. */
  complete(req: StructuredRequest): Promise<StructuredAnswer>;
}

export interface OpenAiProviderOptions {
  apiKey?: string;
  baseUrl?: string;
  model: string;
  log: Logger;
  /** Per-request timeout; default 30 s (a long draft takes some seconds). */
  timeoutMs?: number;
  /** Pause before the one retry of a failed connection; default 250 ms. */
  connectRetryDelayMs?: number;
}

export const DEFAULT_AI_TIMEOUT_MS = 30_000;

/** Seconds from the provider's rate-limit headers, if any can be read. */
export function retryAfterFromHeaders(headers: Headers | undefined, nowMs = Date.now()): number | undefined {
  if (!headers) return undefined;
  const ms = Number.parseFloat(headers.get('retry-after-ms') ?? '');
  if (Number.isFinite(ms) && ms >= 0) return Math.max(1, Math.ceil(ms / 1000));
  const raw = headers.get('retry-after')?.trim();
  if (raw) {
    if (/^\d+(\.\d+)?$/.test(raw)) return Math.max(1, Math.ceil(Number(raw)));
    const date = Date.parse(raw);
    if (Number.isFinite(date)) return Math.max(1, Math.ceil((date - nowMs) / 1000));
  }
  // OpenAI's own reset hints, e.g. "1s", "6m0s", "20ms".
  const resets = ['x-ratelimit-reset-requests', 'x-ratelimit-reset-tokens'].map((h) => durationSeconds(headers.get(h)));
  const known = resets.filter((s): s is number => s !== undefined);
  return known.length ? Math.max(1, Math.ceil(Math.max(...known))) : undefined;
}

function durationSeconds(value: string | null): number | undefined {
  if (!value) return undefined;
  const re = /(\d+(?:\.\d+)?)(ms|h|m|s)/g;
  let total = 0;
  let matched = '';
  for (const m of value.matchAll(re)) {
    total += Number(m[1]) * { ms: 0.001, s: 1, m: 60, h: 3600 }[m[2] as 'ms' | 's' | 'm' | 'h'];
    matched += m[0];
  }
  return matched === value.trim() && matched ? total : undefined;
}

/** The parts of the client library that classify its errors. */
export type OpenAiErrors = Pick<
  typeof import('openai'),
  'APIError' | 'APIConnectionError' | 'APIConnectionTimeoutError'
>;

let library: Promise<typeof import('openai')> | undefined;
const loadLibrary = () => (library ??= import('openai'));

/** Classifies anything the client can throw (`sdk`: the library, once loaded). */
export function toAiError(err: unknown, sdk: OpenAiErrors | undefined): AppError {
  if (err instanceof AppError) return err;
  if (sdk && err instanceof sdk.APIError && err.status === 429) {
    return new AppError('AI_RATE_LIMITED', {
      retryAfter: retryAfterFromHeaders(err.headers as Headers | undefined),
      cause: err,
    });
  }
  // Other API errors, timeouts, connection failures, and the plain SyntaxError the client
  // throws for a 200 whose body is not JSON.
  return new AppError('AI_REQUEST_FAILED', { cause: err });
}

function outcomeOf(err: unknown, sdk: OpenAiErrors | undefined): string {
  if (sdk && err instanceof sdk.APIConnectionTimeoutError) return 'timeout';
  if (sdk && err instanceof sdk.APIConnectionError) return 'connection_error';
  if (sdk && err instanceof sdk.APIError) return `http_${err.status ?? 'error'}`;
  if (err instanceof SyntaxError) return 'unreadable_body';
  return 'error';
}

export function createOpenAiProvider(opts: OpenAiProviderOptions): AiProvider {
  const { log, model } = opts;
  if (!opts.apiKey) {
    return {
      configured: false,
      model,
      complete: async () => {
        throw new AppError('SERVICE_UNAVAILABLE');
      },
    };
  }
  const { apiKey, baseUrl } = opts;
  let sdk: typeof import('openai') | undefined;
  let client: Promise<OpenAI> | undefined;
  const ready = () =>
    (client ??= loadLibrary().then((loaded) => {
      sdk = loaded;
      return new loaded.OpenAI({
        apiKey,
        baseURL: baseUrl,
        maxRetries: 0,
        timeout: opts.timeoutMs ?? DEFAULT_AI_TIMEOUT_MS,
        // The client's debug log prints request bodies: never, whatever OPENAI_LOG says.
        logLevel: 'off',
      });
    }));
  const retryDelay = opts.connectRetryDelayMs ?? 250;

  const call = async (req: StructuredRequest) =>
    (await ready()).chat.completions.create({
      model,
      messages: [
        { role: 'system', content: req.system },
        { role: 'user', content: req.user },
      ],
      response_format: { type: 'json_schema', json_schema: { name: req.schemaName, schema: req.schema, strict: true } },
      max_completion_tokens: req.maxOutputTokens,
      store: false,
    });

  return {
    configured: true,
    model,
    async complete(req) {
      const started = performance.now();
      let attempts = 0;
      for (;;) {
        attempts += 1;
        try {
          const completion = await call(req);
          const choice = completion.choices?.[0];
          const usage = completion.usage
            ? {
                promptTokens: completion.usage.prompt_tokens ?? 0,
                completionTokens: completion.usage.completion_tokens ?? 0,
              }
            : null;
          const answer: StructuredAnswer = {
            text: typeof choice?.message?.content === 'string' ? choice.message.content : null,
            refused: Boolean(choice?.message?.refusal),
            model: typeof completion.model === 'string' && completion.model ? completion.model : model,
            usage,
          };
          log.info(
            {
              ai: {
                operation: req.operation,
                model: answer.model,
                promptTokens: usage?.promptTokens,
                completionTokens: usage?.completionTokens,
                latencyMs: Math.round(performance.now() - started),
                attempts,
                outcome: answer.refused ? 'refused' : (choice?.finish_reason ?? 'unknown'),
              },
            },
            'ai call',
          );
          return answer;
        } catch (err) {
          const retryable =
            sdk !== undefined &&
            err instanceof sdk.APIConnectionError &&
            !(err instanceof sdk.APIConnectionTimeoutError);
          if (retryable && attempts < 2) {
            await new Promise((r) => setTimeout(r, retryDelay));
            continue;
          }
          const mapped = toAiError(err, sdk);
          log.warn(
            {
              ai: {
                operation: req.operation,
                model,
                latencyMs: Math.round(performance.now() - started),
                attempts,
                outcome: outcomeOf(err, sdk),
                code: mapped.code,
              },
              errName: errorSummary(err).errName,
            },
            'ai call failed',
          );
          throw mapped;
        }
      }
    },
  };
}
