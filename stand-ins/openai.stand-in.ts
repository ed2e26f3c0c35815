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
 *
 * This module starts the server and holds the control API; the request handling, state, faults,
 * holds and wire shapes are in openai/.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { queuedFault } from './openai/fault.queue.ts';
import { Aborted } from './openai/hold.gate.ts';
import { handle } from './openai/openai.routes.ts';
import { newCounters, OpenAIState } from './openai/openai.state.ts';
import type { OpenAIStandIn, StartOptions } from './openai/openai.types.ts';

export type {
  CallCounters,
  FaultKind,
  FaultSpec,
  FaultTarget,
  FixedUsage,
  OpenAIStandIn,
  RecordedRequest,
  Responder,
  ResponderContext,
  StandInEndpoint,
  StartOptions,
} from './openai/openai.types.ts';

const DEFAULT_MODELS = ['gpt-4o-mini', 'gpt-4.1-mini', 'gpt-4o'];

export async function startOpenAIStandIn(opts: StartOptions = {}): Promise<OpenAIStandIn> {
  const state = new OpenAIState(
    opts.apiKey ?? 'test-openai-key',
    opts.models ?? DEFAULT_MODELS,
    opts.enforceStrictSchemaRules ?? true,
    opts.latencyMs ?? 0,
  );

  const server = http.createServer((req, res) => {
    const controller = new AbortController();
    state.activeRequests.add(controller);
    state.inFlight += 1;
    state.peak = Math.max(state.peak, state.inFlight);
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      state.inFlight -= 1;
      state.activeRequests.delete(controller);
      controller.abort();
    };
    res.on('close', finish);
    res.on('finish', finish);
    if (state.closed) {
      res.destroy();
      return;
    }
    handle(state, req, res, controller.signal).catch((err: unknown) => {
      if (err instanceof Aborted || controller.signal.aborted) return;
      if (!res.headersSent && !res.destroyed) {
        state.sendError(res, 500, { message: `OpenAI stand-in internal error: ${String(err)}` });
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
    apiKey: state.apiKey,
    get requests() {
      return [...state.requests];
    },
    get calls() {
      return { ...state.counters };
    },
    resetCounters() {
      state.counters = newCounters();
      state.requests = [];
      state.peak = state.inFlight;
    },
    reset() {
      standIn.resetCounters();
      state.responder = null;
      state.fixedUsage = null;
      state.faults = [];
      state.latencyMs = state.initialLatency;
      state.holds.reset();
    },
    setResponder(fn) {
      state.responder = fn;
    },
    setUsage(usage) {
      state.fixedUsage = usage
        ? { prompt_tokens: usage.prompt_tokens, completion_tokens: usage.completion_tokens }
        : null;
    },
    injectFault(fault) {
      state.faults.push(queuedFault(fault));
    },
    clearFaults() {
      state.faults = [];
    },
    setLatency(ms) {
      state.latencyMs = Math.max(0, ms);
    },
    hold() {
      return state.holds.hold();
    },
    pending() {
      return state.holds.pending();
    },
    waitForPending(n, timeoutMs) {
      return state.holds.waitForPending(n, timeoutMs);
    },
    inFlight() {
      return state.inFlight;
    },
    peakInFlight() {
      return state.peak;
    },
    close() {
      if (closePromise) return closePromise;
      state.closed = true;
      closePromise = new Promise<void>((resolve) => {
        server.close(() => resolve());
        for (const controller of [...state.activeRequests]) controller.abort();
        server.closeAllConnections();
      });
      return closePromise;
    },
  };
  return standIn;
}
