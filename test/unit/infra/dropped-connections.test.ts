/** server/infra/dropped-connections.ts: an unawaited query's rejection by a dropped connection is logged, not fatal; any other still ends the process. */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { pathToFileURL } from 'node:url';
import path from 'node:path';
import { isPgConnectionLoss } from '../../../server/infra/pg-connection-loss.ts';

const MODULE = pathToFileURL(path.resolve('server/infra/dropped-connections.ts')).href;

/** A process with the guard installed that runs `statement` (an error left unhandled), then says it lived. */
function leaveUnhandled(statement: string) {
  const script = `
    const { guardDroppedConnections } = await import(${JSON.stringify(MODULE)});
    guardDroppedConnections(process, { error: (o, msg) => console.log(JSON.stringify({ ...o, msg })) });
    ${statement};
    setTimeout(() => console.log('alive'), 50);`;
  return spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
}

describe('dropped database connections', () => {
  it('tells a dropped connection from other errors: class 57P0 and 08 (not 08P01), and pg’s own messages', () => {
    const coded = (code: string) => Object.assign(new Error('x'), { code });
    for (const code of ['57P01', '57P02', '57P03', '57P05', '08006', '08003'])
      assert.equal(isPgConnectionLoss(coded(code)), true, code);
    for (const code of ['23505', '40001', '57014', '08P01', 'ECONNRESET', undefined])
      assert.equal(isPgConnectionLoss(coded(code as string)), false, String(code));
    assert.equal(isPgConnectionLoss(new Error('Connection terminated unexpectedly')), true);
    assert.equal(isPgConnectionLoss('57P01'), false);
  });

  it('logs an unawaited rejection by a restart (57P01) and the process goes on', () => {
    const run = leaveUnhandled(
      `Promise.reject(Object.assign(new Error('terminating connection due to administrator command'), { code: '57P01', severity: 'FATAL' }))`,
    );
    assert.equal(run.status, 0, run.stderr);
    const [logged, alive] = run.stdout.trim().split('\n');
    assert.equal(JSON.parse(logged!).errCode, '57P01');
    assert.equal(alive, 'alive');
  });

  it("logs a restart's error emitted where no one listens, and the process goes on", () => {
    const run = leaveUnhandled(
      `const { EventEmitter } = await import('node:events'); const c = new EventEmitter();
       setTimeout(() => c.emit('error', new Error('Connection terminated unexpectedly')), 1)`,
    );
    assert.equal(run.status, 0, run.stderr);
    assert.match(run.stdout, /thrown where no one listened[\s\S]*alive/);
  });

  it('lets any other uncaught exception end the process', () => {
    const run = leaveUnhandled(`setTimeout(() => { throw new Error('another bug'); }, 1)`);
    assert.equal(run.status, 1);
    assert.doesNotMatch(run.stdout, /alive/);
    assert.match(run.stderr, /another bug/);
  });

  it('lets any other unhandled rejection end the process, as Node does', () => {
    const run = leaveUnhandled(`Promise.reject(new Error('a bug'))`);
    assert.equal(run.status, 1);
    assert.doesNotMatch(run.stdout, /alive/);
    assert.match(run.stderr, /a bug/);
  });
});
