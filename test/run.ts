/**
 * `npm test`'s runner: the suite in a few shards side by side, each a `node --test` process that
 * runs its share of the files in that one process (`--test-isolation=none`). A process per file
 * paid, for every file, the import of the server graph, the JIT's warm-up and a dump of V8
 * coverage: the shards pay for each once (figures in bench/results/HISTORY.md).
 * Each shard has its own embedded PostgreSQL (the global setup), and each test file its own
 * database cloned from that shard's template, as before.
 *
 *   node test/run.ts [node --test options] [files]   files default to every test/**\/*.test.ts
 *
 * The files are dealt to the shards longest first, each to the shard with the least time so
 * far, by the seconds in test/file-times.json (a file not listed counts as the median). Each
 * shard also writes what its files took; the run's figures land in
 * test-artifacts/file-times.json, to copy over test/file-times.json when the suite's shape
 * changes. The test apps' logs (test-artifacts/logs, one file per process) are the run's own: the
 * previous run's are removed first. TEST_SHARDS sets the number of shards (default 4). Each line a shard prints is
 * prefixed with its number; the conformance tally of the whole run is printed once, at the
 * end, and so are a failing shard's failures again; the exit code is the first failing shard's, else 0.
 */
import { spawn } from 'node:child_process';
import { globSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { readTally, startTallyRun, summariseTally } from './helpers/conformance-tally.ts';

const TIMES = 'test/file-times.json';
const OUT = 'test-artifacts/file-times';
const APP_LOGS = 'test-artifacts/logs';

function readTimes(file: string): Record<string, number> {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Record<string, number>;
  } catch {
    return {};
  }
}

/** The files dealt to `count` shards, longest first, each to the shard with the least so far. */
export function planShards(
  all: readonly string[],
  times: Record<string, number>,
  n: number,
): { files: string[]; seconds: number }[] {
  const known = Object.values(times).sort((a, b) => a - b);
  const fallback = known.length ? known[Math.floor(known.length / 2)]! : 1;
  const weight = (f: string) => times[f] ?? fallback;
  const shards = Array.from({ length: n }, () => ({ files: [] as string[], seconds: 0 }));
  for (const f of [...all].sort((a, b) => weight(b) - weight(a) || a.localeCompare(b))) {
    const least = shards.reduce((a, b) => (b.seconds < a.seconds ? b : a));
    least.files.push(f);
    least.seconds += weight(f);
  }
  return shards;
}

/**
 * A shard's account of its failures, kept to print again once every shard has ended (a shard
 * that fails early has its failures far up in a long log, where a reader of its end never sees
 * them): the spec reporter's closing "failing tests" part, bounded, else the shard's last lines.
 */
export class FailureTail {
  private summary: string[] | null = null;
  private readonly last: string[] = [];
  private readonly maxLines: number;
  private readonly lastLines: number;
  constructor(maxLines = 120, lastLines = 40) {
    this.maxLines = maxLines;
    this.lastLines = lastLines;
  }

  add(line: string): void {
    if (this.summary) {
      if (this.summary.length < this.maxLines) this.summary.push(line);
      return;
    }
    if (/^✖ failing tests:/.test(line)) this.summary = [line];
    this.last.push(line);
    if (this.last.length > this.lastLines) this.last.shift();
  }

  lines(): string[] {
    return this.summary ?? this.last;
  }
}

/** Shard `index` of `count`: its files in one `node --test` process, its lines prefixed; its exit code. */
function runShard(
  index: number,
  count: number,
  shardFiles: string[],
  options: string[],
  tail: FailureTail,
): Promise<number> {
  const argv = [
    '--import',
    './server/require-node.mjs',
    '--test-isolation=none',
    '--test-timeout=600000',
    '--test-force-exit',
    '--test-global-setup=test/helpers/global-setup.ts',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=./test/helpers/file-times.reporter.ts',
    `--test-reporter-destination=${OUT}/${index}.json`,
    ...options,
    '--test',
    ...shardFiles,
  ];
  const child = spawn(process.execPath, argv, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, MIA_TEST_SHARDED: '1' },
  });
  const prefix = count > 1 ? `[${index}/${count}] ` : '';
  for (const [from, to] of [
    [child.stdout, process.stdout],
    [child.stderr, process.stderr],
  ] as const) {
    createInterface({ input: from, crlfDelay: Infinity }).on('line', (line) => {
      to.write(`${prefix}${line}\n`);
      tail.add(line);
    });
  }
  return new Promise((resolve) => child.on('close', (code, signal) => resolve(code ?? (signal ? 1 : 0))));
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const options = args.filter((a) => a.startsWith('-'));
  const named = args.filter((a) => !a.startsWith('-'));
  const files = (named.length ? named : globSync('test/**/*.test.ts')).sort();
  const count = Math.max(1, Math.min(Number(process.env.TEST_SHARDS) || 4, files.length));
  startTallyRun();
  // The test apps' logs are this run's (secrets.test.ts scans every file there): earlier runs' go.
  rmSync(APP_LOGS, { recursive: true, force: true });
  rmSync(OUT, { recursive: true, force: true });
  mkdirSync(OUT, { recursive: true });
  const plan = planShards(files, readTimes(TIMES), count);
  const started = performance.now();
  const ended: number[] = [];
  const tails = plan.map(() => new FailureTail());
  const codes = await Promise.all(
    plan.map((s, i) =>
      runShard(i + 1, count, s.files, options, tails[i]!).then(
        (code) => ((ended[i] = performance.now() - started), code),
      ),
    ),
  );
  const measured = Object.assign({}, ...plan.map((_, i) => readTimes(path.join(OUT, `${i + 1}.json`))));
  writeFileSync(`${OUT}.json`, `${JSON.stringify(measured, Object.keys(measured).sort(), 2)}\n`);
  const conformance = summariseTally(readTally());
  if (conformance) console.log(conformance);
  codes.forEach((code, i) => {
    if (code === 0) return;
    console.log(`shard ${i + 1}/${count} failed (exit ${code}); its failures again:`);
    for (const l of tails[i]!.lines()) console.log(`[${i + 1}/${count}] ${l}`);
  });
  const line = (s: { files: string[]; seconds: number }, i: number) =>
    `${i + 1}/${count} ${codes[i] === 0 ? 'passed' : `failed (exit ${codes[i]})`}: ${s.files.length} files, planned ${Math.round(s.seconds)} s, took ${Math.round(ended[i]! / 1000)} s`;
  console.log(`shards: ${plan.map(line).join('; ')}`);
  process.exitCode = codes.find((c) => c !== 0) ?? 0;
}
