import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { createLogger, logDestination } from '../../server/infra/logger.ts';

describe('log format', () => {
  it('JSON when asked or when not on a terminal; readable lines when asked or on a terminal', async () => {
    assert.equal(await logDestination('json', { isTTY: true }), undefined);
    assert.equal(await logDestination(undefined, { isTTY: false }), undefined);
    assert.ok(await logDestination(undefined, { isTTY: true }));
    assert.ok(await logDestination('pretty', { isTTY: false }));
  });

  it('a readable line keeps the level, message and fields, and redaction still applies', async () => {
    const written: string[] = [];
    const out = new Writable({ write: (chunk, _enc, done) => (written.push(String(chunk)), done()) });
    const log = createLogger({ destination: await logDestination('pretty', { isTTY: false, out }) });
    log.info({ accountId: 'a1', grant: { refreshToken: 'secret-value' } }, 'sync finished');
    const line = written.join('');
    assert.match(line, /INFO.*sync finished/);
    assert.match(line, /accountId: "a1"/);
    assert.ok(!line.includes('secret-value') && !line.startsWith('{'), line);
  });
});
