/**
 * The bench's processes: the server (spawned as `npm start` runs it) and the bare handler, waited for, and what /proc tells of them and of PostgreSQL's backends (CPU
 * time, resident memory).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export const ROOT = path.resolve(import.meta.dirname, '..', '..');

export interface NodeProcess {
  url: string;
  pid: number;
  child: ChildProcess;
  /** Resident set size in MiB (from /proc), or null when not readable. */
  rss(): number | null;
  stop(): Promise<void>;
}

export function rssMiB(pid: number): number | null {
  try {
    const m = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) / 1024 : null;
  } catch {
    return null;
  }
}

/**
 * A checkout's `npm start` script, read as `[NAME=value ...] [exec] <command>`: the environment
 * it sets (a `NAME=${NAME:-value}` default as `value`; a caller's own environment should win
 * over it, as the shell's does) and the command's words. The bench starts the server this way
 * and the Dockerfile test holds the image's ENV and CMD to it.
 */
export function startScript(cwd: string): { env: Record<string, string>; command: string[] } {
  const pkg = JSON.parse(readFileSync(path.join(cwd, 'package.json'), 'utf8')) as { scripts?: { start?: string } };
  const words = (pkg.scripts?.start ?? '').split(/\s+/);
  const env: Record<string, string> = {};
  for (let m; (m = /^([A-Z_][A-Z0-9_]*)=(.*)$/.exec(words[0] ?? '')); words.shift()) {
    env[m[1]!] = /^\$\{\w+:-(.*)\}$/.exec(m[2]!)?.[1] ?? m[2]!;
  }
  if (words[0] === 'exec') words.shift();
  return { env, command: words };
}

/**
 * How `script` in `cwd` is started: the service as its checkout's `npm start` runs it (Node's own
 * type stripping with the start script's node options, e.g. the heap settings, and its
 * environment such as `MALLOC_ARENA_MAX=2`, values in `env` winning; under tsx where an
 * older checkout's script says so); the bench's own scripts by Node's type stripping too.
 */
function launch(
  script: string,
  cwd: string,
  env: Record<string, string>,
): { args: string[]; env: Record<string, string> } {
  if (script !== 'server/main.ts') return { args: [], env };
  const start = startScript(cwd);
  if (start.command.some((w) => w.includes('tsx'))) return { args: ['--import', 'tsx'], env };
  const words = start.command;
  const args = words[0] === 'node' && words.at(-1) === script ? words.slice(1, -1) : [];
  return { args, env: { ...start.env, ...env } };
}

/**
 * Spawns `node <launch options> [nodeArgs] <script>` with `env` (stdout and stderr to `logFile`), and
 * waits until `readyPath` answers over HTTP.
 */
export async function spawnNode(opts: {
  script: string;
  env: Record<string, string>;
  port: number;
  logFile: string;
  readyPath: string;
  timeoutMs?: number;
  nodeArgs?: string[];
  cwd?: string;
}): Promise<NodeProcess> {
  const fd = openSync(opts.logFile, 'a');
  const cwd = opts.cwd ?? ROOT;
  const how = launch(opts.script, cwd, opts.env);
  const child = spawn(process.execPath, [...how.args, ...(opts.nodeArgs ?? []), opts.script], {
    cwd,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...how.env },
    stdio: ['ignore', fd, fd],
  });
  closeSync(fd);
  const url = `http://127.0.0.1:${opts.port}`;
  let exited: number | null = null;
  child.once('exit', (code) => (exited = code ?? -1));
  const deadline = Date.now() + (opts.timeoutMs ?? 120_000);
  for (;;) {
    if (exited !== null) throw new Error(`${opts.script} exited with ${exited} during start-up; see ${opts.logFile}`);
    try {
      const res = await fetch(url + opts.readyPath, { signal: AbortSignal.timeout(1_000) });
      await res.arrayBuffer();
      break;
    } catch {
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`${opts.script} did not answer within ${opts.timeoutMs ?? 120_000} ms; see ${opts.logFile}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return {
    url,
    pid: child.pid!,
    child,
    rss: () => rssMiB(child.pid!),
    async stop() {
      if (exited !== null) return;
      const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await done;
      clearTimeout(timer);
    },
  };
}

/** CPU time (user + system) a process has used so far, in ms (from /proc; clock ticks of 10 ms). */
export function cpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return null;
  }
}

/**
 * CPU time so far of each PostgreSQL backend serving `database` (process title `postgres: user
 * database …`), in ms; only the children of `postmasterPid` when given (another cluster on the
 * machine may serve a database of the same name).
 */
export function postgresCpu(database: string, postmasterPid: number | null = null): Map<number, number> {
  const out = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const title = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
      if (!title.startsWith('postgres: ') || !title.split(/[\s\0]+/).includes(database)) continue;
      if (
        postmasterPid !== null &&
        !new RegExp(`^PPid:\\s+${postmasterPid}$`, 'm').test(readFileSync(`/proc/${entry}/status`, 'utf8'))
      )
        continue;
      const ms = cpuMs(Number(entry));
      if (ms !== null) out.set(Number(entry), ms);
    } catch {
      /* gone meanwhile */
    }
  }
  return out;
}

/** CPU the backends used between two snapshots (backends that exited meanwhile are missed; new ones count whole). */
export function postgresCpuDelta(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, ms] of after) total += ms - Math.min(ms, before.get(pid) ?? 0);
  return total;
}

/** Samples a process's RSS every `everyMs` until stopped: peak and mean in MiB. */
export function sampleRss(pid: number, everyMs = 100) {
  const samples: number[] = [];
  const take = () => {
    const v = rssMiB(pid);
    if (v !== null) samples.push(v);
  };
  take();
  const timer = setInterval(take, everyMs);
  return {
    stop() {
      clearInterval(timer);
      take();
      return {
        peak: samples.length ? Math.max(...samples) : null,
        mean: samples.length ? samples.reduce((a, b) => a + b, 0) / samples.length : null,
        samples: samples.length,
      };
    },
  };
}
