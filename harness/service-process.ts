/**
 * The service run the way an operator runs it: `node server/main.ts` (Node's own type
 * stripping, as `npm start` does) as a child process, configured by environment only, its
 * JSON log lines parsed and searchable, its memory and CPU time read from /proc.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../server/infra/database.ts';
import { Browser } from './browser.ts';

export const REPO_ROOT = fileURLToPath(new URL('../', import.meta.url));
export const WEB_ORIGIN = 'http://web.test:5173';
export const ADMIN_TOKEN = 'resilience-admin-token-0123456789';

interface Cleanup {
  after(fn: () => unknown): void;
}

export type LogLine = Record<string, unknown> & { level?: string; msg?: string };

export interface ServiceProcess {
  readonly name: string;
  readonly url: string;
  readonly port: number;
  readonly pid: number;
  readonly child: ChildProcess;
  /** Parsed JSON log lines (stdout), in order. */
  readonly logs: LogLine[];
  /** Every log line counted by `level msg`. */
  readonly logCounts: Map<string, number>;
  /** Non-JSON output (stderr and stray stdout). */
  readonly stderr: string[];
  /** Resolves when the process has exited. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  readonly alive: boolean;
  browser(): Browser;
  /** Resolves with the first log line (already written or future) matching `pred`. */
  waitForLog(pred: (l: LogLine) => boolean, timeoutMs?: number): Promise<LogLine>;
  /** SIGKILL, then waits for the exit. */
  kill(): Promise<void>;
  /** SIGTERM (graceful stop), then waits for the exit; SIGKILL after `graceMs`. */
  stop(graceMs?: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** Resident set size of the process, from /proc (bytes). */
  rss(): Promise<number>;
  /** CPU time the process has used so far (user + system), from /proc (seconds). */
  cpuSeconds(): Promise<number>;
}

const live = new Set<ChildProcess>();
process.once('exit', () => {
  for (const c of live) c.kill('SIGKILL');
});

/** Environment every instance shares (the secrets must match for two instances to share sessions). */
export function sharedSecrets(): Record<string, string> {
  return {
    SESSION_SECRET: randomBytes(24).toString('base64url'),
    TOKEN_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
    STATUS_ADMIN_TOKEN: ADMIN_TOKEN,
    WEB_ORIGIN,
  };
}

/**
 * Starts `node server/main.ts` as a child process and resolves once it logs that it listens.
 * `t` (a test context) kills it after the test; without one the caller stops it.
 */
export async function startServiceProcess(
  t: Cleanup | null,
  opts: {
    databaseUrl: string;
    env: Record<string, string>;
    name?: string;
    port?: number;
    startTimeoutMs?: number;
    nodeArgs?: string[];
    /** Which parsed log lines to keep in `logs` (default all); `logCounts` counts every line by level and message. */
    keepLog?: (l: LogLine) => boolean;
    /** Called with every output line that is not a JSON log line (then not kept in `stderr`). */
    onOutput?: (line: string) => void;
  },
): Promise<ServiceProcess> {
  const port = opts.port ?? (await freePort());
  const name = opts.name ?? `svc-${port}`;
  const dataDir = await mkdtemp(path.join(tmpdir(), 'mia-svc-'));
  const child = spawn(process.execPath, [...(opts.nodeArgs ?? []), 'server/main.ts'], {
    cwd: REPO_ROOT,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      MIA_DATA_DIR: dataDir,
      HOST: '127.0.0.1',
      PORT: String(port),
      PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
      LOG_LEVEL: 'info',
      ...opts.env,
      DATABASE_URL: opts.databaseUrl,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  live.add(child);
  const logs: LogLine[] = [];
  const logCounts = new Map<string, number>();
  const stderr: string[] = [];
  const waiters = new Set<{ pred: (l: LogLine) => boolean; resolve: (l: LogLine) => void }>();
  let alive = true;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      alive = false;
      live.delete(child);
      resolve({ code, signal });
    });
  });
  void exited.then(() => rm(dataDir, { recursive: true, force: true }));
  const lines = (stream: NodeJS.ReadableStream, onLine: (line: string) => void) => {
    let buf = '';
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      buf += chunk;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.trim()) onLine(line);
      }
    });
  };
  lines(child.stdout!, (line) => {
    let parsed: LogLine;
    try {
      parsed = JSON.parse(line);
    } catch {
      if (opts.onOutput) opts.onOutput(line);
      else stderr.push(line);
      return;
    }
    const key = `${parsed.level} ${parsed.msg}`;
    logCounts.set(key, (logCounts.get(key) ?? 0) + 1);
    if (!opts.keepLog || opts.keepLog(parsed) || String(parsed.msg).startsWith('listening on ')) logs.push(parsed);
    for (const w of [...waiters]) {
      if (w.pred(parsed)) {
        waiters.delete(w);
        w.resolve(parsed);
      }
    }
  });
  lines(child.stderr!, (line) => stderr.push(line));

  const waitForLog = (pred: (l: LogLine) => boolean, timeoutMs = 30_000) => {
    const seen = logs.find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise<LogLine>((resolve, reject) => {
      const w = {
        pred,
        resolve: (l: LogLine) => {
          clearTimeout(timer);
          resolve(l);
        },
      };
      const timer = setTimeout(() => {
        waiters.delete(w);
        reject(
          new Error(
            `${name}: no matching log line within ${timeoutMs} ms (alive: ${alive}; stderr: ${stderr.slice(-5).join(' | ')})`,
          ),
        );
      }, timeoutMs);
      waiters.add(w);
      void exited.then(() => {
        if (!waiters.has(w)) return;
        waiters.delete(w);
        clearTimeout(timer);
        reject(new Error(`${name} exited before the expected log line; stderr: ${stderr.slice(-10).join(' | ')}`));
      });
    });
  };

  const url = `http://127.0.0.1:${port}`;
  const proc: ServiceProcess = {
    name,
    url,
    port,
    pid: child.pid!,
    child,
    logs,
    logCounts,
    stderr,
    exited,
    get alive() {
      return alive;
    },
    browser: () => new Browser(url, WEB_ORIGIN),
    waitForLog,
    async kill() {
      if (alive) child.kill('SIGKILL');
      await exited;
    },
    async stop(graceMs = 15_000) {
      if (alive) child.kill('SIGTERM');
      const timer = setTimeout(() => alive && child.kill('SIGKILL'), graceMs);
      const r = await exited;
      clearTimeout(timer);
      return r;
    },
    async rss() {
      const { readFile } = await import('node:fs/promises');
      const status = await readFile(`/proc/${child.pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)\s+kB/.exec(status)?.[1] ?? NaN);
      return kb * 1024;
    },
    async cpuSeconds() {
      const { readFile } = await import('node:fs/promises');
      const fields = (await readFile(`/proc/${child.pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
      return (Number(fields[11]) + Number(fields[12])) / 100;
    },
  };
  t?.after(() => proc.kill());
  await waitForLog(
    (l) => typeof l.msg === 'string' && l.msg.startsWith('listening on '),
    opts.startTimeoutMs ?? 60_000,
  );
  return proc;
}
