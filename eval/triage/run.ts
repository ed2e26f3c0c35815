/**
 * `npm run eval:triage`: the labelled set (labelled.ts) through the service's own triage,
 * the prompt of prompt.ts, the answer format and parse of ai-call.ts / structured.ts and the
 * OpenAI provider, against whatever OPENAI_BASE_URL / OPENAI_API_KEY name. Twice: without
 * examples, then with the owner's corrections as examples. No budget ledger and no database:
 * what is measured is the prompt and the model, and the run needs nothing but an endpoint.
 * What the numbers mean, and what a run costs: docs/triage-eval.md.
 *
 *   npm run eval:triage                       both passes, the report on stdout
 *   npm run eval:triage -- --json out.json    the results as JSON as well
 */
import { writeFileSync } from 'node:fs';
import { answerFormat } from '../../server/domain/ai/ai-call.ts';
import { analysisPrompt, type PromptMessage, type TriageExample } from '../../server/domain/ai/prompt.ts';
import { parseAnswer } from '../../server/domain/ai/structured.ts';
import { AppError } from '../../server/domain/errors.ts';
import { createLogger } from '../../server/infra/logger.ts';
import { createOpenAiProvider, type AiProvider, type StructuredAnswer } from '../../server/providers/openai.ts';
import { analysisModelOutput } from '../../shared/schemas/ai.ts';
import { CORRECTIONS, LABELLED, labelledSetProblems, OWNER, SENT_AT, type LabelledMessage } from './labelled.ts';
import { endpointLabel, renderReport } from './report.ts';
import { costOf, score, type MessageOutcome, type Price, type TriageEvalResult } from './score.ts';

export type { TriageEvalResult };

const FORMAT = answerFormat('email_triage', analysisModelOutput);
export const OPERATION = 'eval-triage';
/** gpt-4o-mini's list price (USD per million tokens, standard tier) when EVAL_PRICE_* are unset. */
export const DEFAULT_PRICE: Price = { input: 0.15, output: 0.6 };
export const DEFAULT_MODEL = 'gpt-4o-mini';

export interface TriageEvalOptions {
  provider: AiProvider;
  /** For the report; default the provider's. */
  model?: string;
  withExamples: boolean;
  messages: readonly LabelledMessage[];
  corrections: readonly LabelledMessage[];
  pricePerMillion?: Price;
  /** Calls in flight at once; default 4. */
  concurrency?: number;
  ownerAddress?: string;
}

/** What the mailbox would hold for the message: Gmail's snippet is the start of the body, whitespace folded. */
const snippetOf = (text: string) => text.replace(/\s+/g, ' ').trim().slice(0, 200);

const promptMessage = (m: LabelledMessage): PromptMessage => ({
  fromName: m.fromName,
  fromAddress: m.fromAddress,
  subject: m.subject,
  snippet: snippetOf(m.bodyText),
  sentAt: SENT_AT,
  bodyText: m.bodyText,
});

const asExample = (c: LabelledMessage): TriageExample => ({
  fromName: c.fromName,
  subject: c.subject,
  snippet: snippetOf(c.bodyText),
  priority: c.expected.priority,
  replyStatus: c.expected.replyStatus,
});

/** The corrections as the prompt carried them (prompt.ts escapes `<` inside, so the block ends at its own tag). */
function carried(user: string): number {
  const block = /<corrections>\n(.*)\n<\/corrections>/s.exec(user);
  return block ? (JSON.parse(block[1]!) as unknown[]).length : 0;
}

/** `fn` over `items`, at most `limit` at a time, results in the items' order. */
async function inPool<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return out;
}

export async function runTriageEval(opts: TriageEvalOptions): Promise<TriageEvalResult> {
  const price = opts.pricePerMillion ?? DEFAULT_PRICE;
  const ownerAddress = opts.ownerAddress ?? OWNER.address;
  const examples = opts.withExamples ? opts.corrections.map(asExample) : [];
  let examplesInPrompt = 0;

  const triageOne = async (m: LabelledMessage): Promise<MessageOutcome> => {
    const prompt = analysisPrompt({ threadSubject: m.subject, latest: promptMessage(m), ownerAddress, examples });
    examplesInPrompt = Math.max(examplesInPrompt, carried(prompt.user));
    const outcome: MessageOutcome = {
      id: m.id,
      tags: m.tags,
      expected: m.expected,
      answer: null,
      failure: null,
      usage: null,
      costUsd: 0,
    };
    let reply: StructuredAnswer;
    try {
      reply = await opts.provider.complete({
        operation: OPERATION,
        system: prompt.system,
        user: prompt.user,
        schemaName: FORMAT.name,
        schema: FORMAT.jsonSchema,
        maxOutputTokens: prompt.maxOutputTokens,
      });
    } catch (err) {
      outcome.failure = err instanceof AppError ? err.code : 'error';
      return outcome;
    }
    // A refusal or an answer off the schema was billed all the same.
    outcome.usage = reply.usage;
    outcome.costUsd = costOf(reply.usage, price);
    if (reply.refused) {
      outcome.failure = 'refused';
      return outcome;
    }
    try {
      const value = parseAnswer(FORMAT.schema, reply.text);
      outcome.answer = { priority: value.priority, replyStatus: value.replyStatus, confidence: value.confidence };
    } catch (err) {
      outcome.failure = err instanceof AppError ? err.code : 'error';
    }
    return outcome;
  };

  const outcomes = await inPool(opts.messages, opts.concurrency ?? 4, triageOne);
  return {
    model: opts.model ?? opts.provider.model,
    withExamples: opts.withExamples,
    examplesGiven: examples.length,
    examplesInPrompt,
    ...score(outcomes, price),
    outcomes,
  };
}

class UsageError extends Error {}

function priceFrom(env: NodeJS.ProcessEnv): Price {
  const read = (name: string, fallback: number) => {
    const raw = env[name]?.trim();
    if (!raw) return fallback;
    const n = Number(raw);
    if (!Number.isFinite(n) || n < 0)
      throw new UsageError(`${name} must be a price in USD per million tokens, e.g. 0.15 (got ${JSON.stringify(raw)})`);
    return n;
  };
  return {
    input: read('EVAL_PRICE_INPUT', DEFAULT_PRICE.input),
    output: read('EVAL_PRICE_OUTPUT', DEFAULT_PRICE.output),
  };
}

function jsonPathFrom(argv: readonly string[]): string | undefined {
  let json: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--json') {
      json = argv[++i];
      if (!json) throw new UsageError('--json needs a file name');
    } else
      throw new UsageError(
        `unknown argument ${JSON.stringify(argv[i])}; usage: npm run eval:triage [-- --json <file>]`,
      );
  }
  return json;
}

/** The CLI; returns the exit code: 0 done, 1 nothing answered (or a bad set), 2 not configured. */
export async function main(
  argv: readonly string[] = process.argv.slice(2),
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const apiKey = env.OPENAI_API_KEY?.trim();
  if (!apiKey) {
    process.stderr.write(
      "eval:triage: OPENAI_API_KEY is not set; nothing was sent. Set it (and OPENAI_BASE_URL for an endpoint other than OpenAI's); see docs/triage-eval.md.\n",
    );
    return 2;
  }
  let price: Price;
  let jsonPath: string | undefined;
  let concurrency: number;
  try {
    price = priceFrom(env);
    jsonPath = jsonPathFrom(argv);
    concurrency = Number(env.EVAL_CONCURRENCY?.trim() || 4);
    if (!Number.isInteger(concurrency) || concurrency < 1)
      throw new UsageError('EVAL_CONCURRENCY must be a whole number of at least 1');
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`eval:triage: ${err.message}\n`);
    return 2;
  }
  const problems = labelledSetProblems(LABELLED, CORRECTIONS);
  if (problems.length) {
    process.stderr.write(`eval:triage: the labelled set is not usable:\n  ${problems.join('\n  ')}\n`);
    return 1;
  }
  const baseUrl = env.OPENAI_BASE_URL?.trim() || undefined;
  const model = env.OPENAI_MODEL?.trim() || DEFAULT_MODEL;
  const provider = createOpenAiProvider({ apiKey, baseUrl, model, log: createLogger({ level: 'silent' }) });
  const common = { provider, messages: LABELLED, corrections: CORRECTIONS, pricePerMillion: price, concurrency };
  const passes = [
    await runTriageEval({ ...common, withExamples: false }),
    await runTriageEval({ ...common, withExamples: true }),
  ];
  const endpoint = endpointLabel(baseUrl);
  process.stdout.write(renderReport(passes, { endpoint }));
  if (jsonPath) writeFileSync(jsonPath, `${JSON.stringify({ model, endpoint, passes }, null, 2)}\n`);
  return passes.some((p) => p.answered > 0) ? 0 : 1;
}

if (import.meta.main) process.exitCode = await main();
