/**
 * `npm run eval:triage`, against the OpenAI stand-in: this proves the harness, not a model.
 * The responder answers each message's label, except the priority of every third message and
 * the reply status of every fifth (it finds the message by the email JSON of the prompt, as a
 * model would read it), with fixed usage; the harness must report exactly the accuracy,
 * confusion cells, tokens and cost that implies, send the service's own prompt (with a
 * <corrections> block only in the pass with examples), count a failed call without stopping,
 * and, as a CLI, print the report and refuse to run without a key.
 */
import { after, before, beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { taggedJson } from '../../../demo/ai-responder.ts';
import {
  CORRECTIONS,
  LABELLED,
  labelledSetProblems,
  OWNER,
  SENT_AT,
  type LabelledMessage,
} from '../../../eval/triage/labelled.ts';
import { runTriageEval } from '../../../eval/triage/run.ts';
import { PRIORITIES, REPLY_STATUSES } from '../../../eval/triage/score.ts';
import { analysisPrompt } from '../../../server/domain/ai/prompt.ts';
import { createLogger } from '../../../server/infra/logger.ts';
import { createOpenAiProvider } from '../../../server/providers/openai.ts';
import { startOpenAIStandIn, type OpenAIStandIn } from '../../../stand-ins/openai.stand-in.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../../..');
const N = LABELLED.length;
const USAGE = { prompt_tokens: 700, completion_tokens: 80 };
/** Binary fractions, so that the expected cost is one exact float. */
const PRICE = { input: 0.5, output: 2 };

const wrongPriority = (i: number) => i % 3 === 0;
const wrongReply = (i: number) => i % 5 === 0;
const nextOf = <T>(list: readonly T[], v: T) => list[(list.indexOf(v) + 1) % list.length]!;
/** What the responder answers for message `i`. */
const answerOf = (m: LabelledMessage, i: number) => ({
  priority: wrongPriority(i) ? nextOf(PRIORITIES, m.expected.priority) : m.expected.priority,
  replyStatus: wrongReply(i) ? nextOf(REPLY_STATUSES, m.expected.replyStatus) : m.expected.replyStatus,
});

const userTurn = (body: any): string => body.messages.find((t: { role: string }) => t.role === 'user').content;
const bySubject = new Map(LABELLED.map((m, i) => [m.subject, i]));
function responder(body: any) {
  const email = taggedJson(userTurn(body), 'email') as { message: { subject: string } };
  const i = bySubject.get(email.message.subject);
  if (i === undefined) throw new Error(`no labelled message has the subject ${email.message.subject}`);
  return { ...answerOf(LABELLED[i]!, i), confidence: 0.9, reason: 'Stand-in answer.', suggestedAction: 'None.' };
}

/** The tallies the responder implies over the messages at `indices`. */
function implied(indices: number[]) {
  const priority = PRIORITIES.map(() => PRIORITIES.map(() => 0));
  const replyStatus = REPLY_STATUSES.map(() => REPLY_STATUSES.map(() => 0));
  let p = 0;
  let r = 0;
  let both = 0;
  for (const i of indices) {
    const m = LABELLED[i]!;
    const a = answerOf(m, i);
    priority[PRIORITIES.indexOf(m.expected.priority)]![PRIORITIES.indexOf(a.priority)]! += 1;
    replyStatus[REPLY_STATUSES.indexOf(m.expected.replyStatus)]![REPLY_STATUSES.indexOf(a.replyStatus)]! += 1;
    p += Number(!wrongPriority(i));
    r += Number(!wrongReply(i));
    both += Number(!wrongPriority(i) && !wrongReply(i));
  }
  return { priority, replyStatus, correct: { priority: p, replyStatus: r, both } };
}
const all = LABELLED.map((_, i) => i);

describe('triage eval', () => {
  let openai: OpenAIStandIn;
  before(async () => {
    openai = await startOpenAIStandIn();
  });
  after(() => openai.close());
  beforeEach(() => {
    openai.reset();
    openai.setResponder(responder);
    openai.setUsage(USAGE);
  });
  const provider = () =>
    createOpenAiProvider({
      apiKey: openai.apiKey,
      baseUrl: openai.baseUrl,
      model: 'gpt-4o-mini',
      log: createLogger({ level: 'silent' }),
      timeoutMs: 10_000,
    });
  const evaluate = (withExamples: boolean, concurrency?: number) =>
    runTriageEval({
      provider: provider(),
      withExamples,
      messages: LABELLED,
      corrections: CORRECTIONS,
      pricePerMillion: PRICE,
      concurrency,
    });

  it('has a labelled set that covers what the issue asks for', () => {
    assert.deepEqual(labelledSetProblems(LABELLED, CORRECTIONS), []);
    assert.ok(N >= 60, `${N} messages`);
    assert.equal(bySubject.size, N, 'subjects are unique (the responder finds messages by them)');
    for (const p of PRIORITIES)
      for (const r of REPLY_STATUSES) {
        const count = LABELLED.filter((m) => m.expected.priority === p && m.expected.replyStatus === r).length;
        assert.ok(count >= 3, `${p}/${r}: ${count} messages`);
      }
    const tagged = (t: string) => LABELLED.filter((m) => m.tags.includes(t));
    for (const lang of ['en', 'de', 'fr', 'es', 'ja']) assert.ok(tagged(lang).length >= 5, lang);
    for (const kind of [
      'newsletter',
      'phishing',
      'automated',
      'injection',
      'owner-sent',
      'preference',
      'calendar',
      'receipt',
      'ci',
    ])
      assert.ok(tagged(kind).length >= 2, kind);
    for (const m of tagged('phishing'))
      assert.deepEqual(m.expected, { priority: 'LOW', replyStatus: 'NO_REPLY_NEEDED' }, m.id);
    for (const m of tagged('owner-sent'))
      assert.ok(m.fromAddress === OWNER.address && m.expected.replyStatus === 'WAITING_ON_OTHERS', m.id);
    assert.ok(CORRECTIONS.length >= 5);
    const bad = [
      { ...LABELLED[0]!, expected: { priority: 'HIGH', replyStatus: 'NEEDS_REPLY' } },
      LABELLED[0]!,
    ] as LabelledMessage[];
    assert.deepEqual(labelledSetProblems(bad, [{ ...LABELLED[0]!, id: 'c' }]), [
      `${LABELLED[0]!.id}: unknown priority HIGH`,
      `${LABELLED[0]!.id}: id used twice`,
      'c: a correction must not be a labelled message',
    ]);
  });

  it('reports exactly the accuracy, confusion cells, tokens and cost the answers imply', async () => {
    const result = await evaluate(false);
    const want = implied(all);
    assert.equal(result.messages, N);
    assert.equal(result.answered, N);
    assert.equal(result.failed, 0);
    assert.deepEqual(result.correct, want.correct);
    assert.equal(want.correct.priority, N - Math.ceil(N / 3));
    assert.equal(want.correct.replyStatus, N - Math.ceil(N / 5));
    assert.equal(result.accuracy.priority, want.correct.priority / N);
    assert.equal(result.accuracy.both, want.correct.both / N);
    assert.deepEqual(result.confusion.priority.counts, want.priority);
    assert.deepEqual(result.confusion.replyStatus.counts, want.replyStatus);
    // One cell by hand: URGENT messages answered IMPORTANT are exactly the URGENT ones at every third index.
    assert.equal(
      result.confusion.priority.counts[0]![1],
      LABELLED.filter((m, i) => m.expected.priority === 'URGENT' && wrongPriority(i)).length,
    );
    assert.deepEqual(result.tokens, {
      prompt: 700 * N,
      completion: 80 * N,
      callsWithUsage: N,
      perMessage: { prompt: 700, completion: 80 },
    });
    assert.equal(result.cost.totalUsd, (510 * N) / 1e6);
    assert.ok(Math.abs(result.cost.perMessageUsd - 510 / 1e6) < 1e-15);
    assert.ok(result.outcomes.every((o) => o.costUsd === 510 / 1e6));
    assert.equal(result.byTag.phishing!.messages, LABELLED.filter((m) => m.tags.includes('phishing')).length);
    assert.equal(openai.calls.chat, N);
  });

  it("sends the service's own prompt, with the corrections block only in the pass with examples", async () => {
    const without = await evaluate(false);
    const plain = openai.requests.map((r) => r.body);
    openai.resetCounters();
    const withExamples = await evaluate(true);
    const taught = openai.requests.map((r) => r.body);
    assert.equal(plain.length, N);
    assert.equal(taught.length, N);
    assert.ok(
      plain.every((b) => !userTurn(b).includes('<corrections>') && !b.messages[0].content.includes('<corrections>')),
    );
    assert.ok(
      taught.every((b) => userTurn(b).includes('<corrections>') && b.messages[0].content.includes('<corrections>')),
    );
    const first = LABELLED[0]!;
    const own = analysisPrompt({
      threadSubject: first.subject,
      latest: { ...first, snippet: '', sentAt: SENT_AT },
      ownerAddress: OWNER.address,
    });
    const sent = plain.find((b) => userTurn(b).includes(JSON.stringify(first.subject)))!;
    assert.deepEqual(sent.messages, [
      { role: 'system', content: own.system },
      { role: 'user', content: own.user },
    ]);
    assert.equal(sent.response_format.json_schema.name, 'email_triage');
    assert.equal(sent.max_completion_tokens, own.maxOutputTokens);
    const shown = taggedJson(userTurn(taught[0]), 'corrections') as { subject: string; priority: string }[];
    assert.equal(withExamples.examplesInPrompt, shown.length);
    assert.equal(withExamples.examplesGiven, CORRECTIONS.length);
    assert.equal(without.examplesInPrompt, 0);
    assert.ok(shown.length >= 1 && shown.length <= CORRECTIONS.length);
    assert.deepEqual(
      shown.map((e) => [e.subject, e.priority]),
      CORRECTIONS.slice(0, shown.length).map((c) => [c.subject, c.expected.priority]),
    );
    assert.deepEqual(withExamples.correct, without.correct, 'the responder ignores the examples');
  });

  it('counts a failed call and an answer off the schema as failures, and runs on', async () => {
    openai.injectFault({ status: 500 });
    openai.injectFault({ kind: 'schema-invalid' });
    // One at a time, so the first two messages meet the two faults.
    const result = await evaluate(false, 1);
    assert.equal(openai.calls.chat, N, 'one request a message: a 500 is not retried');
    assert.equal(result.failed, 2);
    assert.equal(result.answered, N - 2);
    assert.deepEqual(
      result.outcomes.slice(0, 2).map((o) => [o.id, o.failure, o.usage !== null]),
      [
        [LABELLED[0]!.id, 'AI_REQUEST_FAILED', false],
        [LABELLED[1]!.id, 'AI_REQUEST_FAILED', true],
      ],
    );
    const want = implied(all.slice(2));
    assert.deepEqual(result.correct, want.correct);
    assert.equal(result.accuracy.replyStatus, want.correct.replyStatus / (N - 2));
    assert.deepEqual(result.confusion.priority.counts, want.priority);
    // The answer off the schema was billed; the 500 reported nothing.
    assert.equal(result.tokens.prompt, 700 * (N - 1));
    assert.equal(result.tokens.callsWithUsage, N - 1);
  });

  const childEnv = (extra: Record<string, string>) => ({
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(OPENAI_|EVAL_)/.test(k))),
    ...extra,
  });

  it('runs both passes as `npm run eval:triage` and prints the report', async () => {
    const json = path.join(mkdtempSync(path.join(tmpdir(), 'mia-eval-')), 'result.json');
    const env = childEnv({
      OPENAI_API_KEY: openai.apiKey,
      OPENAI_BASE_URL: openai.baseUrl,
      EVAL_PRICE_INPUT: '0.5',
      EVAL_PRICE_OUTPUT: '2',
    });
    const { stdout, stderr } = await run(process.execPath, ['eval/triage/run.ts', '--json', json], { cwd: ROOT, env });
    assert.equal(stderr, '');
    assert.equal(openai.calls.chat, 2 * N);
    const want = implied(all);
    assert.match(
      stdout,
      new RegExp(`^Triage eval: ${N} labelled messages, endpoint ${openai.baseUrl.replace(/[./]/g, '\\$&')}$`, 'm'),
    );
    assert.match(stdout, /^== Without examples ==$/m);
    assert.match(stdout, /^== With the owner's corrections as examples \(\d of 5 fit in the prompt\) ==$/m);
    assert.match(
      stdout,
      new RegExp(
        `^  priority +${((want.correct.priority / N) * 100).toFixed(1)} % +${want.correct.priority}/${N}$`,
        'm',
      ),
    );
    assert.match(
      stdout,
      new RegExp(
        `^  replyStatus +${((want.correct.replyStatus / N) * 100).toFixed(1)} % +${want.correct.replyStatus}/${N}$`,
        'm',
      ),
    );
    assert.match(stdout, /^  priority labelled \\ answered +URGENT +IMPORTANT +NORMAL +LOW$/m);
    assert.match(stdout, /^  replyStatus labelled \\ answered +NEEDS_REPLY +WAITING_ON_OTHERS +NO_REPLY_NEEDED$/m);
    assert.match(stdout, new RegExp(`^  prompt +${(700 * N).toLocaleString('en-US')} +700\\.0$`, 'm'));
    assert.match(stdout, new RegExp(`^    ${LABELLED[0]!.id} `, 'm'), 'the first message is listed as a miss');
    assert.ok(!stdout.includes(openai.apiKey), 'the key is never printed');
    const report = JSON.parse(readFileSync(json, 'utf8'));
    assert.deepEqual(
      report.passes.map((p: { withExamples: boolean }) => p.withExamples),
      [false, true],
    );
    for (const p of report.passes) {
      assert.deepEqual(p.correct, want.correct);
      assert.deepEqual(p.confusion.replyStatus.counts, want.replyStatus);
      assert.equal(p.cost.totalUsd, (510 * N) / 1e6);
    }
    assert.ok(!readFileSync(json, 'utf8').includes(openai.apiKey));
  });

  it('refuses to run without OPENAI_API_KEY, with exit code 2', async () => {
    const err = await run(process.execPath, ['eval/triage/run.ts'], {
      cwd: ROOT,
      env: childEnv({ OPENAI_BASE_URL: openai.baseUrl }),
    }).then(
      () => assert.fail('the run should have refused'),
      (e: { code: number; stdout: string; stderr: string }) => e,
    );
    assert.equal(err.code, 2);
    assert.match(err.stderr, /OPENAI_API_KEY is not set; nothing was sent/);
    assert.equal(err.stdout, '');
    assert.equal(openai.calls.total, 0);
  });
});
