import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildTestApp } from '../../helpers/app.ts';

describe('smoke', () => {
  it('serves /health with the database up', async (t) => {
    const app = await buildTestApp(t);
    const res = await fetch(`${app.url}/health`);
    assert.equal(res.status, 200);
    const body = await res.json();
    assert.equal(body.database, 'ok');
  });
});
