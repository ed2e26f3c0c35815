/**
 * Embedded clusters a test leaves behind, found by their data directory: `pg_ctl` runs each in
 * a session of its own, so it outlives the process that started it.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';

/** The postmaster's pid; undefined once the cluster has shut down (postgres removes the file). */
export function postmasterPid(dataDir: string): number | undefined {
  try {
    return Number(readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0]) || undefined;
  } catch {
    return undefined;
  }
}

/** False once the process is gone. */
export function signal(pid: number, sig: NodeJS.Signals | 0): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch {
    return false;
  }
}

/**
 * Stops the cluster if it still runs, with an immediate shutdown (SIGQUIT: nothing of it is
 * kept), and returns once its postmaster is gone (at most 10 s). Synchronous, so that it also
 * finishes in a teardown nobody awaits. The postmaster is not this process's child: there is
 * no exit event, so it looks every 10 ms.
 */
export function stopClusterNow(dataDir: string): void {
  const pid = postmasterPid(dataDir);
  if (!pid || !signal(pid, 'SIGQUIT')) return;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + 10_000;
  while (signal(pid, 0) && Date.now() < deadline) Atomics.wait(pause, 0, 0, 10);
}
