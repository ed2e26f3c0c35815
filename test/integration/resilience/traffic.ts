/**
 * Closed-loop background traffic for the resilience tests: a few workers cycling through
 * a list of requests until stopped, recording every outcome with the phase it started in.
 */
import { randomUUID } from 'node:crypto';
import type { Browser } from '../../../harness/browser.ts';

export interface Outcome {
  route: string;
  phase: string;
  status: number;
  /** error.code of an error envelope (or error.data.appCode on /trpc). */
  code?: string;
  retryAfter: string | null;
  /** A network error or the client timeout: no HTTP answer at all. */
  failure?: string;
  startedAt: number;
  ms: number;
  /** For writes whose persistence is checked afterwards. */
  key?: string;
}

export interface Call {
  route: string;
  run(signal: AbortSignal): Promise<{ res: Response; key?: string }>;
}

export interface Traffic {
  outcomes: Outcome[];
  setPhase(phase: string): void;
  stop(): Promise<void>;
}

/** A random client address per request (the service runs with TRUST_PROXY=true), so rate limits stay out of the way. */
export function randomIp(): string {
  const b = () => Math.floor(Math.random() * 250) + 1;
  return `10.${b()}.${b()}.${b()}`;
}

export function startTraffic(
  calls: Call[],
  opts: { workers?: number; timeoutMs?: number; pauseMs?: number } = {},
): Traffic {
  const outcomes: Outcome[] = [];
  let phase = 'start';
  let running = true;
  const timeoutMs = opts.timeoutMs ?? 8_000;
  const worker = async (offset: number) => {
    for (let i = offset; running; i++) {
      const call = calls[i % calls.length]!;
      const startedAt = Date.now();
      const started = phase;
      try {
        const { res, key } = await call.run(AbortSignal.timeout(timeoutMs));
        const text = await res.text();
        let code: string | undefined;
        if (res.status >= 400) {
          try {
            const body = JSON.parse(text);
            code =
              body?.error?.code && typeof body.error.code === 'string' ? body.error.code : body?.error?.data?.appCode;
          } catch {
            code = 'non-json';
          }
        }
        outcomes.push({
          route: call.route,
          phase: started,
          status: res.status,
          code,
          retryAfter: res.headers.get('retry-after'),
          startedAt,
          ms: Date.now() - startedAt,
          key,
        });
      } catch (err) {
        outcomes.push({
          route: call.route,
          phase: started,
          status: 0,
          retryAfter: null,
          failure: (err as Error).name + ': ' + (err as Error).message,
          startedAt,
          ms: Date.now() - startedAt,
        });
      }
      if (opts.pauseMs) await new Promise((r) => setTimeout(r, opts.pauseMs));
    }
  };
  const loops = Array.from({ length: opts.workers ?? 4 }, (_, i) => worker(i));
  return {
    outcomes,
    setPhase(p) {
      phase = p;
    },
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** The mixed read/write calls of one signed-in browser. */
export function mixedCalls(browser: Browser, csrfToken: string, threadIds: string[], origin: string): Call[] {
  const h = (extra: Record<string, string> = {}) => ({ 'X-Forwarded-For': randomIp(), ...extra });
  const csrf = () => h({ 'X-CSRF-Token': csrfToken, Origin: origin });
  let n = 0;
  return [
    {
      route: 'list',
      run: async (signal) => ({ res: await browser.fetch('/api/mail/threads?limit=20', { headers: h(), signal }) }),
    },
    {
      route: 'detail',
      run: async (signal) => ({
        res: await browser.fetch(`/api/mail/threads/${threadIds[n++ % threadIds.length]}`, { headers: h(), signal }),
      }),
    },
    {
      route: 'session',
      run: async (signal) => ({ res: await browser.fetch('/auth/session', { headers: h(), signal }) }),
    },
    { route: 'health', run: async (signal) => ({ res: await browser.fetch('/health', { headers: h(), signal }) }) },
    {
      route: 'analytics',
      run: async (signal) => {
        const key = randomUUID();
        // A public event without the session cookie, keyed by its anonymousId.
        const res = await fetch(`${browser.baseUrl}/api/analytics/event`, {
          method: 'POST',
          headers: { ...h(), 'Content-Type': 'application/json' },
          body: JSON.stringify({ event: 'page_view', anonymousId: key, properties: { path: `/r/${key}` } }),
          signal,
        });
        return { res, key };
      },
    },
    {
      route: 'sync',
      run: async (signal) => ({
        res: await browser.fetch('/api/mail/sync', { method: 'POST', headers: csrf(), signal }),
      }),
    },
    {
      route: 'sync-state',
      run: async (signal) => ({ res: await browser.fetch('/api/mail/sync-state', { headers: h(), signal }) }),
    },
    {
      route: 'incidents',
      run: async (signal) => ({ res: await browser.fetch('/api/status/incidents', { headers: h(), signal }) }),
    },
  ];
}

export function summarise(outcomes: Outcome[]): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const o of outcomes) {
    const k = `${o.phase}`;
    const v = o.failure ? 'network' : `${o.status}${o.code ? ` ${o.code}` : ''}`;
    out[k] ??= {};
    out[k][`${o.route}:${v}`] = (out[k][`${o.route}:${v}`] ?? 0) + 1;
  }
  return out;
}
