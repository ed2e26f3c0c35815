/** The user while a backfill runs (bench item 7): lists and opens threads at a pace, each answer timed. */
import type { SignedIn } from '../infra.ts';

/** Latencies of one kind of request: how many, how many not 200, p50/p99/max (ms). */
export interface Timings {
  count: number;
  non200: number;
  statuses: Record<string, number>;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export const quantile = (xs: number[], q: number) =>
  xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]! : 0;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export function timings(xs: { ms: number; status: number }[]): Timings {
  const ms = xs.map((x) => x.ms);
  const statuses: Record<string, number> = {};
  for (const x of xs) statuses[x.status] = (statuses[x.status] ?? 0) + 1;
  return {
    count: xs.length,
    non200: xs.filter((x) => x.status !== 200).length,
    statuses,
    p50Ms: Math.round(quantile(ms, 0.5)),
    p99Ms: Math.round(quantile(ms, 0.99)),
    maxMs: Math.round(Math.max(0, ...ms)),
  };
}

/**
 * The user while the backfill runs: every `everyMs`, the first 20 inbox threads, then one of them
 * not opened yet (its bodies fetched: one threads.get, 40 units, in the user's lane). Until `running()` is false.
 */
export async function openThreads(
  session: SignedIn,
  everyMs: number,
  running: () => boolean,
): Promise<{ lists: { ms: number; status: number }[]; opens: { ms: number; status: number }[] }> {
  const lists: { ms: number; status: number }[] = [];
  const opens: { ms: number; status: number }[] = [];
  const opened = new Set<string>();
  const headers = { 'X-Forwarded-For': '10.42.0.1' };
  const timed = async (path: string) => {
    const t = performance.now();
    try {
      const res = await session.browser.fetch(path, { headers, signal: AbortSignal.timeout(60_000) });
      const body = res.status === 200 ? ((await res.json()) as unknown) : await res.arrayBuffer().then(() => null);
      return { ms: performance.now() - t, status: res.status, body };
    } catch {
      return { ms: performance.now() - t, status: 0, body: null };
    }
  };
  const start = performance.now();
  for (let i = 1; running(); i++) {
    await sleep(Math.max(0, start + i * everyMs - performance.now()));
    if (!running()) break;
    const list = await timed('/api/mail/threads?limit=20');
    lists.push({ ms: list.ms, status: list.status });
    const id = (list.body as { threads?: { id: string }[] } | null)?.threads
      ?.map((t) => t.id)
      .find((x) => !opened.has(x));
    if (!id) continue; // nothing stored yet, or every listed thread opened
    opened.add(id);
    const open = await timed(`/api/mail/threads/${id}`);
    opens.push({ ms: open.ms, status: open.status });
  }
  return { lists, opens };
}
