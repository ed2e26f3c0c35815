/**
 * The OpenAI stand-in's answers in OpenAI's wire shapes: error bodies per status, chat completion
 * and Responses API bodies, model objects, and the usage estimate when none is fixed.
 */
import type { FixedUsage } from './openai.types.ts';

const MODEL_CREATED = 1715367049;

export interface ErrorBody {
  message: string;
  type: string;
  param: string | null;
  code: string | null;
}

export function defaultError(status: number): ErrorBody {
  if (status === 400)
    return { message: 'Invalid request (stand-in fault).', type: 'invalid_request_error', param: null, code: null };
  if (status === 401)
    return {
      message: 'Incorrect API key provided.',
      type: 'invalid_request_error',
      param: null,
      code: 'invalid_api_key',
    };
  if (status === 403)
    return {
      message: 'You are not allowed to sample from this model.',
      type: 'invalid_request_error',
      param: null,
      code: null,
    };
  if (status === 404)
    return {
      message: 'The model does not exist or you do not have access to it.',
      type: 'invalid_request_error',
      param: null,
      code: 'model_not_found',
    };
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

export function maskKey(key: string): string {
  return key.length <= 8 ? '***' : `${key.slice(0, 3)}***${key.slice(-4)}`;
}

export const usageFor = (
  endpoint: 'chat' | 'responses',
  body: any,
  content: string,
  fixedUsage: FixedUsage | null,
): FixedUsage => {
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

export const chatBody = (body: any, content: string, usage: FixedUsage, seq: number) => ({
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

export const responsesBody = (body: any, content: string, usage: FixedUsage, seq: number) => {
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

export const modelObject = (id: string) => ({ id, object: 'model', created: MODEL_CREATED, owned_by: 'system' });
