/**
 * Reachability probes of the mail and AI providers for /health (runtime-contract part 3):
 * one GET each, with a short timeout, never retried. Only the outcome class is reported,
 * never the provider's text.
 */
export type ComponentState = 'operational' | 'degraded' | 'down' | 'not_configured';

export interface ComponentReport {
  state: ComponentState;
  detail: string;
}

export type Probe = () => Promise<ComponentReport>;

export function httpProbe(
  url: string,
  opts: { headers?: Record<string, string>; timeoutMs?: number; slowMs?: number } = {},
): Probe {
  const timeoutMs = opts.timeoutMs ?? 3000;
  const slowMs = opts.slowMs ?? 1500;
  return async () => {
    const started = performance.now();
    try {
      const res = await fetch(url, {
        headers: opts.headers,
        signal: AbortSignal.timeout(timeoutMs),
        redirect: 'manual',
      });
      await res.body?.cancel();
      const ms = Math.round(performance.now() - started);
      if (res.status >= 200 && res.status < 300) {
        return ms > slowMs
          ? { state: 'degraded', detail: `reachable but slow (${ms} ms)` }
          : { state: 'operational', detail: `reachable (${ms} ms)` };
      }
      if (res.status === 429 || res.status >= 500) return { state: 'degraded', detail: `answered HTTP ${res.status}` };
      return { state: 'down', detail: `answered HTTP ${res.status}` };
    } catch (err) {
      const timedOut = err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError');
      return { state: 'down', detail: timedOut ? `no answer within ${timeoutMs} ms` : 'unreachable' };
    }
  };
}

export const notConfigured: Probe = async () => ({ state: 'not_configured', detail: 'not configured' });

/** Caches a probe's result for `ttlMs`, sharing one in-flight check among concurrent callers. */
export function cachedProbe(probe: Probe, ttlMs = 15_000, now = () => Date.now()): Probe {
  let cached: { at: number; value: Promise<ComponentReport> } | undefined;
  return () => {
    if (!cached || now() - cached.at >= ttlMs) cached = { at: now(), value: probe() };
    return cached.value;
  };
}
