/**
 * Bench item 13 (issue 31): a heavy thread opened again and again by 10 clients beside a normal
 * user's list and thread opens; windows of the normal user alone and with the heavy clients,
 * interleaved (heavy-thread.scenario.ts).
 */
import { signIn } from '../infra.ts';
import type { BenchReport } from '../report.ts';
import { heavyWindow, readLag, seedHeavyThread, type HeavyThreadResult } from '../scenarios.ts';
import { settings, step, WEB_ORIGIN } from './bench.settings.ts';
import { BENCH_ADMIN_TOKEN, type BenchWorld } from './bench.world.ts';
import { heavyShape, normalP99Ratio, signInNormalUser } from './heavy.world.ts';

export async function measureHeavyThread(world: BenchWorld, report: BenchReport): Promise<void> {
  const { db, gmail, identity, server } = world;
  const shape = heavyShape();
  step(
    `heavy thread: ${shape.messages} messages of ${shape.textKiB} KiB text, ${shape.htmlKiB} KiB nested HTML and ${shape.attachments} attachments each`,
  );
  gmail.setLatency(0);
  const providerThreadId = seedHeavyThread(gmail, 'heavy@bench.example', shape);
  const heavyAccount = await signIn(
    server.url,
    WEB_ORIGIN,
    identity,
    { sub: 'bench-heavy', email: 'heavy@bench.example' },
    db.pool,
  );
  const threadId = (
    await db.pool.query<{ id: string }>(
      '/*bench*/ select id from mail_threads where account_id = $1 and provider_thread_id = $2',
      [heavyAccount.accountId, providerThreadId],
    )
  ).rows[0]?.id;
  if (!threadId) throw new Error('the heavy thread was not stored by the sign-in backfill');
  const normal = await signInNormalUser(world, { sub: 'bench-normal', email: 'normal@bench.example' });
  const result: HeavyThreadResult = { ...shape, clients: settings.heavyClients, windows: [], normalP99Ratio: null };
  const lag = () => readLag(server.url, BENCH_ADMIN_TOKEN);
  for (let round = 0; round < settings.heavyRounds; round++) {
    for (const kind of ['idle', 'heavy'] as const) {
      const w = await heavyWindow({
        kind,
        seconds: settings.heavySeconds,
        server,
        readLag: lag,
        normal,
        heavy: { account: heavyAccount, threadId, clients: settings.heavyClients },
      });
      result.windows.push(w);
      step(
        `heavy thread: round ${round + 1}, ${kind}: loop p99 ${w.loop.p99Ms} / max ${w.loop.maxMs} ms, RSS peak ${w.rssPeakMiB} MiB, normal p50 ${w.normal.p50Ms} / p99 ${w.normal.p99Ms} ms${w.heavy ? `, heavy opens ${JSON.stringify(w.heavy.byStatus)} (p50 ${w.heavy.p50Ms} ms, ${w.heavy.bytesMedian} bytes)` : ''}`,
      );
    }
  }
  result.normalP99Ratio = normalP99Ratio(result.windows);
  report.heavyThread = result;
}
