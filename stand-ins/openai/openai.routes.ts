/**
 * Handles one request to the OpenAI stand-in: routing, API key check, body parsing and
 * validation, faults, holds and latency, then the generated (or responder's) answer.
 */
import type http from 'node:http';
import { corruptSample, hashString, sampleFromSchema } from '../json-schema-sample.ts';
import { answerTransportFault, takeFault } from './fault.queue.ts';
import { sleep } from './hold.gate.ts';
import type { OpenAIState } from './openai.state.ts';
import type { QueuedFault, StandInEndpoint } from './openai.types.ts';
import { outputSpec, validate, type OutputSpec } from './request.validate.ts';
import { chatBody, maskKey, modelObject, responsesBody, usageFor } from './response.wire.ts';

async function generateContent(
  state: OpenAIState,
  endpoint: 'chat' | 'responses',
  body: any,
  spec: OutputSpec,
  fault: QueuedFault | undefined,
): Promise<string> {
  const seed = hashString(JSON.stringify(body));
  if (fault?.kind === 'unparseable') {
    return 'Sure! Here is the analysis you asked for: {"priority": "URGENT", "reason": "the sender';
  }
  let value: unknown;
  if (state.responder && fault?.kind !== 'schema-invalid') {
    value = await state.responder(body, { endpoint, schema: spec.schema, schemaName: spec.name });
    return typeof value === 'string' ? value : JSON.stringify(value);
  }
  if (spec.mode === 'json_schema') value = sampleFromSchema(spec.schema, { seed });
  else if (spec.mode === 'json_object') value = { result: 'Sample result' };
  else value = 'This is a sample reply from the OpenAI stand-in.';
  if (fault?.kind === 'schema-invalid') {
    value = spec.mode === 'json_schema' ? corruptSample(spec.schema, value) : ['not', 'the', 'expected', 'shape'];
  }
  return typeof value === 'string' ? value : JSON.stringify(value);
}

async function readBody(req: http.IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

export async function handle(
  state: OpenAIState,
  req: http.IncomingMessage,
  res: http.ServerResponse,
  signal: AbortSignal,
) {
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

  state.requests.push({ method, path, body, endpoint });
  state.counters[endpoint] += 1;
  state.counters.total += 1;

  const auth = req.headers.authorization;
  if (auth !== `Bearer ${state.apiKey}`) {
    state.counters.unauthorized += 1;
    const given = auth?.startsWith('Bearer ') ? auth.slice(7) : undefined;
    return state.sendError(res, 401, {
      message: given
        ? `Incorrect API key provided: ${maskKey(given)}. You can find your API key at https://platform.openai.com/account/api-keys.`
        : "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
      code: given ? 'invalid_api_key' : null,
    });
  }

  if (endpoint === 'other') {
    return state.sendError(res, 404, { message: `Invalid URL (${method} ${path})`, code: null });
  }
  if (badJson) {
    return state.sendError(res, 400, {
      message:
        "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)",
    });
  }

  if (endpoint === 'models') {
    const fault = takeFault(state.faults, 'models');
    await sleep(state.latencyMs, signal);
    if (fault && answerTransportFault(state, res, fault)) return;
    if (modelId !== undefined) {
      if (!state.models.includes(modelId))
        return state.sendError(res, 404, {
          message: `The model '${modelId}' does not exist`,
          param: 'model',
          code: 'model_not_found',
        });
      return state.sendJson(res, 200, modelObject(modelId));
    }
    return state.sendJson(res, 200, { object: 'list', data: state.models.map(modelObject) });
  }

  const spec = outputSpec(endpoint, body);
  const invalid = validate(endpoint, body, spec, state.enforceStrict);
  if (invalid) return state.sendError(res, 400, invalid);

  const fault = takeFault(state.faults, endpoint);
  await state.holds.waitForRelease(signal);
  await sleep(state.latencyMs, signal);
  if (fault && answerTransportFault(state, res, fault)) return;

  let content: string;
  try {
    content = await generateContent(state, endpoint, body, spec, fault);
  } catch (err) {
    return state.sendError(res, 500, {
      message: `OpenAI stand-in responder threw: ${err instanceof Error ? err.message : String(err)}`,
    });
  }
  const usage = usageFor(endpoint, body, content, state.fixedUsage);
  return state.sendJson(
    res,
    200,
    endpoint === 'chat' ? chatBody(body, content, usage, state.seq) : responsesBody(body, content, usage, state.seq),
  );
}
