import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import SwaggerParser from '@apidevtools/swagger-parser';
import { ERROR_CODES } from '../../../shared/errors.ts';
import { buildTestApp } from '../../helpers/app.ts';

/** Every REST path of the specification (part 4) plus the product's own (runtime-contract part 5). */
const SPEC_OPERATIONS = [
  'GET /auth/provider',
  'GET /auth/provider/callback',
  'GET /auth/session',
  'POST /auth/logout',
  'POST /auth/provider/disconnect',
  'DELETE /auth/account',
  'POST /api/mail/sync',
  'GET /api/mail/sync-state',
  'GET /api/mail/threads',
  'GET /api/mail/threads/{threadId}',
  'POST /api/mail/threads/{threadId}/analyze',
  'POST /api/mail/threads/{threadId}/draft',
  'POST /api/analytics/event',
  'GET /api/status/incidents',
  'POST /api/status/incidents',
  'PATCH /api/status/incidents/{id}',
  'GET /api/settings',
  'PATCH /api/settings',
  'GET /health',
  'GET /',
];

describe('GET /openapi.json', () => {
  it('is a valid OpenAPI 3 document covering every REST path with the error envelope', async (t) => {
    const app = await buildTestApp(t);
    const res = await fetch(`${app.url}/openapi.json`);
    assert.equal(res.status, 200);
    const doc = await res.json();
    assert.match(doc.openapi, /^3\./);
    // A maintained validator: structure, references and schemas.
    await SwaggerParser.validate(structuredClone(doc));

    const operations = Object.entries(doc.paths as Record<string, Record<string, unknown>>).flatMap(([path, item]) =>
      Object.keys(item).map((method) => `${method.toUpperCase()} ${path}`),
    );
    for (const op of SPEC_OPERATIONS) assert.ok(operations.includes(op), `${op} is documented`);

    // How a client shows images on request is part of the document.
    const text = JSON.stringify(doc);
    assert.match(text, /"bodyHtml":\{[^}]*"description":"Sanitised HTML[^"]*data-remote-src[^"]*data-remote-srcset/);
    assert.match(text, /"fromName":\{[^}]*"description":"Display name of the sender of the latest message/);
    // What the model sees, and what a hostile mail can and cannot make it do.
    for (const route of ['analyze', 'draft']) {
      const description: string = doc.paths[`/api/mail/threads/{threadId}/${route}`].post.description;
      assert.match(description, /The model sees the thread's subject and its latest message/, route);
      assert.match(description, /can steer what the model answers/, route);
      assert.match(
        description,
        /other threads, other accounts, tokens, the owner's signature and settings never reach the model/,
        route,
      );
    }

    assert.match(
      text,
      /"bodyHtml":\{[^}]*"description":"[^"]*keeps its `href` only when it is an absolute http\(s\) or mailto: URL/,
    );
    // The model's strings are plain text: a client that rendered them as HTML would run what a sender steered the model to write.
    const resolve = (schema: any): any =>
      schema?.$ref ? resolve(doc.components.schemas[schema.$ref.split('/').at(-1)]) : schema;
    const answer = (route: string) =>
      resolve(
        doc.paths[`/api/mail/threads/{threadId}/${route}`].post.responses['200'].content['application/json'].schema,
      );
    const modelStrings = {
      analyze: [answer('analyze'), ['reason', 'suggestedAction']],
      draft: [resolve(answer('draft').properties.draft), ['subject', 'body', 'language']],
    } as const;
    for (const [route, [schema, fields]] of Object.entries(modelStrings)) {
      for (const field of fields) {
        const property = resolve(schema.properties[field]);
        assert.equal(property.type, 'string', `${route} ${field}`);
        assert.match(String(property.description), /Plain text, never HTML/, `${route} ${field} says it is plain text`);
      }
    }

    const envelope = doc.components.schemas.ErrorEnvelope;
    assert.deepEqual(envelope.properties.error.properties.code.enum, ERROR_CODES);
    for (const [path, item] of Object.entries(
      doc.paths as Record<string, Record<string, { responses: Record<string, any> }>>,
    )) {
      for (const [method, op] of Object.entries(item)) {
        if (path === '/health' || path === '/') continue;
        const errors = Object.entries(op.responses).filter(([status]) => Number(status) >= 400);
        assert.ok(errors.length > 0, `${method} ${path} lists its errors`);
        for (const [status, response] of errors) {
          assert.equal(
            response.content['application/json'].schema.$ref,
            '#/components/schemas/ErrorEnvelope',
            `${method} ${path} ${status}`,
          );
        }
      }
    }
    const threads = doc.paths['/api/mail/threads'].get;
    assert.deepEqual(Object.keys(threads.responses).sort(), ['200', '400', '401', '429', '500', '503']);
    assert.ok(doc.paths['/auth/logout'].post.responses['204']);
  });

  it('renders the reference at /docs from locally served assets', async (t) => {
    const app = await buildTestApp(t);
    const page = await fetch(`${app.url}/docs`);
    assert.equal(page.status, 200);
    const html = await page.text();
    for (const asset of ['/docs/assets/swagger-ui.css', '/docs/assets/swagger-ui-bundle.js', '/docs/init.js']) {
      assert.ok(html.includes(asset), asset);
      assert.equal((await fetch(`${app.url}${asset}`)).status, 200, asset);
    }
    assert.match(await (await fetch(`${app.url}/docs/init.js`)).text(), /openapi\.json/);
  });
});
