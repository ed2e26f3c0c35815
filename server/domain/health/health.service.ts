/**
 * The health check behind GET /health, GET / and system.health: database round trip plus
 * the cached provider probes. One function, so the page and the probe always agree.
 */
import type { ComponentReport, Probe } from '../../providers/reachability.ts';

export interface HealthReport {
  status: 'ok' | 'degraded' | 'down';
  service: 'mail-inbox-assistant';
  time: string;
  database: 'ok' | 'down';
  mail: ComponentReport;
  ai: ComponentReport;
}

export interface HealthService {
  check(): Promise<HealthReport>;
}

export function createHealthService(deps: {
  pingDatabase: () => Promise<void>;
  mail: Probe;
  ai: Probe;
  clock?: () => Date;
}): HealthService {
  const clock = deps.clock ?? (() => new Date());
  return {
    async check() {
      const [db, mail, ai] = await Promise.all([
        deps.pingDatabase().then(
          () => 'ok' as const,
          () => 'down' as const,
        ),
        deps.mail(),
        deps.ai(),
      ]);
      const providerTrouble = [mail, ai].some((c) => c.state === 'degraded' || c.state === 'down');
      return {
        status: db === 'down' ? 'down' : providerTrouble ? 'degraded' : 'ok',
        service: 'mail-inbox-assistant',
        time: clock().toISOString(),
        database: db,
        mail,
        ai,
      };
    },
  };
}
