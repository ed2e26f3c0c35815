import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildApp } from '../../../server/http/app.ts';
import type { RouteInstaller } from '../../../server/http/route-installer.ts';
import { buildTestApp } from '../../helpers/app.ts';

describe('smoke', () => {
  it('serves /health with the database up', async (t) => {
    const app = await buildTestApp(t);
    const res = await fetch(`${app.url}/health`);
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.database, 'ok');
  });

  it('writes one access line per request: its id, method, path without the query, status', async (t) => {
    const app = await buildTestApp(t);
    const res = await fetch(`${app.url}/api/mail/threads?limit=5&code=secret-code`);
    assert.equal(res.status, 401);
    const id = res.headers.get('x-request-id');
    const lines = app.logs.filter((l) => l.msg === 'request' && l.requestId === id);
    assert.equal(lines.length, 1);
    assert.deepEqual(
      {
        method: lines[0]!.method,
        path: lines[0]!.path,
        status: lines[0]!.status,
        code: lines[0]!.code,
        service: lines[0]!.service,
      },
      { method: 'GET', path: '/api/mail/threads', status: 401, code: 'AUTH_REQUIRED', service: 'mail-inbox-assistant' },
    );
    assert.ok(!JSON.stringify(app.logs).includes('secret-code'));
  });

  it('refuses to start with a plain route under /api/, which the REST paths would shadow', async (t) => {
    const app = await buildTestApp(t);
    const extra: RouteInstaller = (routes) => {
      routes.get('/API/extra', (ctx) => {
        ctx.body = 'never served';
      });
    };
    assert.throws(() => buildApp(app.container, { routes: [extra] }), /shadowed by the REST paths/);
  });
});
