/**
 * Injected faults of the OpenAI stand-in: checking and queueing a fault spec, taking the next one
 * that applies to an endpoint, and answering the faults that replace the normal answer (an error
 * status, a non-JSON body, or no answer at all).
 */
import type http from 'node:http';
import type { OpenAIState } from './openai.state.ts';
import type { FaultSpec, QueuedFault, StandInEndpoint } from './openai.types.ts';
import type { ErrorBody } from './response.wire.ts';

/** Checks a fault spec (throws on nonsense) and returns its queue entry. */
export function queuedFault(fault: FaultSpec): QueuedFault {
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
  return {
    target,
    kind,
    status: fault.status,
    remaining: times,
    retryAfterSeconds: fault.retryAfterSeconds,
    message: fault.message,
    type: fault.type,
    code: fault.code,
  };
}

export function takeFault(faults: QueuedFault[], endpoint: StandInEndpoint): QueuedFault | undefined {
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
}

/** Answers a fault that does not depend on the endpoint's normal output; returns true if it did. */
export function answerTransportFault(state: OpenAIState, res: http.ServerResponse, fault: QueuedFault): boolean {
  if (fault.kind === 'hang') return true; // never answer; the connection is closed by the client or close()
  if (fault.kind === 'garbage-body') {
    state.send(res, fault.status ?? 200, '<html><body><h1>502 Bad Gateway</h1>upstream glitch</body></html>');
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
    state.sendError(res, status, override, headers);
    return true;
  }
  return false;
}
