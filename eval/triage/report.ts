/**
 * The triage eval's report as plain text: for each pass the per-field accuracy, both
 * confusion matrices, tokens and cost, accuracy per tag, the misses by id and the failures;
 * then what the examples changed. Only ids and labels are printed, never a model's reason
 * (it may quote the mail) nor anything of the configuration but the endpoint's host and path.
 */
import type { Confusion, TriageEvalResult } from './score.ts';

/** The endpoint without credentials, query or fragment (a base URL may carry `user:key@`). */
export function endpointLabel(baseUrl: string | undefined): string {
  if (!baseUrl) return 'the client library default (OpenAI)';
  try {
    const url = new URL(baseUrl);
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/$/, '')}`;
  } catch {
    return '(an OPENAI_BASE_URL that is not a URL)';
  }
}

/** Columns padded to their widest cell; the first left-aligned, the rest right-aligned. */
function table(rows: string[][], indent = '  '): string {
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => (r[c] ?? '').length)));
  return rows
    .map(
      (r) =>
        indent +
        r
          .map((cell, c) => (c === 0 ? cell.padEnd(widths[c]!) : cell.padStart(widths[c]!)))
          .join('  ')
          .trimEnd(),
    )
    .join('\n');
}

const int = (n: number) => n.toLocaleString('en-US');
const pct = (n: number | null) => (n === null ? 'n/a' : `${(n * 100).toFixed(1)} %`);
const usd = (n: number) => `$${n.toFixed(n >= 0.01 ? 4 : 6)}`;
const points = (a: number | null, b: number | null) =>
  a === null || b === null ? 'n/a' : `${b >= a ? '+' : ''}${((b - a) * 100).toFixed(1)} pts`;

function confusionTable<L extends string>(name: string, m: Confusion<L>): string {
  const rows = [
    [`${name} labelled \\ answered`, ...m.labels],
    ...m.labels.map((l, i) => [l, ...m.counts[i]!.map(String)]),
  ];
  return table(rows);
}

function renderPass(p: TriageEvalResult): string {
  const title = p.withExamples
    ? `With the owner's corrections as examples (${p.examplesInPrompt} of ${p.examplesGiven} fit in the prompt)`
    : 'Without examples';
  const accuracy = (field: 'priority' | 'replyStatus' | 'both') => [
    field,
    pct(p.accuracy[field]),
    `${p.correct[field]}/${p.answered}`,
  ];
  const tags = Object.entries(p.byTag).sort(([a, x], [b, y]) => y.messages - x.messages || a.localeCompare(b));
  const misses = p.outcomes.filter(
    (o) => o.answer && (o.answer.priority !== o.expected.priority || o.answer.replyStatus !== o.expected.replyStatus),
  );
  const failures = p.outcomes.filter((o) => o.failure);
  return [
    `== ${title} ==`,
    `  model ${p.model}: ${p.answered} of ${p.messages} messages answered, ${p.failed} failed`,
    '',
    table([['accuracy', 'share', 'correct'], accuracy('priority'), accuracy('replyStatus'), accuracy('both')]),
    '',
    confusionTable('priority', p.confusion.priority),
    '',
    confusionTable('replyStatus', p.confusion.replyStatus),
    '',
    table([
      ['tokens', 'total', 'a message'],
      ['prompt', int(p.tokens.prompt), p.tokens.perMessage.prompt.toFixed(1)],
      ['completion', int(p.tokens.completion), p.tokens.perMessage.completion.toFixed(1)],
      ['cost (USD)', usd(p.cost.totalUsd), usd(p.cost.perMessageUsd)],
    ]),
    `  at $${p.cost.pricePerMillion.input} input / $${p.cost.pricePerMillion.output} output per million tokens; ${p.tokens.callsWithUsage} calls reported usage`,
    '',
    table([
      ['tag', 'messages', 'answered', 'priority', 'replyStatus', 'both'],
      ...tags.map(([t, s]) => [
        t,
        String(s.messages),
        String(s.answered),
        pct(s.answered ? s.priority / s.answered : null),
        pct(s.answered ? s.replyStatus / s.answered : null),
        pct(s.answered ? s.both / s.answered : null),
      ]),
    ]),
    '',
    misses.length
      ? `  misses (labelled -> answered):\n${table(
          misses.map((o) => [
            o.id,
            `${o.expected.priority}/${o.expected.replyStatus}`,
            '->',
            `${o.answer!.priority}/${o.answer!.replyStatus}`,
          ]),
          '    ',
        )}`
      : '  misses: none',
    failures.length
      ? `  failures:\n${table(
          failures.map((o) => [o.id, o.failure!]),
          '    ',
        )}`
      : '  failures: none',
  ].join('\n');
}

export function renderReport(passes: readonly TriageEvalResult[], meta: { endpoint: string }): string {
  const [without, withExamples] = passes;
  const parts = [
    `Triage eval: ${passes[0]?.messages ?? 0} labelled messages, endpoint ${meta.endpoint}`,
    ...passes.map(renderPass),
  ];
  if (without && withExamples) {
    parts.push(
      [
        '== What the examples changed (with minus without) ==',
        table([
          ['accuracy', 'change'],
          ['priority', points(without.accuracy.priority, withExamples.accuracy.priority)],
          ['replyStatus', points(without.accuracy.replyStatus, withExamples.accuracy.replyStatus)],
          ['both', points(without.accuracy.both, withExamples.accuracy.both)],
          [
            'prompt tokens a message',
            `${withExamples.tokens.perMessage.prompt - without.tokens.perMessage.prompt >= 0 ? '+' : ''}${(withExamples.tokens.perMessage.prompt - without.tokens.perMessage.prompt).toFixed(1)}`,
          ],
        ]),
        `  total cost of both passes: ${usd(without.cost.totalUsd + withExamples.cost.totalUsd)}`,
      ].join('\n'),
    );
  }
  return `${parts.join('\n\n')}\n`;
}
