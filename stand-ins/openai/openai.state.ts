/**
 * The OpenAI stand-in's state between requests: its configuration (key, models, latency,
 * responder, fixed usage), the fault queue, the request log and counters, in-flight tracking,
 * the hold gate, and the sending of answers (which numbers them with `x-request-id`).
 */
import type http from 'node:http';
import { HoldGate } from './hold.gate.ts';
import type { CallCounters, FixedUsage, QueuedFault, RecordedRequest, Responder } from './openai.types.ts';
import { defaultError, type ErrorBody } from './response.wire.ts';

export const newCounters = (): CallCounters => ({
  chat: 0,
  responses: 0,
  models: 0,
  other: 0,
  unauthorized: 0,
  total: 0,
});

export class OpenAIState {
  latencyMs: number;
  responder: Responder | null = null;
  fixedUsage: FixedUsage | null = null;
  faults: QueuedFault[] = [];
  requests: RecordedRequest[] = [];
  counters = newCounters();
  seq = 0;
  inFlight = 0;
  peak = 0;
  closed = false;
  readonly holds = new HoldGate();
  readonly activeRequests = new Set<AbortController>();

  readonly apiKey: string;
  readonly models: string[];
  readonly enforceStrict: boolean;
  readonly initialLatency: number;

  constructor(apiKey: string, models: string[], enforceStrict: boolean, initialLatency: number) {
    this.apiKey = apiKey;
    this.models = models;
    this.enforceStrict = enforceStrict;
    this.initialLatency = initialLatency;
    this.latencyMs = initialLatency;
  }

  send(
    res: http.ServerResponse,
    status: number,
    body: string,
    headers: Record<string, string> = {},
    contentType = 'application/json',
  ): void {
    if (res.headersSent || res.destroyed) return;
    this.seq += 1;
    res.writeHead(status, {
      'content-type': contentType,
      'content-length': Buffer.byteLength(body),
      'x-request-id': `req_standin_${this.seq.toString(16).padStart(8, '0')}`,
      'openai-processing-ms': '1',
      ...headers,
    });
    res.end(body);
  }

  sendJson(res: http.ServerResponse, status: number, value: unknown, headers?: Record<string, string>): void {
    this.send(res, status, JSON.stringify(value), headers);
  }

  sendError(
    res: http.ServerResponse,
    status: number,
    error: Partial<ErrorBody> = {},
    headers?: Record<string, string>,
  ): void {
    this.sendJson(res, status, { error: { ...defaultError(status), ...error } }, headers);
  }
}
