/**
 * Embedded clusters a test leaves behind, found by their data directory: `pg_ctl` runs each in
 * a session of its own, so it outlives the process that started it.
 */
import { accessSync, constants, readFileSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const SHM = '/dev/shm';
const TMPFS_MAGIC = 0x01021994;
/** What a RAM filesystem must have free to take a run's test clusters (a run peaks far below). */
export const SHM_MIN_FREE = 2 * 1024 ** 3;

/**
 * Where test clusters keep their data: a RAM filesystem (/dev/shm) when there is one with room,
 * else the temporary directory; MIA_TEST_CLUSTER_ROOT names another. A test cluster's files are
 * throw-away (it runs with fsync off), and each test file's database clone creates, writes and
 * later removes a few hundred of them: on a disk filesystem the kernel's share of that costs
 * several times the clone's own work.
 */
export function clusterRoot(): string {
  let shm: ShmState = null;
  try {
    accessSync(SHM, constants.W_OK);
    const fs = statfsSync(SHM);
    shm = { tmpfs: fs.type === TMPFS_MAGIC, freeBytes: fs.bavail * fs.bsize };
  } catch {
    // no /dev/shm (not Linux), or not writable
  }
  return pickClusterRoot(process.env.MIA_TEST_CLUSTER_ROOT, shm, tmpdir());
}

/** /dev/shm as found: null when missing or not writable. */
export type ShmState = { tmpfs: boolean; freeBytes: number } | null;

export function pickClusterRoot(named: string | undefined, shm: ShmState, tmp: string): string {
  if (named) return named;
  return shm?.tmpfs && shm.freeBytes >= SHM_MIN_FREE ? SHM : tmp;
}

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
