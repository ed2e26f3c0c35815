/**
 * Runs `npm run bench -- --smoke --only <scenarios>` against a database cloned from the test
 * template and reads back what it wrote: the printed table (which must be the written one) and
 * the JSON report. The smoke files under test/bench/ each run one group of scenarios, so the
 * test runner's lanes run the groups side by side; together they cover every scenario
 * (bench-smoke-coverage.test.ts holds them to that). Numbers are not checked, only that each
 * scenario ran end to end.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TestContext } from 'node:test';
import { createTestDatabase } from '../helpers/database.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** The scenario groups, one smoke file each. */
export const SMOKE_GROUPS = {
  list: ['list', 'tracing', 'triage'],
  sync: ['sync', 'synccpu', 'notifications', 'heavy', 'heavyopens'],
  live: ['freshness', 'burst', 'two', 'events'],
  mail: ['backfill', 'resync', 'corpus'],
} as const;

/** The report's JSON, loosely typed: the smoke files read the fields of their own scenarios. */
export type SmokeReport = Record<string, any>;

export async function runSmoke(
  t: TestContext,
  group: keyof typeof SMOKE_GROUPS,
): Promise<{ markdown: string; report: SmokeReport }> {
  const db = await createTestDatabase();
  const out = await mkdtemp(path.join(tmpdir(), `mia-bench-smoke-${group}-`));
  t.after(async () => {
    await db.drop();
    await rm(out, { recursive: true, force: true });
  });
  const child = spawn(
    process.execPath,
    ['bench/run.ts', '--smoke', '--only', SMOKE_GROUPS[group].join(','), '--out', out, '--database-url', db.url],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  assert.equal(code, 0, `bench exited with ${code}\n${stderr}`);

  const files = await readdir(out);
  const md = files.find((f) => f.endsWith('-smoke.md'));
  const json = files.find((f) => f.endsWith('-smoke.json'));
  assert.ok(md && json, `result files written: ${files.join(', ')}`);
  const markdown = await readFile(path.join(out, md), 'utf8');
  assert.equal(stdout.trim(), markdown.trim(), 'the printed table is the written one');
  const report = JSON.parse(await readFile(path.join(out, json), 'utf8')) as SmokeReport;
  assert.equal(report.settings.mode, 'smoke');
  assert.ok(report.machine.cores > 0 && report.machine.node.startsWith('v'));
  assert.ok(report.memory.afterStartMiB > 0);
  return { markdown, report };
}

export function assertHeadings(markdown: string, headings: string[]): void {
  for (const heading of headings) assert.ok(markdown.includes(heading), `${heading} in the table`);
}
