/**
 * A yardstick for this machine's speed today, for the suite's time (issue 27): the VM's speed
 * moves by 2× from day to day, so `npm test`'s seconds compare across days only next to a
 * reference measured in the same run. The reference is fixed CPU work (building rows, JSON,
 * sorting, a regular expression, SHA-256: what the suite's processes mostly do) in two
 * processes side by side, as the suite keeps both cores busy; its wall time is the median of
 * three rounds. `.ci/run` runs it after `npm test`:
 *
 *   node test/helpers/machine-speed.ts --suite-seconds 455
 *
 * prints the reference and the suite's time as a multiple of it.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';

/** Rounds of work per process (about 4 s on the CI machine on 2026-11-27). */
export const REFERENCE_ROUNDS = 7_000;

/** The fixed work; its digest is the same on every machine (a check that it ran whole). */
export function referenceWork(rounds: number): string {
  const hash = createHash('sha256');
  for (let r = 0; r < rounds; r++) {
    const rows = Array.from({ length: 200 }, (_, i) => ({
      id: `${r}-${i}`,
      subject: `Subject ${i} of round ${r}`,
      n: (i * 7919 + r) % 1000,
      tags: ['inbox', i % 2 ? 'unread' : 'read'],
    }));
    const text = JSON.stringify(rows);
    const back = JSON.parse(text) as typeof rows;
    back.sort((a, b) => a.n - b.n || a.id.localeCompare(b.id));
    hash.update(text.replace(/Subject (\d+)/g, 'S$1'));
    hash.update(back[0]!.id);
  }
  return hash.digest('hex');
}

/** Seconds for two processes doing `rounds` each side by side. */
async function oneRound(rounds: number): Promise<number> {
  const self = fileURLToPath(import.meta.url);
  const started = performance.now();
  await Promise.all(
    [0, 1].map(
      () =>
        new Promise<void>((resolve, reject) => {
          const child = spawn(process.execPath, [self, '--work', String(rounds)], {
            stdio: 'ignore',
            env: { ...process.env, NODE_V8_COVERAGE: '' },
          });
          child.once('error', reject);
          child.once('exit', (code) =>
            code === 0 ? resolve() : reject(new Error(`the reference work exited with ${code}`)),
          );
        }),
    ),
  );
  return (performance.now() - started) / 1000;
}

/** The median of three rounds, in seconds. */
export async function measureReference(rounds = REFERENCE_ROUNDS): Promise<number> {
  const times: number[] = [];
  for (let i = 0; i < 3; i++) times.push(await oneRound(rounds));
  return times.sort((a, b) => a - b)[1]!;
}

/** The line `.ci/run` prints. */
export function describeSuite(suiteSeconds: number, referenceSeconds: number, goalSeconds = 480): string {
  const ratio = (s: number) => Math.round(s / referenceSeconds);
  return (
    `ci: npm test took ${suiteSeconds} s = ${ratio(suiteSeconds)}× the machine reference (${referenceSeconds.toFixed(2)} s: ` +
    `fixed CPU work in two processes side by side, median of 3); the ${goalSeconds / 60}-minute goal is ${ratio(goalSeconds)}× on this machine today`
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  const work = arg('--work');
  if (work) referenceWork(Number(work));
  else console.log(describeSuite(Number(arg('--suite-seconds')), await measureReference()));
}
