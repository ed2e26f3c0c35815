/**
 * Bench item 8: prompt tokens on the mail corpus, and the event loop under hostile mail. The
 * event loop is read on a server of its own (its own database and subscription) with its quota
 * pacer off: the phase opens its ~2,000 threads as fast as 8 clients can, and at the bench's
 * 2026 quota (6,000 units per 10 s, threads.get 40) most opens would be answered 429 by the
 * pacer after the backfill's ~40,000 units (measured: 1,611 of 1,871), which is not what it measures.
 */
import type { BenchReport } from '../report.ts';
import { corpusFiles, eventLoopUnderMail, hostileMail, promptTokens } from '../scenarios.ts';
import { settings, step, WEB_ORIGIN } from './bench.settings.ts';
import { BENCH_ADMIN_TOKEN, quotaEnv, type BenchWorld } from './bench.world.ts';

export async function measureCorpus(world: BenchWorld, report: BenchReport): Promise<void> {
  const hostile = hostileMail(settings.hostileScale);
  const tokenFiles = corpusFiles(settings.corpusTokenStep);
  step(`corpus: prompt tokens of ${tokenFiles.length} corpus and ${hostile.length} hostile messages (o200k_base)`);
  const tokens = await promptTokens(tokenFiles, hostile);
  step(
    `corpus tokens: median ${tokens.corpus.median}, p90 ${tokens.corpus.p90}, max ${tokens.corpus.max}; hostile max ${tokens.hostile.max}`,
  );
  const files = corpusFiles(settings.corpusInboxStep);
  step(
    `corpus: event loop idle ${settings.corpusIdleSeconds} s, then while ${files.length} corpus and ${hostile.length} hostile messages are backfilled and opened (a server of its own, its quota pacer off)`,
  );
  const store = await world.isolated('corpus');
  const { server } = await world.startSecondServer({ name: 'corpus', env: { ...store.env, ...quotaEnv(0) } });
  let eventLoop;
  try {
    eventLoop = await eventLoopUnderMail({
      serverUrl: server.url,
      webOrigin: WEB_ORIGIN,
      adminToken: BENCH_ADMIN_TOKEN,
      identity: world.identity,
      gmail: world.gmail,
      pool: store.pool,
      files,
      hostile,
      idleSeconds: settings.corpusIdleSeconds,
    });
  } finally {
    await server.stop();
    await store.drop();
  }
  report.corpus = { tokens, eventLoop };
  step(
    `corpus event loop: idle p99 ${eventLoop.idle.p99Ms} / max ${eventLoop.idle.maxMs} ms; busy p99 ${eventLoop.busy.p99Ms} / max ${eventLoop.busy.maxMs} ms (${eventLoop.busy.threadsOpened} threads opened, ${eventLoop.busy.non200} not 200); one message at a time: max ${eventLoop.alone?.maxMs} ms ("${eventLoop.alone?.worst}")`,
  );
}
