/**
 * The analytics service's rules (runtime-contract 4b) with an in-memory EntityManager:
 * unknown names are dropped (and counted) before anything else, non-public events need an
 * account, properties are validated strictly with issues under `properties.`, anonymousId is
 * not kept with an account, empty properties are stored as null, a page_view keeps its path
 * without query and its referrer's origin, and with an anonymous budget of 0 an anonymous
 * event is accepted and dropped without a statement. Storing within the budget needs
 * PostgreSQL: test/integration/analytics/analytics-budget.test.ts.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { EntityManager } from '@mikro-orm/postgresql';
import { createAnalyticsService } from '../../../../server/domain/analytics/analytics.service.ts';
import { AppError } from '../../../../server/domain/errors.ts';
import type { RunPrepared } from '../../../../server/domain/prepared-sql.ts';
import { ANALYTICS_EVENTS } from '../../../../shared/schemas/analytics.ts';

const ANON = '0b5d7f3e-1c2a-4e6b-8d9f-a1b2c3d4e5f6';
const THREAD = '6f1c2a5e-8d4b-4c1e-9a7f-0b3d5e7f9a11';

function fakeEm() {
  const stored: Record<string, unknown>[] = [];
  const pending: Record<string, unknown>[] = [];
  const em = {
    create: (_entity: unknown, data: Record<string, unknown>) => void pending.push(data),
    flush: async () => void stored.push(...pending.splice(0)),
  } as unknown as EntityManager;
  return { em, stored };
}

async function rejectsWith(p: Promise<unknown>, code: string): Promise<AppError> {
  let caught: unknown;
  await p.catch((e: unknown) => (caught = e));
  assert.ok(caught instanceof AppError, `an AppError, got ${String(caught)}`);
  assert.equal(caught.code, code);
  return caught;
}

/** The budget's statements must not run: with a budget of 0 nothing anonymous reaches the database. */
const noStatement: RunPrepared = async () => assert.fail('no statement expected');

describe('analytics.record', () => {
  const drops: string[] = [];
  const service = createAnalyticsService({
    prepared: noStatement,
    anonymousPerMinute: 0,
    onDrop: (reason) => drops.push(reason),
  });

  it('the public allowlist is page_view alone', () => {
    assert.deepEqual(
      Object.entries(ANALYTICS_EVENTS)
        .filter(([, d]) => d.public)
        .map(([n]) => n),
      ['page_view'],
    );
    assert.deepEqual(Object.keys(ANALYTICS_EVENTS).sort(), [
      'analysis_requested',
      'draft_copied',
      'draft_generated',
      'page_view',
      'sync_clicked',
      'thread_opened',
    ]);
  });

  it('drops unknown names (inherited property names included) without storing or checking anything, counting each', async () => {
    const { em, stored } = fakeEm();
    drops.length = 0;
    for (const event of ['later_event', 'toString', 'hasOwnProperty', '__proto__']) {
      assert.deepEqual(await service.record(em, { event, properties: { x: 1 } }, null), { ok: true, stored: false });
    }
    assert.deepEqual(stored, []);
    assert.deepEqual(drops, ['unknown_name', 'unknown_name', 'unknown_name', 'unknown_name']);
  });

  it('with an anonymous budget of 0: an anonymous page_view is accepted and dropped, counted, with no statement', async () => {
    const { em, stored } = fakeEm();
    drops.length = 0;
    assert.deepEqual(
      await service.record(em, { event: 'page_view', properties: { path: '/' }, anonymousId: ANON }, null),
      { ok: true, stored: false },
    );
    assert.deepEqual(stored, []);
    assert.deepEqual(drops, ['budget']);
    // A session's events are not anonymous: the budget does not apply.
    assert.deepEqual(await service.record(em, { event: 'page_view', properties: { path: '/' } }, 'acc-1'), {
      ok: true,
      stored: true,
    });
    assert.equal(stored.length, 1);
  });

  it('needs an account for a non-public event, before looking at its properties', async () => {
    const { em, stored } = fakeEm();
    await rejectsWith(
      service.record(em, { event: 'thread_opened', properties: { threadId: 'bad' } }, null),
      'AUTH_REQUIRED',
    );
    await rejectsWith(service.record(em, { event: 'sync_clicked', anonymousId: ANON }, null), 'AUTH_REQUIRED');
    assert.deepEqual(stored, []);
  });

  it('drops anonymousId with an account, stores empty properties as null, and a page_view without query nor referrer path', async () => {
    const { em, stored } = fakeEm();
    await service.record(
      em,
      {
        event: 'page_view',
        properties: { path: '/a?token=secret#top', referrer: 'https://user:pw@news.example:8443/story?id=9' },
        anonymousId: ANON,
      },
      'acc-1',
    );
    await service.record(em, { event: 'page_view', properties: { path: '/b', referrer: 'not a url' } }, 'acc-1');
    await service.record(em, { event: 'sync_clicked' }, 'acc-1');
    assert.deepEqual(stored, [
      {
        name: 'page_view',
        account: 'acc-1',
        anonymousId: null,
        properties: { path: '/a', referrer: 'https://news.example:8443' },
      },
      { name: 'page_view', account: 'acc-1', anonymousId: null, properties: { path: '/b' } },
      { name: 'sync_clicked', account: 'acc-1', anonymousId: null, properties: null },
    ]);
  });

  it('reports property issues under properties.<field>, never the values', async () => {
    const { em, stored } = fakeEm();
    const err = await rejectsWith(
      service.record(
        em,
        { event: 'draft_generated', properties: { threadId: THREAD, tone: 'secret-tone', extra: 'secret-extra' } },
        'acc-1',
      ),
      'VALIDATION_FAILED',
    );
    const paths = (err.issues ?? []).map((i) => i.path).sort();
    assert.deepEqual(paths, ['properties.extra', 'properties.tone']);
    assert.ok(!JSON.stringify(err.issues).includes('secret'));
    const missing = await rejectsWith(service.record(em, { event: 'page_view' }, null), 'VALIDATION_FAILED');
    assert.deepEqual(
      missing.issues?.map((i) => i.path),
      ['properties.path'],
    );
    assert.deepEqual(stored, []);
  });
});
