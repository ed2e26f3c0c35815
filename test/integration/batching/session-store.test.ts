/**
 * Session reads of concurrent requests, of different sessions, answered by one statement;
 * each request still answered by a statement that started after it, so a sign-out or a
 * revocation (here or on another instance) is seen by every request that starts after it.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { MikroORM } from '@mikro-orm/postgresql';
import { openDatabase } from '../../../server/infra/database.ts';
import { preparedRunner, type RunPrepared } from '../../../server/domain/prepared-sql.ts';
import { createSessionStore } from '../../../server/http/sessions.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/database.ts';

const DAY = 24 * 3600 * 1000;

describe('batched session reads', () => {
  let db: TestDatabase;
  let orm: MikroORM;
  let statements = 0;
  let run: RunPrepared;
  before(async () => {
    db = await createTestDatabase();
    orm = await openDatabase(db.url);
    const real = preparedRunner(orm);
    run = (statement, values) => {
      statements++;
      return real(statement, values);
    };
  });
  after(async () => {
    await orm.close(true);
    await db.drop();
  });

  it('answers 50 concurrent reads of 50 sessions with a few statements, each its own data', async (t) => {
    const store = createSessionStore(orm, run);
    const keys = Array.from({ length: 50 }, (_, i) => `cookie-key-${i}`);
    await Promise.all(keys.map((k, i) => store.set(k, { email: `user${i}@example.com` }, DAY)));
    statements = 0;
    const read = await Promise.all([...keys, 'unknown-key'].map((k) => store.get(k)));
    assert.deepEqual(
      read.slice(0, 50).map((d) => d?.email),
      keys.map((_, i) => `user${i}@example.com`),
    );
    assert.equal(read[50], null);
    t.diagnostic(`51 concurrent reads: ${statements} statements`);
    assert.ok(statements <= 2, `one statement, or two when the first left alone (${statements})`);
    // Each request parses its own copy.
    const [a, b] = await Promise.all([store.get(keys[0]!), store.get(keys[0]!)]);
    assert.notEqual(a, b);
    assert.deepEqual(a, b);
  });

  it('sees a revocation made while a read was in flight, for every request that starts after it', async () => {
    const store = createSessionStore(orm, run);
    const other = createSessionStore(orm, run); // another instance
    await store.set('victim-key', { email: 'victim@example.com' }, DAY);
    const inFlight = store.get('victim-key');
    await new Promise((r) => setImmediate(r)); // the read has left
    await other.destroy('victim-key');
    const after = store.get('victim-key'); // started after the revocation committed
    // The read in flight may land on either side of the revocation (its statement can wait
    // for a pool connection on a loaded machine); the one started after it never sees the session.
    assert.ok([undefined, 'victim@example.com'].includes((await inFlight)?.email as string | undefined));
    assert.equal(await after, null);
  });

  it('fails only the batch whose statement failed', async () => {
    let fail = true;
    const flaky: RunPrepared = (statement, values) => {
      if (fail) {
        fail = false;
        return Promise.reject(Object.assign(new Error('connection reset'), { code: 'ECONNRESET' }));
      }
      return run(statement, values);
    };
    const store = createSessionStore(orm, flaky);
    await store.set('k-1', { email: 'one@example.com' }, DAY);
    const first = store.get('k-1').then(
      () => 'answered',
      (err: Error) => err.message,
    );
    await new Promise((r) => setImmediate(r));
    const second = store.get('k-1');
    assert.equal(await first, 'connection reset');
    assert.equal((await second)?.email, 'one@example.com');
  });
});
