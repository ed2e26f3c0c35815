/**
 * The benchmark (`npm run bench`, never part of the test run itself) still starts and runs
 * end to end: `--smoke` runs every scenario at tiny sizes against a database cloned from the
 * test template, and writes its Markdown and JSON results. Numbers are not checked here.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createTestDatabase } from '../helpers/database.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');

describe('npm run bench -- --smoke', () => {
  it('runs every scenario at tiny sizes and writes the result table', { timeout: 180_000 }, async (t) => {
    const db = await createTestDatabase();
    const out = await mkdtemp(path.join(tmpdir(), 'mia-bench-smoke-'));
    t.after(async () => {
      await db.drop();
      await rm(out, { recursive: true, force: true });
    });
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--smoke', '--out', out, '--database-url', db.url], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
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
    for (const heading of ['## 1. Thread list', '## 2. Sync', '## 3. Notifications', '## 4. Cost growth', '## 5. Memory', '## 6. Freshness', '## 7. Backfill', '## 8. Mail anyone can send', '## 9. Two instances', '## 10. Tracing', '## Query plans']) {
      assert.ok(markdown.includes(heading), `${heading} in the table`);
    }

    const report = JSON.parse(await readFile(path.join(out, json), 'utf8'));
    assert.equal(report.settings.mode, 'smoke');
    assert.ok(report.machine.cores > 0 && report.machine.node.startsWith('v'));
    assert.equal(report.list.length, report.settings.sizes.length);
    for (const l of report.list) {
      for (const target of [l.service, l.bare, ...(l.serviceModerate ? [l.serviceModerate, l.bareModerate] : [])]) {
        assert.ok(target.requests > 0, `${target.target} answered`);
        assert.equal(target.non2xx + target.errors, 0, `${target.target}: no failed request`);
      }
    }
    assert.ok(report.sync.length > 0);
    for (const s of report.sync) for (const run of s.runs) assert.equal(run.status, 200, `${s.kind} sync answered 200`);
    assert.ok(report.notifications.allStoredMs !== null, 'every notified message was stored');
    assert.ok(report.notifications.syncs > 0);
    for (const p of report.freshness.phases) assert.equal(p.visible, p.changes, `freshness ${p.name}: every change became visible`);
    assert.equal(report.backfill.stored, report.backfill.messages, 'the backfill stored the whole inbox');
    assert.equal(report.backfill.refused, 0, 'no call refused by the provider quota');
    assert.ok(report.corpus.tokens.corpus.n > 0 && report.corpus.tokens.corpus.max <= 2_500, 'corpus prompts counted, within the token cap');
    assert.ok(report.corpus.tokens.hostile.max <= 2_500, 'hostile prompts within the token cap');
    assert.equal(report.corpus.eventLoop.busy.non200, 0, 'every thread of the corpus and hostile inbox opened with 200');
    assert.ok(report.corpus.eventLoop.busy.threadsOpened > 0 && Number.isFinite(report.corpus.eventLoop.busy.p99Ms));
    const alone = report.corpus.eventLoop.alone;
    assert.ok(alone && alone.threads >= 10 && alone.opens === 2 * alone.threads && alone.non200 === 0, 'each hostile thread opened alone, twice, with 200');
    assert.ok(Number.isFinite(alone.maxMs) && alone.worst.length > 0);
    const two = report.twoInstances;
    assert.equal(two.stored, two.changes, 'two instances: every change stored');
    assert.equal(two.fetchedTwice, 0, 'two instances: no message fetched twice');
    const ran = (i: 0 | 1) => Object.values(two.instances[i].syncJobs as Record<string, number>).reduce((a, b) => a + b, 0);
    assert.ok(ran(0) + ran(1) > 0, 'two instances: the syncs ran');
    for (const job of two.scheduled) assert.ok(job.periods === 0 || job.maxPerPeriod === 1, `${job.job}: once per period`);
    for (const p of report.freshness.phases) assert.ok(p.cpuMs && p.historyLists! > 0, `freshness ${p.name}: its cost was read`);
    for (const [name, target] of Object.entries(report.tracing.targets as Record<string, { rounds: { requests: number; non2xx: number; errors: number }[] }>)) {
      for (const run of target.rounds) assert.ok(run.requests > 0 && run.non2xx + run.errors === 0, `tracing ${name}: answered`);
    }
    assert.ok(report.tracing.targets.on.spansPerRequest >= 3, 'tracing on: each request and its statements were exported');
    assert.ok(report.memory.afterStartMiB > 0);
  });
});
