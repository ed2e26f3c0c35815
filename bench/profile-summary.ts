/**
 * Where a process's CPU went in a window of its V8 CPU profile (`--cpu-prof`): sampled time by
 * package or folder (inclusive: a package is counted once per sample on whose stack it is) and
 * the functions with the most self time. The window is in the profile's clock, the monotonic
 * one `process.hrtime` reads (microseconds), so the bench can mark it from its own process.
 * Same reading as /work/tools/prof.mjs, limited to the window.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileSummary {
  /** Sampled ms in the window, idle left out. */
  busyMs: number;
  /** Whether the window held any sample (false: the whole profile was summarised). */
  windowed: boolean;
  /** Inclusive: a package or folder counted once per sample on whose stack it is (the column does not add up). */
  byPart: { part: string; ms: number }[];
  /** Self time by the part of the frame that was running (adds up to busyMs): a package, our folder, Node's own JS, or V8's (GC, program). */
  selfByPart: { part: string; ms: number }[];
  topSelf: { fn: string; ms: number }[];
}

/** `node_modules/<pkg>`, `server/<area>`, Node's own code, or V8's pseudo-frames (GC, program). */
function partOf(url: string, fn: string): string | null {
  const pkg = /node_modules\/((@[^/]+\/)?[^/]+)/.exec(url);
  if (pkg) return pkg[1]!;
  const own = /\/(server|db|shared)\/([^/]+)/.exec(url);
  if (own) return own[2]!.endsWith('.ts') ? own[1]! : `${own[1]}/${own[2]}`;
  if (url.startsWith('node:')) return 'node (its own JS)';
  if (!url && fn.startsWith('(') && fn !== '(root)') return fn;
  return null;
}

export function summariseProfile(file: string, window?: { fromUs: number; toUs: number }): ProfileSummary {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const collect = (inWindow: boolean) => {
    const self = new Map<number, number>();
    let t = p.startTime;
    p.samples.forEach((id, i) => {
      t += p.timeDeltas[i] ?? 0;
      if (inWindow && window && (t < window.fromUs || t > window.toUs)) return;
      self.set(id, (self.get(id) ?? 0) + (p.timeDeltas[i] ?? 0));
    });
    return self;
  };
  let self = collect(true);
  const windowed = self.size > 0 && window !== undefined;
  if (!windowed) self = collect(false);
  const fns = new Map<string, number>();
  const parts = new Map<string, number>();
  const selfParts = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of self) {
    const n = byId.get(id)!;
    if (n.callFrame.functionName === '(idle)') continue;
    busy += us;
    const url = n.callFrame.url.replace(/^file:\/\//, '');
    const key = `${n.callFrame.functionName || '(anonymous)'} ${url.replace(/.*node_modules\//, '').replace(/.*\/(server|db|shared|bench)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;
    fns.set(key, (fns.get(key) ?? 0) + us);
    const own = partOf(url, n.callFrame.functionName) ?? (url ? 'other' : 'native (V8 builtins, C++)');
    selfParts.set(own, (selfParts.get(own) ?? 0) + us);
    const seen = new Set<string>();
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const frame = byId.get(cur)!.callFrame;
      const part = partOf(frame.url.replace(/^file:\/\//, ''), frame.functionName);
      if (part && part !== 'node (its own JS)' && !part.startsWith('(') && !seen.has(part)) {
        seen.add(part);
        parts.set(part, (parts.get(part) ?? 0) + us);
      }
    }
  }
  const top = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n);
  return {
    busyMs: Math.round(busy / 100) / 10,
    windowed,
    byPart: top(parts, 14).map(([part, us]) => ({ part, ms: Math.round(us / 100) / 10 })),
    selfByPart: top(selfParts, 14).map(([part, us]) => ({ part, ms: Math.round(us / 100) / 10 })),
    topSelf: top(fns, 12).map(([fn, us]) => ({ fn, ms: Math.round(us / 100) / 10 })),
  };
}

/** The monotonic clock of V8's profiles, in microseconds. */
export const profileClockUs = () => Number(process.hrtime.bigint() / 1000n);
