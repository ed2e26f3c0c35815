import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { eventually } from '../../../harness/wait.ts';
import { ALICE, startMailApp } from './mail-app.ts';

/** Until a sync of the account holds its lease (polled: the lease is a row, not an event). */
async function leaseHeld(mail: Awaited<ReturnType<typeof startMailApp>>): Promise<void> {
  const held = async () => (await mail.app.syncState())?.lease_owner != null;
  assert.ok(await eventually(held, 5_000, 10), 'the first sync took its lease');
}

describe('one sync per account', () => {
  it('a second overlapping sync gets RATE_LIMITED 429 with Retry-After at once; the first completes', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 40, { sentReplies: false });
    // Each provider answer takes 300 ms: the first sync holds its lease for over a second.
    mail.gmail.setLatency(300);
    let firstDone = false;
    const first = mail.sync().then((res) => {
      firstDone = true;
      return res;
    });
    // The second asks once the first holds the lease (an event, not a guess at how long that takes).
    await leaseHeld(mail);
    const second = await mail.sync();
    assert.equal(second.status, 429);
    assert.equal((await second.json()).error.code, 'RATE_LIMITED');
    assert.ok(Number(second.headers.get('retry-after')) >= 1);
    assert.equal(firstDone, false, 'refused at once, not after waiting for the first to finish');
    const ok = await first;
    assert.equal(ok.status, 200);
    assert.equal((await ok.json()).messagesSynced, 40);
    mail.gmail.setLatency(0);
    assert.equal((await mail.stored()).size, 40);
    // The lease is gone with the first sync: the next one runs.
    assert.equal((await mail.sync()).status, 200);
  });

  it('the guard holds across two service instances sharing the database', async (t) => {
    // Instances of one deployment share the token encryption key.
    const env = { TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64') };
    const one = await startMailApp(t, { env });
    const two = await startMailApp(t, { env, databaseUrl: one.app.databaseUrl, providers: one.providers });
    one.gmail.seed(ALICE, 40, { sentReplies: false });
    one.gmail.setLatency(60);
    const results = await Promise.all([one.sync(), leaseHeld(one).then(() => two.sync())]);
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 429]);
    one.gmail.setLatency(0);
    assert.equal((await one.stored()).size, 40, 'stored once, not twice');
  });

  it('concurrent syncs of one account never store anything twice', async (t) => {
    const mail = await startMailApp(t);
    mail.gmail.seed(ALICE, 120, { sentReplies: false });
    const outcomes: number[] = [];
    for (let round = 0; round < 3; round++) {
      const rs = await Promise.all([mail.sync(), mail.sync(), mail.sync()]);
      outcomes.push(...rs.map((r) => r.status));
      assert.ok(rs.every((r) => r.status === 200 || r.status === 429));
    }
    const [{ n, distinct }] = await mail.sql<{ n: number; distinct: number }>(
      'select count(*)::int as n, count(distinct provider_message_id)::int as distinct from mail_messages',
    );
    assert.equal(n, distinct);
    assert.ok(outcomes.includes(200));
    // The route limit (10 per 60 s) still applies on top of the guard.
    const tenth = await mail.sync();
    assert.equal(tenth.status, 200);
    const eleventh = await mail.sync();
    assert.equal(eleventh.status, 429);
    assert.equal((await eleventh.json()).error.code, 'RATE_LIMITED');
  });
});
