/** test/run.ts's plan of shards (every file once, longest first to the least loaded shard), the machine reference, and where test clusters live. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { FailureTail, planShards } from '../run.ts';
import { describeSuite, referenceWork } from '../helpers/machine-speed.ts';
import { pickClusterRoot, SHM_MIN_FREE } from '../helpers/clusters.ts';

describe('the test runner’s shards', () => {
  it('keeps a shard’s failing tests to print again at the end: the reporter’s summary, bounded, else its last lines', () => {
    const summarised = new FailureTail(4, 2);
    for (const l of ['✔ a', '✖ b', '✖ failing tests:', '', 'test at x.test.ts:1:1', '✖ b', 'AssertionError', 'more'])
      summarised.add(l);
    assert.deepEqual(summarised.lines(), ['✖ failing tests:', '', 'test at x.test.ts:1:1', '✖ b']);
    const crashed = new FailureTail(4, 2);
    for (const l of ['✔ a', 'FATAL ERROR: heap out of memory', 'Aborted']) crashed.add(l);
    assert.deepEqual(crashed.lines(), ['FATAL ERROR: heap out of memory', 'Aborted']);
  });

  it('deals every file once, the longest first, each to the shard with the least time so far', () => {
    const times = { 'a.test.ts': 100, 'b.test.ts': 60, 'c.test.ts': 50, 'd.test.ts': 30, 'e.test.ts': 20 };
    const plan = planShards(Object.keys(times), times, 2);
    assert.deepEqual(plan, [
      { files: ['a.test.ts', 'd.test.ts'], seconds: 130 },
      { files: ['b.test.ts', 'c.test.ts', 'e.test.ts'], seconds: 130 },
    ]);
  });

  it('counts a file it has no time for as the median of those it has', () => {
    const plan = planShards(
      ['new.test.ts', 'x.test.ts', 'y.test.ts', 'z.test.ts'],
      { 'x.test.ts': 10, 'y.test.ts': 40, 'z.test.ts': 90 },
      2,
    );
    assert.deepEqual(
      plan.map((s) => s.seconds).sort((a, b) => a - b),
      [90, 90],
    );
    assert.deepEqual(plan.flatMap((s) => s.files).sort(), ['new.test.ts', 'x.test.ts', 'y.test.ts', 'z.test.ts']);
    assert.ok(
      plan.some((s) => s.files.includes('new.test.ts') && s.files.includes('y.test.ts')),
      'the new file weighs 40',
    );
  });

  it('gives every shard at least one file while there are as many files as shards, and works with no times at all', () => {
    const plan = planShards(['1', '2', '3'], {}, 3);
    assert.deepEqual(
      plan.map((s) => s.files.length),
      [1, 1, 1],
    );
  });
});

describe('the machine reference (test/helpers/machine-speed.ts)', () => {
  it('is the same work everywhere: a change to it would make older ratios incomparable', () => {
    assert.equal(referenceWork(3), '1dc9b0fc6c8d05b408ca636b146721d4509fd49c1d44b1e757069b52081d144c');
    assert.notEqual(referenceWork(4), referenceWork(3));
  });

  it("gives the suite's time and the 8-minute goal in units of the reference", () => {
    const line = describeSuite(455, 4.15);
    assert.match(line, /npm test took 455 s = 110× the machine reference \(4\.15 s/);
    assert.match(line, /the 8-minute goal is 116× on this machine today/);
  });
});

describe('where test clusters keep their data (test/helpers/clusters.ts)', () => {
  const roomy = { tmpfs: true, freeBytes: SHM_MIN_FREE };
  it('takes /dev/shm when it is a writable tmpfs with room', () => {
    assert.equal(pickClusterRoot(undefined, roomy, '/tmp'), '/dev/shm');
  });
  it('takes the temporary directory when /dev/shm is missing, not tmpfs or too small (a container’s 64 MB)', () => {
    assert.equal(pickClusterRoot(undefined, null, '/tmp'), '/tmp');
    assert.equal(pickClusterRoot(undefined, { ...roomy, tmpfs: false }, '/tmp'), '/tmp');
    assert.equal(pickClusterRoot(undefined, { tmpfs: true, freeBytes: 64 * 1024 ** 2 }, '/tmp'), '/tmp');
  });
  it('takes the place MIA_TEST_CLUSTER_ROOT names, whatever /dev/shm is', () => {
    assert.equal(pickClusterRoot('/var/tmp/pg', roomy, '/tmp'), '/var/tmp/pg');
    assert.equal(pickClusterRoot('/var/tmp/pg', null, '/tmp'), '/var/tmp/pg');
  });
});
