/**
 * What a chat or Responses request asks for (json_schema, json_object or text output) and whether
 * the real API would accept it: model, messages or input, no streaming, schema name and strict rules.
 */
import { strictSchemaProblems } from '../json-schema-sample.ts';
import type { ErrorBody } from './response.wire.ts';

export interface OutputSpec {
  mode: 'json_schema' | 'json_object' | 'text';
  schema: unknown;
  name: string | undefined;
  strict: boolean;
}

export const outputSpec = (endpoint: 'chat' | 'responses', body: any): OutputSpec => {
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
export const validate = (
  endpoint: 'chat' | 'responses',
  body: any,
  spec: OutputSpec,
  enforceStrict: boolean,
): Partial<ErrorBody> | undefined => {
  if (typeof body !== 'object' || body === null || Array.isArray(body))
    return { message: 'The request body must be a JSON object.', param: null };
  if (typeof body.model !== 'string' || body.model === '')
    return { message: 'you must provide a model parameter', param: 'model' };
  if (body.stream === true)
    return {
      message: 'The OpenAI stand-in does not support stream: true.',
      param: 'stream',
      code: 'unsupported_value',
    };
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
      return {
        message: `Missing required parameter: '${param}.schema'.`,
        param: `${param}.schema`,
        code: 'missing_required_parameter',
      };
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
