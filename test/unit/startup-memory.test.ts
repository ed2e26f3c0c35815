/**
 * The start-up memory release (issue 20): one memory-reducing full collection gives the young
 * generation that start-up grew back to the system, and leaves no `gc` function behind, in
 * this context or in a new one.
 */
import { it } from 'node:test';
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import { releaseStartupMemory } from '../../server/infra/startup-memory.ts';

const youngGeneration = () => v8.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')!.space_size;

it('shrinks the young generation that surviving objects grew, and exposes no gc', () => {
  // Survivors of many scavenges (as module loading leaves them) grow the young generation.
  const kept: { i: number; s: string }[] = [];
  for (let i = 0; i < 400_000; i++) kept.push({ i, s: `x${i}` });
  const grown = youngGeneration();
  assert.ok(grown >= 8 * 1024 * 1024, `young generation grew (${grown} bytes)`);
  const ms = releaseStartupMemory();
  assert.ok(ms > 0);
  const after = youngGeneration();
  assert.ok(after <= grown / 4, `young generation ${grown} -> ${after} bytes`);
  assert.equal(kept.length, 400_000);
  assert.equal(typeof (globalThis as { gc?: unknown }).gc, 'undefined');
  assert.equal(vm.runInNewContext('typeof gc'), 'undefined');
});
