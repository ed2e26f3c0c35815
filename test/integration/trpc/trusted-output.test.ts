/**
 * Trusted outputs: the hot reads whose meta says `trustedOutput` answer without
 * tRPC's output validator, every other procedure with an output schema keeps it, the served
 * document still describes their answers (no undocumented property), and the test suite's
 * conformance check, which sees every answer of every test, catches what the validator would
 * have: an extra field, a malformed id or time. The switch is a step of building the app
 * (`buildAppRouter`, called by buildApp), not a side effect of importing the router.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { initTRPC } from '@trpc/server';
import { z } from 'zod';
import { skipTrustedOutputValidation, type Meta } from '../../../server/trpc/init.ts';
import { appRouter, buildAppRouter } from '../../../server/trpc/routers/index.ts';
import { servedDocumentChecker } from '../../helpers/openapi-recorder.ts';

type Def = { type?: string; meta?: Meta; output?: unknown; middlewares: { _type?: string }[] };
const validatesOutput = (def: Def) => def.middlewares.some((m) => m._type === 'output');
const definitions = (router: typeof appRouter) => Object.entries(router._def.procedures as unknown as Record<string, { _def: Def }>).map(([path, p]) => ({ path, def: p._def }));
// Read before anything builds the app: importing the router changed none of its procedures.
const validatedOnImport = definitions(appRouter).filter((d) => validatesOutput(d.def)).map((d) => d.path);
const served = buildAppRouter();
const defs = definitions(served);

const thread = {
  id: '3f1c9a2e-0000-4000-8000-000000000001',
  mailThreadId: 't-1',
  subject: 's',
  snippet: 'n',
  fromName: '',
  fromAddress: 'a@example.com',
  lastMessageAt: '2026-11-26T08:00:00.000Z',
  isUnread: true,
  analysis: null,
};

describe('trusted outputs', () => {
  it('skips the output validator of the flagged hot reads only', () => {
    const trusted = defs.filter((d) => d.def.meta?.trustedOutput).map((d) => d.path);
    assert.deepEqual(trusted.sort(), ['mail.thread', 'mail.threads']);
    assert.deepEqual(validatedOnImport, defs.filter((d) => d.def.type !== 'subscription').map((d) => d.path), 'every output validated until the app router is built');
    assert.equal(buildAppRouter(), served, 'built once: a second app gets the same router');
    // A subscription (mail.events) has no output validator to skip: its events are typed by shared/schemas/events.ts.
    for (const { path, def } of defs.filter((d) => d.def.type !== 'subscription')) {
      assert.notEqual(def.output, undefined, `${path} has an output schema`);
      assert.equal(validatesOutput(def), !def.meta?.trustedOutput, `${path}: output validated unless trusted`);
    }
  });

  it('no longer runs the flagged output schema on answers, and refuses a flagged procedure without one', async () => {
    const t = initTRPC.meta<Meta>().create();
    const loose = t.router({ loose: t.procedure.meta({ trustedOutput: true }).query(() => 1) });
    assert.throws(() => skipTrustedOutputValidation(loose._def.procedures), /loose: trustedOutput needs an output schema/);
    // An answer off its schema: refused while the validator runs, passed through once skipped.
    const offSchema = () => 'not a number' as unknown as number;
    const router = t.router({ trusted: t.procedure.meta({ trustedOutput: true }).output(z.number()).query(offSchema), checked: t.procedure.output(z.number()).query(offSchema) });
    const caller = t.createCallerFactory(router)({});
    await assert.rejects(caller.trusted(), /Output validation failed/);
    assert.deepEqual(skipTrustedOutputValidation(router._def.procedures), ['trusted']);
    assert.equal(await caller.trusted(), 'not a number');
    await assert.rejects(caller.checked(), /Output validation failed/);
  });

  it('leaves the document strict enough to catch what the validator caught', async () => {
    const checker = await servedDocumentChecker('http://127.0.0.1');
    const headers = { 'content-type': 'application/json', 'x-request-id': 'r-0000000001', 'ratelimit-limit': '100', 'ratelimit-remaining': '99', 'ratelimit-reset': '60' };
    const list = (threads: unknown[]) => checker.check({ method: 'GET', path: '/api/mail/threads', status: 200, headers, body: JSON.stringify({ threads, total: threads.length, hasMore: false }) })!.problems.join('; ');
    assert.equal(list([thread]), '');
    assert.match(list([{ ...thread, accountId: 'x' }]), /must NOT have additional properties \(accountId\)/);
    assert.match(list([{ ...thread, id: 'not-a-uuid' }]), /\/threads\/0\/id must match format "uuid"/);
    assert.match(list([{ ...thread, lastMessageAt: '2026-11-26 08:00' }]), /\/threads\/0\/lastMessageAt must match/);
    const detail = checker.check({ method: 'GET', path: `/api/mail/threads/${thread.id}`, status: 200, headers, body: JSON.stringify({ id: thread.id, mailThreadId: 't', subject: 's', isUnread: false, messages: [], token: 'x' }) });
    assert.match(detail!.problems.join('; '), /must NOT have additional properties \(token\)/);
  });
});
