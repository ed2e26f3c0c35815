/**
 * npm start's glibc malloc settings (docs/operations.md, "What npm start runs"): with
 * `MALLOC_MMAP_THRESHOLD_` a 64 KiB block (what every socket read allocates) gets pages of its
 * own, so the buffers a big answer arrived in leave the process once they are freed; left to
 * glibc's own threshold they stay in its heap, and the process stays as large as the answer made it.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startScript, ROOT } from '../../bench/infra/process.infra.ts';

// 25 MiB of 64 KiB buffers with smaller blocks between them (so the freed ones are not all at the heap's top), then freed.
const PROGRAM = `
const rss = () => process.memoryUsage().rss;
globalThis.gc();
const before = rss();
let big = Array.from({ length: 400 }, () => Buffer.alloc(65536, 1));
const small = Array.from({ length: 400 }, () => Buffer.alloc(20000, 2));
const held = rss();
big = null;
globalThis.gc();
await new Promise((r) => setTimeout(r, 20));
globalThis.gc();
console.log(JSON.stringify({ before, held, after: rss(), small: small.length }));
`;

const glibc = Boolean(
  (process.report.getReport() as { header?: { glibcVersionRuntime?: string } }).header?.glibcVersionRuntime,
);

it("under npm start's environment, freed 64 KiB buffers leave the process", () => {
  const { env } = startScript(ROOT);
  assert.equal(env.MALLOC_MMAP_THRESHOLD_, '65536');
  const out = execFileSync(process.execPath, ['--expose-gc', '--input-type=module', '--eval', PROGRAM], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, ...env },
  });
  const { before, held, after, small } = JSON.parse(out) as Record<string, number>;
  assert.equal(small, 400);
  assert.ok(held - before >= 20 * 2 ** 20, `the buffers were resident (${before} -> ${held})`);
  // glibc's setting; another C library ignores the variable, and only the setting is checked there.
  if (glibc)
    assert.ok(after - before <= (held - before) / 2, `RSS ${before} -> ${held} -> ${after}: the freed buffers stayed`);
});
