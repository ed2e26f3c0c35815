/**
 * Procedures called in process, without HTTP: createCaller over createContextInner with the
 * container's services, an EntityManager and (or not) a user. The same rules hold as over
 * REST and /trpc (session required, admin credential), and the route facts in each
 * procedure's meta are complete.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TRPCError } from '@trpc/server';
import { appRouter, procedureMeta } from '../../../server/trpc/routers/index.ts';
import { ADMIN_TOKEN, buildTestApp, callerFor } from '../../helpers/app.ts';
import { otherAccount } from '../../helpers/mail-fixtures.ts';

async function rejectsWith(promise: Promise<unknown>, appCode: string) {
  await assert.rejects(promise, (err: unknown) => {
    assert.ok(err instanceof TRPCError, `a TRPCError, got ${String(err)}`);
    assert.equal((err.cause as { code?: string }).code, appCode);
    return true;
  });
}

describe('procedures through createCaller (no HTTP)', () => {
  it('reads and changes the settings of the given user', async (t) => {
    const app = await buildTestApp(t);
    const accountId = await otherAccount(app, 'carol@example.com');
    const caller = callerFor(app, { user: { accountId, email: 'carol@example.com' } });
    const before = await caller.settings.get();
    assert.equal(before.signature, null);
    const after = await caller.settings.update({ signature: 'Carol' });
    assert.equal(after.signature, 'Carol');
    assert.equal((await caller.settings.get()).signature, 'Carol');
    assert.deepEqual(await caller.auth.session(), { authenticated: true, csrfToken: '', email: 'carol@example.com' });
  });

  it('refuses session routes without a user, and admin routes without the credential', async (t) => {
    const app = await buildTestApp(t);
    const anonymous = callerFor(app);
    await rejectsWith(anonymous.mail.threads({ limit: 5, offset: 0 }), 'AUTH_REQUIRED');
    await rejectsWith(anonymous.settings.update({ signature: 'x' }), 'AUTH_REQUIRED');
    const incident = {
      kind: 'incident' as const,
      state: 'investigating' as const,
      title: 'Slow sync',
      message: 'Looking into it.',
      affectedComponents: ['mail' as const],
    };
    await rejectsWith(anonymous.status.createIncident(incident), 'FORBIDDEN');
    await rejectsWith(callerFor(app, { bearerToken: 'wrong' }).status.createIncident(incident), 'FORBIDDEN');
    const created = await callerFor(app, { bearerToken: ADMIN_TOKEN }).status.createIncident(incident);
    assert.equal(created.title, 'Slow sync');
    assert.deepEqual(
      (await anonymous.status.incidents()).incidents.map((i) => i.id),
      [created.id],
    );
  });

  it('validates input as the transports do', async (t) => {
    const app = await buildTestApp(t);
    const accountId = await otherAccount(app);
    const caller = callerFor(app, { user: { accountId, email: 'mallory@example.com' } });
    await assert.rejects(
      caller.mail.threads({ limit: 0, offset: 0 }),
      (err: unknown) => err instanceof TRPCError && err.code === 'BAD_REQUEST',
    );
    await rejectsWith(caller.mail.thread({ threadId: '6f9619ff-8b86-4d01-b42d-00cf4fc964ff' }), 'NOT_FOUND');
  });
});

describe('route facts in the procedure meta', () => {
  const paths = Object.keys(appRouter._def.procedures);

  it('every REST operation and DELETE /auth/account names the errors it can answer', () => {
    for (const path of paths) {
      const meta = procedureMeta(path);
      if (!meta?.openapi && path !== 'auth.deleteAccount') continue;
      assert.ok(meta?.errors?.length, `${path} declares its errors`);
    }
  });

  it('declares the non-200 successes once: 204 for logout, disconnect, deletion; 201 for a new incident', () => {
    const declared = Object.fromEntries(
      paths.filter((p) => procedureMeta(p)?.successStatus).map((p) => [p, procedureMeta(p)!.successStatus]),
    );
    assert.deepEqual(declared, {
      'auth.logout': 204,
      'auth.disconnect': 204,
      'auth.deleteAccount': 204,
      'status.createIncident': 201,
    });
  });

  it('finds no meta for names that are not procedures', () => {
    assert.equal(procedureMeta('constructor'), undefined);
    assert.equal(procedureMeta('__proto__'), undefined);
  });
});
