/**
 * Bench items 1, 4 and 5 for the thread list: the service against the bare handler at each size,
 * with 50 clients and with fewer connections on the largest account, EXPLAIN of the statement,
 * and the server's memory idle, under the load and after it.
 */
import { freshIp, signIn, type SignedIn } from '../infra.ts';
import type { BenchReport } from '../report.ts';
import { explainList, loadTest, type LoadResult } from '../scenarios.ts';
import { settings, step, WEB_ORIGIN } from './bench.settings.ts';
import type { BenchWorld } from './bench.world.ts';

export async function measureList(
  world: BenchWorld,
  report: BenchReport,
  listAccounts: Map<number, SignedIn>,
): Promise<void> {
  const { db, identity, server, bare, listStatement } = world;
  const { memory } = report;
  memory.idleMiB = server.rss();
  // Every load run of item 1: the same duration and warm-up, the same database counters.
  const timing = { seconds: settings.seconds, warmupSeconds: settings.warmupSeconds, db };
  const serviceUrl = `${server.url}/api/mail/threads?limit=${settings.listLimit}`;
  for (const size of settings.sizes) {
    const account = listAccounts.get(size)!;
    const largest = size === Math.max(...settings.sizes);
    step(`list at ${size} threads: service`);
    const service = await loadTest({
      target: 'service',
      url: serviceUrl,
      headers: { Cookie: account.cookie },
      connections: settings.connections,
      ...timing,
      process: server,
      memory: largest,
    });
    step(`list at ${size} threads: bare handler`);
    const floor = await loadTest({
      target: 'bare',
      url: `${bare.url}/api/mail/threads?account=${account.accountId}&limit=${settings.listLimit}`,
      connections: settings.connections,
      ...timing,
      process: bare,
    });
    let many: LoadResult | undefined;
    if (largest) {
      step(`list at ${size} threads: service, ${settings.connections} clients`);
      const clients: Record<string, string>[] = [];
      for (let i = 0; i < settings.connections; i++) {
        const again = await signIn(
          server.url,
          WEB_ORIGIN,
          identity,
          { sub: `bench-list-${size}`, email: account.email },
          db.pool,
        );
        clients.push({ Cookie: again.cookie, 'X-Forwarded-For': freshIp() });
      }
      many = await loadTest({
        target: 'service-many',
        url: serviceUrl,
        clients,
        connections: settings.connections,
        ...timing,
        process: server,
      });
    }
    let moderate: LoadResult | undefined;
    if (largest && settings.moderateConnections < settings.connections) {
      step(`list at ${size} threads: service, ${settings.moderateConnections} connections`);
      moderate = await loadTest({
        target: 'service',
        url: serviceUrl,
        headers: { Cookie: account.cookie },
        connections: settings.moderateConnections,
        ...timing,
        process: server,
      });
    }
    // The floor at the same lighter load: what the machine gives a bare handler's tail latency.
    let bareModerate: LoadResult | undefined;
    if (moderate) {
      step(`list at ${size} threads: bare handler, ${settings.moderateConnections} connections`);
      bareModerate = await loadTest({
        target: 'bare',
        url: `${bare.url}/api/mail/threads?account=${account.accountId}&limit=${settings.listLimit}`,
        connections: settings.moderateConnections,
        ...timing,
        process: bare,
      });
    }
    // After the load: pg_stat_statements names a statement by the text it saw first.
    report.explain.push({
      threads: size,
      ...(await explainList(db.pool, listStatement, account.accountId, settings.listLimit)),
    });
    report.list.push({
      threads: size,
      service,
      ...(many ? { serviceMany: many } : {}),
      ...(moderate ? { serviceModerate: moderate } : {}),
      ...(bareModerate ? { bareModerate } : {}),
      bare: floor,
      ratio: floor.rps ? service.rps / floor.rps : null,
    });
    if (largest && service.rss) {
      memory.loadPeakMiB = service.rss.peak;
      memory.loadMeanMiB = service.rss.mean;
    }
    step(
      `  service ${service.rps.toFixed(0)} req/s p99 ${service.latencyMs.p99} ms; bare ${floor.rps.toFixed(0)} req/s p99 ${floor.latencyMs.p99} ms`,
    );
  }
  await new Promise((r) => setTimeout(r, 2_000));
  memory.afterLoadMiB = server.rss();
}
