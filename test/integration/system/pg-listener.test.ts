/**
 * Issue 43 point 4: a LISTEN connection that dies without a word (a proxy that stops
 * forwarding, no FIN, no RST) is found by the listener's own probe and reopened, and what
 * listens hears `reconnected` (the live events' hub then sends every stream a `reset`).
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import { createLogger } from '../../../server/infra/logger.ts';
import { createPgListener } from '../../../server/infra/pg-listener.ts';
import { createTestDatabase } from '../../helpers/database.ts';

/** A TCP proxy whose `stall()` stops forwarding on the connections it has, leaving them open; new ones are forwarded. */
async function stallingProxy(target: URL) {
  const open = new Set<{ stall(): void; close(): void }>();
  const server = net.createServer((client) => {
    const upstream = net.connect(Number(target.port), target.hostname);
    const forward = (from: net.Socket, to: net.Socket) => (chunk: Buffer) => void to.write(chunk);
    const up = forward(client, upstream);
    const down = forward(upstream, client);
    client.on('data', up);
    upstream.on('data', down);
    const pair = {
      stall() {
        client.off('data', up);
        upstream.off('data', down);
      },
      close() {
        client.destroy();
        upstream.destroy();
      },
    };
    open.add(pair);
    for (const s of [client, upstream])
      s.on('error', () => pair.close()).on('close', () => (pair.close(), open.delete(pair)));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const url = new URL(target);
  url.port = String((server.address() as AddressInfo).port);
  return {
    url: url.toString(),
    stall: () => open.forEach((p) => p.stall()),
    close: () => {
      open.forEach((p) => p.close());
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('the LISTEN connection', () => {
  it('finds a connection that silently stopped forwarding by its own probe, reopens it and says so', async (t) => {
    const db = await createTestDatabase();
    const proxy = await stallingProxy(new URL(db.url));
    const notifier = new pg.Client({ connectionString: db.url });
    await notifier.connect();
    t.after(async () => {
      await notifier.end();
      await proxy.close();
      await db.drop();
    });
    const heard: string[] = [];
    let reconnects = 0;
    const waiters: (() => void)[] = [];
    const changed = () => waiters.splice(0).forEach((w) => w());
    const until = async (what: string, check: () => boolean) => {
      const deadline = Date.now() + 10_000;
      while (!check()) {
        assert.ok(Date.now() < deadline, `timed out waiting for ${what}`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 200).unref(); // also look again now and then: a notification sent before the wait began
        });
      }
    };
    const listener = createPgListener({
      databaseUrl: proxy.url,
      log: createLogger({ level: 'silent' }),
      what: 'test',
      channels: ['mia_test_channel'],
      hear: (_channel, payload) => (heard.push(payload ?? ''), changed()),
      reconnected: () => (reconnects++, changed()),
      retryMs: 50,
      probe: { everyMs: 200, timeoutMs: 300 },
    });
    await listener.start();
    t.after(() => listener.stop());
    const say = (payload: string) => notifier.query('select pg_notify($1, $2)', ['mia_test_channel', payload]);

    await say('before');
    await until('the first notification', () => heard.includes('before'));
    proxy.stall();
    await say('lost');
    await until('the probe to find the silent connection and the listener to listen again', () => reconnects === 1);
    assert.ok(
      !heard.includes('lost'),
      'sent while the connection was silent: never heard (hence reconnected, for a reset)',
    );
    await say('after');
    await until('a notification on the new connection', () => heard.includes('after'));
    assert.equal(reconnects, 1);
  });
});
