/**
 * The start-up memory release: under npm start's node options (which
 * include `--expose-gc`), one memory-reducing full collection gives the young generation that
 * start-up grew back to the system; without the flag it does nothing and fails nothing.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startScript, ROOT } from '../../bench/infra/process.infra.ts';
import { releaseStartupMemory } from '../../server/infra/startup-memory.ts';

// Survivors of many scavenges (as module loading leaves them) grow the young generation.
const PROGRAM = `
import v8 from 'node:v8';
import { releaseStartupMemory } from './server/infra/startup-memory.ts';
const youngGeneration = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size;
const kept = [];
for (let i = 0; i < 400_000; i++) kept.push({ i, s: 'x' + i });
const grown = youngGeneration();
const ms = releaseStartupMemory();
console.log(JSON.stringify({ grown, ms, after: youngGeneration(), kept: kept.length }));
`;

it("shrinks the young generation that surviving objects grew, under npm start's node options", () => {
  const { command } = startScript(ROOT);
  assert.equal(command.at(-1), 'server/main.ts');
  const nodeOptions = command.slice(1, -1);
  assert.ok(nodeOptions.includes('--expose-gc'), `npm start passes --expose-gc (${nodeOptions.join(' ')})`);
  const out = execFileSync(process.execPath, [...nodeOptions, '--input-type=module', '--eval', PROGRAM], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  const { grown, ms, after, kept } = JSON.parse(out) as {
    grown: number;
    ms: number | null;
    after: number;
    kept: number;
  };
  assert.ok(grown >= 8 * 1024 * 1024, `young generation grew (${grown} bytes)`);
  assert.ok(ms !== null && ms > 0);
  assert.ok(after <= grown / 4, `young generation ${grown} -> ${after} bytes`);
  assert.equal(kept, 400_000);
});

it('does nothing without --expose-gc', () => {
  assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined');
  assert.equal(releaseStartupMemory(), null);
});
