/**
 * The suite-level tally of the OpenAPI conformance check: each test process appends one
 * line to test-artifacts/openapi-conformance/<pid>.ndjson (answers checked per operation and
 * status), tagged with the run's id (MIA_TEST_RUN, set by test/run.ts or else the global
 * setup, so that runs side by side do not mix), and the run sums its own lines into one at its
 * end (test/run.ts after all its shards, else the global teardown). No server code here: the
 * test runner's own processes read it.
 */
import { randomUUID } from 'node:crypto';
import { appendFileSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const TALLY_DIR = path.resolve('test-artifacts/openapi-conformance');

export interface TallyLine {
  /** The run (MIA_TEST_RUN) the process belonged to. */
  run: string;
  pid: number;
  /** The test files (space-separated) whose apps the process checked. */
  file: string;
  /** Every documented operation, `METHOD /template`. */
  documented: string[];
  /** Answers checked that matched the document, by `METHOD /template STATUS`. */
  answers: Record<string, number>;
  /** Answers checked that did not (each failed its test). */
  mismatches: number;
}

export function appendTally(line: Omit<TallyLine, 'run'>): void {
  mkdirSync(TALLY_DIR, { recursive: true });
  appendFileSync(
    path.join(TALLY_DIR, `${line.pid}.ndjson`),
    `${JSON.stringify({ run: process.env.MIA_TEST_RUN ?? '', ...line })}\n`,
  );
}

/** Names this run (global setup); its test processes inherit the id. A given MIA_TEST_RUN tallies several invocations together. */
export function startTallyRun(): void {
  process.env.MIA_TEST_RUN ||= randomUUID();
}

/** The lines of this run. */
export function readTally(): TallyLine[] {
  const run = process.env.MIA_TEST_RUN;
  let files: string[];
  try {
    files = readdirSync(TALLY_DIR).filter((f) => f.endsWith('.ndjson'));
  } catch {
    return [];
  }
  const lines = files.flatMap((f) =>
    readFileSync(path.join(TALLY_DIR, f), 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as TallyLine),
  );
  return lines.filter((l) => l.run === run);
}

/** The run in one line: answers checked, documented operations and statuses seen, operations never exercised. */
export function summariseTally(lines: readonly TallyLine[]): string | undefined {
  if (!lines.length) return undefined;
  const documented = new Set(lines.flatMap((l) => l.documented));
  const statuses = new Map<string, number>();
  for (const l of lines)
    for (const [key, n] of Object.entries(l.answers)) statuses.set(key, (statuses.get(key) ?? 0) + n);
  const answers = [...statuses.values()].reduce(
    (a, b) => a + b,
    lines.reduce((a, l) => a + l.mismatches, 0),
  );
  const seen = new Set([...statuses.keys()].map((k) => k.slice(0, k.lastIndexOf(' '))));
  const never = [...documented].filter((op) => !seen.has(op)).sort();
  return (
    `OpenAPI conformance: ${answers} answers checked; ` +
    `${seen.size} of ${documented.size} operations and ${statuses.size} operation statuses seen` +
    (never.length ? `; never exercised: ${never.join(', ')}` : '')
  );
}
