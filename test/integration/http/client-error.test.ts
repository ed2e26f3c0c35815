import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { buildTestApp } from '../../helpers/app.ts';

function raw(url: string, request: string): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(request));
    let data = '';
    socket.on('data', (c) => (data += c));
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
  });
}

describe('requests Node refuses before Koa', () => {
  it('oversized headers and malformed HTTP still answer the envelope', async (t) => {
    const app = await buildTestApp(t);
    for (const [request, code] of [
      [`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`, 'headers_too_large'],
      ['NOT HTTP AT ALL\r\n\r\n', 'malformed_request'],
    ] as const) {
      const answer = await raw(app.url, request);
      assert.match(answer, /^HTTP\/1\.1 400 /);
      const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
      assert.equal(body.error.code, 'VALIDATION_FAILED');
      assert.deepEqual(body.error.details.issues, [{ path: '', code }]);
      assert.match(answer, new RegExp(`X-Request-Id: ${body.error.requestId}`));
    }
  });
});
