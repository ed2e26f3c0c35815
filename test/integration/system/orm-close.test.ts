/**
 * Closing the database while statements are still being given connections: the stop of an
 * instance (server/start-service.ts) closes the ORM last, and a statement of something that
 * ends with it (an event stream freeing its place) may still be waiting for a new connection.
 * Kysely 0.29.6 (what MikroORM 7.2 pins) lost such a connection when the pool ended under it,
 * and the pool's end then waited for it for ever: an instance that never stopped, and a CI
 * run held until its time limit. Kysely 0.29.9 (package.json's override) gives it back.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { openDatabase } from '../../../server/infra/database.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/database.ts';

describe('closing the ORM', () => {
  let db: TestDatabase;
  before(async () => {
    db = await createTestDatabase();
  });
  after(() => db?.drop());

  // Bounded here: what fails is a close that never resolves.
  it('ends while statements wait for new connections: they fail, the close resolves', { timeout: 30_000 }, async () => {
    const orm = await openDatabase(db.url);
    const native = (await orm.em.getConnection().getNativeClient()) as unknown as {
      totalCount: number;
      on(e: 'connect', fn: () => void): void;
    };
    // More statements than idle connections (the migrations left one or two): the rest open new ones.
    const connecting = new Promise<void>((resolve) => native.on('connect', () => resolve()));
    const statements = Array.from({ length: 8 }, (_, i) =>
      orm.em
        .fork()
        .execute(`select ${i} as n, pg_sleep(0)`)
        .then(
          () => 'done',
          (err: Error) => err.message,
        ),
    );
    // The first new connection is up: the other statements' connections are still on their way.
    await connecting;
    await orm.close(true);
    const outcomes = await Promise.all(statements);
    assert.ok(
      outcomes.every((o) => o === 'done' || /destroyed|end on the pool|terminat/i.test(o)),
      outcomes.join('; '),
    );
    assert.equal(native.totalCount, 0, 'no connection left behind');
  });
});
