/**
 * GET/PATCH /api/settings: the signature and response-style defaults, round trip with
 * PATCH semantics (absent: unchanged, null: cleared), strict validation, session, CSRF and
 * the settings.update rate limit; the same through /trpc.
 */
import { beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { settings as settingsSchema } from '../../../shared/schemas/settings.ts';
import { WEB_ORIGIN } from '../../helpers/app.ts';
import { sharedAiSetup, type AiSetup } from '../../helpers/mail-fixtures.ts';

const EMPTY = {
  signature: null,
  responseStyle: { tone: null, length: null, language: null, preferredTone: null },
  autoTriage: false,
};

describe('settings', () => {
  const setup = sharedAiSetup();
  let s: AiSetup;
  const get = () => s.browser.fetch('/api/settings', { headers: s.headers() });
  const patch = (json: unknown, headers = s.headers()) =>
    s.browser.fetch('/api/settings', { method: 'PATCH', headers, json });
  beforeEach(async () => {
    s = setup();
    s.freshClient();
    await patch(EMPTY);
  });

  it('starts empty and round-trips every field', async () => {
    assert.deepEqual(await (await get()).json(), EMPTY);
    const full = {
      signature: 'Best,\nAlice\n\n— Sent with care',
      responseStyle: { tone: 'professional', length: 'short', language: 'German', preferredTone: 'direct' },
      autoTriage: true,
    };
    const res = await patch(full);
    assert.equal(res.status, 200);
    assert.deepEqual(await res.json(), full);
    const read = await (await get()).json();
    assert.deepEqual(read, full);
    assert.ok(settingsSchema.safeParse(read).success);
  });

  it('leaves absent fields unchanged and clears fields set to null', async () => {
    await patch({
      signature: 'Sig',
      responseStyle: { tone: 'friendly', length: 'long', language: 'French', preferredTone: 'warm' },
    });
    assert.deepEqual(await (await patch({ responseStyle: { length: 'medium' } })).json(), {
      signature: 'Sig',
      responseStyle: { tone: 'friendly', length: 'medium', language: 'French', preferredTone: 'warm' },
      autoTriage: false,
    });
    assert.deepEqual(await (await patch({ signature: null, responseStyle: { language: null } })).json(), {
      signature: null,
      responseStyle: { tone: 'friendly', length: 'medium', language: null, preferredTone: 'warm' },
      autoTriage: false,
    });
    assert.deepEqual(await (await patch({})).json(), {
      signature: null,
      responseStyle: { tone: 'friendly', length: 'medium', language: null, preferredTone: 'warm' },
      autoTriage: false,
    });
  });

  it('keeps both of two concurrent patches of different fields', async () => {
    await Promise.all([
      patch({ responseStyle: { tone: 'friendly' } }),
      patch({ responseStyle: { length: 'long' } }),
      patch({ signature: 'S' }),
    ]);
    const read = await (await get()).json();
    assert.deepEqual(read, {
      signature: 'S',
      responseStyle: { tone: 'friendly', length: 'long', language: null, preferredTone: null },
      autoTriage: false,
    });
  });

  it('accepts a signature of 2,000 characters and refuses longer', async () => {
    assert.equal((await patch({ signature: 's'.repeat(2000) })).status, 200);
    const res = await patch({ signature: 's'.repeat(2001) });
    assert.equal(res.status, 400);
    assert.deepEqual((await res.json()).error.details.issues, [{ path: 'signature', code: 'too_big' }]);
    assert.equal((await (await get()).json()).signature.length, 2000);
  });

  it('refuses bodies that do not match the schema', async () => {
    const cases: [unknown, string, string][] = [
      [{ signature: 5 }, 'signature', 'invalid_type'],
      [{ responseStyle: { tone: 'rude' } }, 'responseStyle.tone', 'invalid_value'],
      [{ responseStyle: { length: 'huge' } }, 'responseStyle.length', 'invalid_value'],
      [{ responseStyle: { language: 'l'.repeat(61) } }, 'responseStyle.language', 'too_big'],
      [{ responseStyle: { preferredTone: '' } }, 'responseStyle.preferredTone', 'too_small'],
      [{ responseStyle: { colour: 'blue' } }, 'responseStyle.colour', 'unrecognized_keys'],
      [{ responseStyle: 'friendly' }, 'responseStyle', 'invalid_type'],
      // A JSON boolean only: the string "false" must not read as true.
      [{ autoTriage: 'false' }, 'autoTriage', 'invalid_union'],
      [{ autoTriage: 1 }, 'autoTriage', 'invalid_union'],
      [{ theme: 'dark' }, 'theme', 'unrecognized_keys'],
    ];
    for (const [json, path, code] of cases) {
      const res = await patch(json);
      assert.equal(res.status, 400, JSON.stringify(json));
      const { error } = await res.json();
      assert.equal(error.code, 'VALIDATION_FAILED');
      assert.deepEqual(error.details.issues, [{ path, code }], JSON.stringify(json));
    }
    for (const json of [[], 'x', null]) assert.equal((await patch(json)).status, 400, JSON.stringify(json));
    assert.deepEqual(await (await get()).json(), EMPTY, 'nothing changed');
  });

  it('needs a session for both routes and the CSRF token and Origin for PATCH', async () => {
    const anonymous = s.app.browser();
    for (const res of [
      await anonymous.fetch('/api/settings', { headers: { 'X-Forwarded-For': '10.99.0.1' } }),
      await anonymous.fetch('/api/settings', {
        method: 'PATCH',
        headers: { 'X-Forwarded-For': '10.99.0.1' },
        json: { signature: 'x' },
      }),
    ]) {
      assert.equal(res.status, 401);
      assert.equal((await res.json()).error.code, 'AUTH_REQUIRED');
    }
    const ip = s.headers()['X-Forwarded-For'];
    for (const headers of [
      { 'X-Forwarded-For': ip },
      { 'X-Forwarded-For': ip, 'X-CSRF-Token': 'wrong', Origin: WEB_ORIGIN },
      { 'X-Forwarded-For': ip, 'X-CSRF-Token': s.csrfToken, Origin: 'http://evil.test' },
    ]) {
      const res = await patch({ signature: 'hijacked' }, headers);
      assert.equal(res.status, 403);
      assert.equal((await res.json()).error.code, 'CSRF_FAILED');
    }
    assert.equal((await (await get()).json()).signature, null);
  });

  it('limits PATCH to 20 per 60 seconds per client', async () => {
    for (let i = 0; i < 19; i++) assert.equal((await patch({ signature: `n${i}` })).status, 200);
    const limited = await patch({ signature: 'over' });
    assert.equal(limited.status, 429);
    assert.equal((await limited.json()).error.code, 'RATE_LIMITED');
    assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    assert.equal((await get()).status, 200, 'GET is under the global limit');
  });

  it('is served at /trpc as settings.get and settings.update', async () => {
    const up = await s.browser.fetch('/trpc/settings.update', {
      method: 'POST',
      headers: s.headers(),
      json: { responseStyle: { tone: 'friendly' } },
    });
    assert.equal(up.status, 200);
    assert.equal((await up.json()).result.data.responseStyle.tone, 'friendly');
    const read = await s.browser.fetch('/trpc/settings.get', { headers: s.headers() });
    assert.equal((await read.json()).result.data.responseStyle.tone, 'friendly');
    const bad = await s.browser.fetch('/trpc/settings.update', {
      method: 'POST',
      headers: s.headers(),
      json: { signature: 's'.repeat(2001) },
    });
    assert.equal((await bad.json()).error.data.appCode, 'VALIDATION_FAILED');
  });
});
