/** The smoke files together run every scenario the bench has (bench-smoke.helper.ts). */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ALL_SCENARIOS } from '../../bench/scenario-names.ts';
import { SMOKE_GROUPS } from './bench-smoke.helper.ts';

describe('the bench smoke files', () => {
  it('cover every scenario of npm run bench, each once', () => {
    const covered = Object.values(SMOKE_GROUPS).flat();
    assert.deepEqual([...covered].sort(), [...ALL_SCENARIOS].sort());
  });
});
