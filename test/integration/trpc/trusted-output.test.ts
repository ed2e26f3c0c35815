/**
 * Trusted outputs: the hot reads whose output schema is `trustedOutput(...)` answer without
 * its check, every other procedure with an output schema keeps tRPC's validator, the served
 * document still describes their answers (no undocumented property), and the test suite's
 * conformance check, which sees every answer of every test, catches what the validator would
 * have: an extra field, a malformed id or time. Nothing of tRPC's is rewritten: the trusted
 * schema is a copy whose `parse` passes the answer through.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { initTRPC } from '@trpc/server';
import { z } from 'zod';
import { trustedOutput } from '../../../server/trpc/init.ts';
import { appRouter } from '../../../server/trpc/routers/index.ts';
import { servedDocumentChecker } from '../../helpers/openapi-recorder.ts';

type Def = { type?: string; output?: { parse(v: unknown): unknown } };
const defs = Object.entries(appRouter._def.procedures as unknown as Record<string, { _def: Def }>).map(([path, p]) => ({
  path,
  def: p._def,
}));
/** The output schema takes anything: it is a trusted copy (an answer off every schema of the API). */
const offSchema = Symbol('off every schema');
const passesAnything = (def: Def) => {
  try {
    return def.output!.parse(offSchema) === offSchema;
  } catch {
    return false;
  }
};

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
  it('skips the output check of the trusted hot reads only', () => {
    // A subscription (mail.events) has no output schema: its events are typed by shared/schemas/events.ts.
    const answering = defs.filter((d) => d.def.type !== 'subscription');
    for (const { path, def } of answering) assert.notEqual(def.output, undefined, `${path} has an output schema`);
    assert.deepEqual(
      answering
        .filter((d) => passesAnything(d.def))
        .map((d) => d.path)
        .sort(),
      ['mail.thread', 'mail.threads'],
    );
  });

  it('passes an answer off a trusted schema through, and refuses one off a checked schema', async () => {
    const t = initTRPC.create();
    const off = () => 'not a number' as unknown as number;
    const router = t.router({
      trusted: t.procedure.output(trustedOutput(z.number())).query(off),
      checked: t.procedure.output(z.number()).query(off),
    });
    const caller = t.createCallerFactory(router)({});
    assert.equal(await caller.trusted(), 'not a number');
    await assert.rejects(caller.checked(), /Output validation failed/);
    const original = z.object({ n: z.number() });
    trustedOutput(original);
    assert.throws(() => original.parse({ n: 'x' }), 'the original schema is untouched');
  });

  it('leaves the document strict enough to catch what the validator caught', async () => {
    const checker = await servedDocumentChecker('http://127.0.0.1');
    const headers = {
      'content-type': 'application/json',
      'x-request-id': 'r-0000000001',
      'ratelimit-limit': '100',
      'ratelimit-remaining': '99',
      'ratelimit-reset': '60',
    };
    const list = (threads: unknown[]) =>
      checker
        .check({
          method: 'GET',
          path: '/api/mail/threads',
          status: 200,
          headers,
          body: JSON.stringify({ threads, total: threads.length, hasMore: false }),
        })!
        .problems.join('; ');
    assert.equal(list([thread]), '');
    assert.match(list([{ ...thread, accountId: 'x' }]), /must NOT have additional properties \(accountId\)/);
    assert.match(list([{ ...thread, id: 'not-a-uuid' }]), /\/threads\/0\/id must match format "uuid"/);
    assert.match(list([{ ...thread, lastMessageAt: '2026-11-26 08:00' }]), /\/threads\/0\/lastMessageAt must match/);
    const detail = checker.check({
      method: 'GET',
      path: `/api/mail/threads/${thread.id}`,
      status: 200,
      headers,
      body: JSON.stringify({
        id: thread.id,
        mailThreadId: 't',
        subject: 's',
        isUnread: false,
        messages: [],
        token: 'x',
      }),
    });
    assert.match(detail!.problems.join('; '), /must NOT have additional properties \(token\)/);
  });
});
