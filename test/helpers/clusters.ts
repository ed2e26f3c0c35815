/**
 * Embedded clusters a test leaves behind, found by their data directory: `pg_ctl` runs each in
 * a session of its own, so it outlives the process that started it.
 */
import { accessSync, constants, readFileSync, statfsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const SHM = '/dev/shm';
const TMPFS_MAGIC = 0x01021994;
/** What a RAM filesystem must have free to take a test cluster (a run's peak is far below). */
const SHM_MIN_FREE = 2 * 1024 ** 3;

/**
 * Where test clusters keep their data: a RAM filesystem (/dev/shm) when there is one with room,
 * else the temporary directory; MIA_TEST_CLUSTER_ROOT names another. A test cluster's files are
 * throw-away (it runs with fsync off), and each test file's database clone creates, writes and
 * later removes a few hundred of them: on a disk filesystem most of a clone's cost is the
 * kernel's (measured on this machine: ~400 ms of system time per clone and drop on ext4,
 * ~50 ms on tmpfs).
 */
export function clusterRoot(): string {
  const named = process.env.MIA_TEST_CLUSTER_ROOT;
  if (named) return named;
  try {
    const fs = statfsSync(SHM);
    accessSync(SHM, constants.W_OK);
    if (fs.type === TMPFS_MAGIC && fs.bavail * fs.bsize >= SHM_MIN_FREE) return SHM;
  } catch {
    // no /dev/shm (not Linux), or not writable: the temporary directory
  }
  return tmpdir();
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
