/**
 * The triage eval's arithmetic, apart from any call: each message's outcome tallied into
 * per-field accuracy, confusion matrices (rows the label, columns the answer), per-tag
 * counts, tokens and cost. Accuracy is over the messages that were answered; failed calls
 * are counted on their own, so a flaky endpoint reads as failures, not as a worse model.
 */
import { priority, replyStatus } from '../../shared/schemas/ai.ts';
import type { TokenUsage } from '../../server/providers/openai.ts';
import type { Priority, ReplyStatus } from './labelled.ts';

export const PRIORITIES: readonly Priority[] = priority.options;
export const REPLY_STATUSES: readonly ReplyStatus[] = replyStatus.options;

/** USD per million tokens. */
export interface Price {
  input: number;
  output: number;
}

export interface MessageOutcome {
  id: string;
  tags: string[];
  expected: { priority: Priority; replyStatus: ReplyStatus };
  /** The parsed answer, or null when the call failed. */
  answer: { priority: Priority; replyStatus: ReplyStatus; confidence: number } | null;
  /** Why there is no answer: an error code of the provider, 'refused', or 'AI_REQUEST_FAILED' for an answer off the schema. */
  failure: string | null;
  /** As the provider reported it; null when the call failed before an answer. */
  usage: TokenUsage | null;
  costUsd: number;
}

export interface Confusion<L extends string> {
  labels: readonly L[];
  /** counts[i][j]: messages labelled labels[i] that were answered labels[j]. */
  counts: number[][];
}

export interface TagScore {
  messages: number;
  answered: number;
  priority: number;
  replyStatus: number;
  both: number;
}

export interface Score {
  messages: number;
  answered: number;
  failed: number;
  /** Correct answers, by field and both at once. */
  correct: { priority: number; replyStatus: number; both: number };
  /** correct / answered, or null when nothing was answered. */
  accuracy: { priority: number | null; replyStatus: number | null; both: number | null };
  confusion: { priority: Confusion<Priority>; replyStatus: Confusion<ReplyStatus> };
  byTag: Record<string, TagScore>;
  tokens: {
    prompt: number;
    completion: number;
    callsWithUsage: number;
    perMessage: { prompt: number; completion: number };
  };
  cost: { pricePerMillion: Price; totalUsd: number; perMessageUsd: number };
}

/** What `usage` costs at `price`. */
export const costOf = (usage: TokenUsage | null, price: Price) =>
  usage ? (usage.promptTokens * price.input + usage.completionTokens * price.output) / 1_000_000 : 0;

const matrix = <L extends string>(labels: readonly L[]): Confusion<L> => ({
  labels,
  counts: labels.map(() => labels.map(() => 0)),
});
const ratio = (n: number, of: number) => (of ? n / of : null);

export function score(outcomes: readonly MessageOutcome[], price: Price): Score {
  const confusion = { priority: matrix(PRIORITIES), replyStatus: matrix(REPLY_STATUSES) };
  const correct = { priority: 0, replyStatus: 0, both: 0 };
  const byTag: Record<string, TagScore> = {};
  let answered = 0;
  let prompt = 0;
  let completion = 0;
  let callsWithUsage = 0;
  for (const o of outcomes) {
    if (o.usage) {
      callsWithUsage += 1;
      prompt += o.usage.promptTokens;
      completion += o.usage.completionTokens;
    }
    const tags = o.tags.map((t) => (byTag[t] ??= { messages: 0, answered: 0, priority: 0, replyStatus: 0, both: 0 }));
    for (const t of tags) t.messages += 1;
    if (!o.answer) continue;
    answered += 1;
    const p = o.answer.priority === o.expected.priority;
    const r = o.answer.replyStatus === o.expected.replyStatus;
    correct.priority += Number(p);
    correct.replyStatus += Number(r);
    correct.both += Number(p && r);
    for (const t of tags) {
      t.answered += 1;
      t.priority += Number(p);
      t.replyStatus += Number(r);
      t.both += Number(p && r);
    }
    confusion.priority.counts[PRIORITIES.indexOf(o.expected.priority)][PRIORITIES.indexOf(o.answer.priority)] += 1;
    confusion.replyStatus.counts[REPLY_STATUSES.indexOf(o.expected.replyStatus)][
      REPLY_STATUSES.indexOf(o.answer.replyStatus)
    ] += 1;
  }
  // From the totals, not a sum of per-call costs: the figure does not depend on call order.
  const totalUsd = costOf({ promptTokens: prompt, completionTokens: completion }, price);
  return {
    messages: outcomes.length,
    answered,
    failed: outcomes.length - answered,
    correct,
    accuracy: {
      priority: ratio(correct.priority, answered),
      replyStatus: ratio(correct.replyStatus, answered),
      both: ratio(correct.both, answered),
    },
    confusion,
    byTag,
    tokens: {
      prompt,
      completion,
      callsWithUsage,
      perMessage: { prompt: ratio(prompt, callsWithUsage) ?? 0, completion: ratio(completion, callsWithUsage) ?? 0 },
    },
    cost: { pricePerMillion: price, totalUsd, perMessageUsd: ratio(totalUsd, callsWithUsage) ?? 0 },
  };
}

/** One pass of the eval: its score, what it ran, and each message's outcome. */
export interface TriageEvalResult extends Score {
  model: string;
  withExamples: boolean;
  /** Corrections given as examples (0 without), and how many of them the prompt carried: it bounds them (LIMITS.examples, LIMITS.examplesTokens). */
  examplesGiven: number;
  examplesInPrompt: number;
  outcomes: MessageOutcome[];
}
