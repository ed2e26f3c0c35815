/**
 * Checks every answer of a test app against the document its server serves (GET
 * /openapi.json, built by the same function) and fails the run when one does not match: a
 * hook after all of the process's tests (registered on the root test when this module is
 * first imported; under test/run.ts a process runs a shard's files) throws an AssertionError
 * naming, per test file and test, method, path, status, the schema errors and a short excerpt
 * of the body (token-like fields redacted; never headers' values). Failing there rather than
 * in the app's own cleanup lets every other cleanup run first: an after hook that throws skips
 * the hooks after it (stand-ins, databases), and the process hangs.
 * Also writes the process's tally (answers checked per operation and status) for the run's
 * summary (conformance-tally.ts).
 */
import { AssertionError } from 'node:assert';
import path from 'node:path';
import { after } from 'node:test';
import { buildOpenApiDocument } from '../../server/http/openapi.ts';
import type { AnswerObserver, ObservedAnswer } from '../../server/http/observe.ts';
import { appRouter } from '../../server/trpc/routers/index.ts';
import { appendTally } from './conformance-tally.ts';
import { conformanceChecker, type ConformanceChecker, type Verdict } from './openapi-conformance.ts';

export interface AnswerRecorder {
  observe: AnswerObserver;
  /** The mismatches recorded so far, as the failure message, and forgets them (undefined: none). */
  takeReport(): string | undefined;
}

let checker: Promise<ConformanceChecker> | undefined;
/** The checker of the served document, built and compiled once per process. */
export function servedDocumentChecker(baseUrl: string): Promise<ConformanceChecker> {
  return (checker ??= conformanceChecker(buildOpenApiDocument(appRouter, { baseUrl })));
}

const SECRET_KEY = /token|secret|cookie|password|authorization|session/i;

/** A short excerpt of a body: JSON with token-like fields redacted, cut at 160 characters. */
export function excerpt(body: string | undefined): string {
  if (body === undefined) return '(no body)';
  let text = body;
  try {
    text = JSON.stringify(JSON.parse(body), (key, value) =>
      key && SECRET_KEY.test(key) && typeof value === 'string' ? '[redacted]' : value,
    );
  } catch {
    // not JSON: the text as it is
  }
  return text.length > 160 ? `${text.slice(0, 160)}…` : text;
}

interface Group {
  verdict: Verdict;
  count: number;
  method: string;
  path: string;
  excerpt: string;
}

/** One line per kind of mismatch (operation, status, problems), with its first example. */
function mismatchReport(groups: readonly Group[]): string {
  const total = groups.reduce((n, g) => n + g.count, 0);
  const lines = groups.slice(0, 20).map((g) => {
    const where = g.path.length > 120 ? `${g.path.slice(0, 120)}…` : g.path;
    return `- ${g.verdict.operation} -> ${g.verdict.status} (${g.count}×, e.g. ${g.method} ${where}): ${g.verdict.problems.join('; ')}\n    body: ${g.excerpt}`;
  });
  if (groups.length > 20) lines.push(`- and ${groups.length - 20} more kinds`);
  return `${total} answer(s) do not match /openapi.json:\n${lines.join('\n')}`;
}

const tally = new Map<string, number>();
let mismatches = 0;
let documented: readonly string[] = [];
/** Every app's recorder of this process, with the test file and the test that built it. */
const recorders: { file: string; label: string; recorder: AnswerRecorder }[] = [];

/** The test file on the caller's stack (async frames included), else the process's script. */
function callingTestFile(): string {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 50;
  const stack = new Error().stack;
  Error.stackTraceLimit = limit;
  const frame = stack?.split('\n').find((line) => /\.(test|fixture)\.ts\b/.test(line));
  const file = frame?.match(/(?:file:\/\/)?(\/[^:()]+\.(?:test|fixture)\.ts)/)?.[1] ?? process.argv[1] ?? '';
  return path.relative(process.cwd(), file);
}

/** `label`: the test that built the app, named in the failure. */
export async function answerRecorder(baseUrl: string, label: string): Promise<AnswerRecorder> {
  const check = await servedDocumentChecker(baseUrl);
  documented = check.operations;
  const groups = new Map<string, Group>();
  const observe = (answer: ObservedAnswer) => {
    const verdict = check.check(answer);
    if (!verdict) return;
    const key = `${verdict.operation} ${verdict.status}`;
    if (!verdict.problems.length) return void tally.set(key, (tally.get(key) ?? 0) + 1);
    mismatches++;
    const kind = `${key} ${verdict.problems.join('|')}`;
    const group = groups.get(kind);
    if (group) group.count++;
    else
      groups.set(kind, { verdict, count: 1, method: answer.method, path: answer.path, excerpt: excerpt(answer.body) });
  };
  const takeReport = () => {
    if (!groups.size) return undefined;
    const report = mismatchReport([...groups.values()]);
    groups.clear();
    return report;
  };
  const recorder = { observe, takeReport };
  recorders.push({ file: callingTestFile(), label, recorder });
  return recorder;
}

// After every test of the file and all their cleanups: the tally, then the verdict.
after(() => {
  if (!recorders.length) return;
  const files = [...new Set(recorders.map((r) => r.file))];
  appendTally({
    pid: process.pid,
    file: files.join(' '),
    documented: [...documented],
    answers: Object.fromEntries(tally),
    mismatches,
  });
  const failed = recorders.flatMap(({ file, label, recorder }) => {
    const report = recorder.takeReport();
    return report ? [{ file, text: `in "${label}": ${report}` }] : [];
  });
  if (failed.length) {
    const where = [...new Set(failed.map((f) => f.file))].join(', ');
    throw new AssertionError({
      message: `${where}: answers off the OpenAPI document\n${failed.map((f) => f.text).join('\n')}`,
    });
  }
});
