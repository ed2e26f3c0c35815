/** Bench item 8: prompt tokens on the mail corpus, and the event loop under hostile mail. */
import type { BenchReport } from '../report.ts';
import { corpusFiles, eventLoopUnderMail, hostileMail, promptTokens } from '../scenarios.ts';
import { settings, step, WEB_ORIGIN } from './bench.settings.ts';
import { BENCH_ADMIN_TOKEN, type BenchWorld } from './bench.world.ts';

export async function measureCorpus(world: BenchWorld, report: BenchReport): Promise<void> {
  const hostile = hostileMail(settings.hostileScale);
  const tokenFiles = corpusFiles(settings.corpusTokenStep);
  step(`corpus: prompt tokens of ${tokenFiles.length} corpus and ${hostile.length} hostile messages (o200k_base)`);
  const tokens = await promptTokens(tokenFiles, hostile);
  step(`corpus tokens: median ${tokens.corpus.median}, p90 ${tokens.corpus.p90}, max ${tokens.corpus.max}; hostile max ${tokens.hostile.max}`);
  const files = corpusFiles(settings.corpusInboxStep);
  step(`corpus: event loop idle ${settings.corpusIdleSeconds} s, then while ${files.length} corpus and ${hostile.length} hostile messages are backfilled and opened`);
  const eventLoop = await eventLoopUnderMail({
    serverUrl: world.server.url,
    webOrigin: WEB_ORIGIN,
    adminToken: BENCH_ADMIN_TOKEN,
    identity: world.identity,
    gmail: world.gmail,
    pool: world.db.pool,
    files,
    hostile,
    idleSeconds: settings.corpusIdleSeconds,
  });
  report.corpus = { tokens, eventLoop };
  step(`corpus event loop: idle p99 ${eventLoop.idle.p99Ms} / max ${eventLoop.idle.maxMs} ms; busy p99 ${eventLoop.busy.p99Ms} / max ${eventLoop.busy.maxMs} ms (${eventLoop.busy.threadsOpened} threads opened, ${eventLoop.busy.non200} not 200); one message at a time: max ${eventLoop.alone?.maxMs} ms ("${eventLoop.alone?.worst}")`);
}
