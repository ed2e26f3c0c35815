import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { accessLogger, createLogger, logDestination } from '../../server/infra/logger.ts';

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

  it('redacts secrets by key name at the top level and at any depth, in any case, without touching the logged objects', () => {
    const { log, lines } = capture();
    const err = Object.assign(new Error('request failed'), {
      config: { headers: { Authorization: 'Bearer ya29.deep', 'x-goog-api-client': 'gl-node' } },
      response: { config: { headers: { authorization: 'Bearer ya29.deeper' } }, status: 401 },
    });
    const fields = {
      token: 'top-token',
      authorization: 'Bearer top',
      cookie: 'sid=top',
      refresh_token: 'top-refresh',
      password: 'top-pw',
      secret: 'top-secret',
      code: 'SYNC_FAILED',
      query: { code: 'oauth-code' },
      grants: [{ accessToken: 'in-array' }],
      a: { b: { c: { 'X-CSRF-Token': 'deep-csrf' } } },
    };
    log.error({ ...fields, err }, 'failed');
    log.child({ token: 'bound-token' }).info('child line');
    const [line, child] = lines();
    for (const secret of [
      'top-token',
      'Bearer top',
      'sid=top',
      'top-refresh',
      'top-pw',
      'top-secret',
      'oauth-code',
      'in-array',
      'ya29.deep',
      'ya29.deeper',
      'deep-csrf',
    ]) {
      assert.ok(!JSON.stringify(line).includes(secret), `${secret} logged: ${JSON.stringify(line)}`);
    }
    assert.equal(line.token, '[redacted]');
    assert.equal(line.err.config.headers.Authorization, '[redacted]');
    assert.equal(line.err.response.config.headers.authorization, '[redacted]');
    assert.equal(line.a.b.c['X-CSRF-Token'], '[redacted]');
    assert.equal(line.code, 'SYNC_FAILED', 'a top-level code is our error code, kept');
    assert.equal(line.err.config.headers['x-goog-api-client'], 'gl-node', 'other fields stay');
    assert.equal(line.err.message, 'request failed');
    assert.match(line.err.stack, /^Error: request failed\n/, 'the error keeps its stack');
    assert.equal(line.err.response.status, 401);
    assert.equal(child.token, '[redacted]', "a child's bindings too");
    assert.equal(err.config.headers.Authorization, 'Bearer ya29.deep', 'the logged error itself is unchanged');
    assert.equal(fields.grants[0]!.accessToken, 'in-array');
  });

  it('redacts inside cycles and shared objects, writing a cycle as [Circular]', () => {
    const { log, lines } = capture();
    const request: Record<string, unknown> = { headers: { authorization: 'Bearer cyclic' } };
    request.self = request;
    const shared = { apiKey: 'shared-key' };
    log.warn({ err: { request }, a: shared, b: { c: shared } }, 'cyclic');
    const [line] = lines();
    assert.ok(
      !JSON.stringify(line).includes('Bearer cyclic') && !JSON.stringify(line).includes('shared-key'),
      JSON.stringify(line),
    );
    assert.equal(line.err.request.self, '[Circular]');
    assert.deepEqual([line.a.apiKey, line.b.c.apiKey], ['[redacted]', '[redacted]']);
  });

  it('the access logger skips the redaction passes (its fields are fixed and carry nothing secret)', () => {
    const { log, lines } = capture();
    accessLogger(log).info({ path: '/api/x', token: 'not-a-secret-here' }, 'request');
    assert.equal(lines()[0].token, 'not-a-secret-here');
  });
});

function capture() {
  const written: string[] = [];
  const out = new Writable({ write: (chunk, _enc, done) => (written.push(String(chunk)), done()) });
  const log = createLogger({ destination: out as never });
  return {
    log,
    lines: () =>
      written
        .join('')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l)),
  };
}
