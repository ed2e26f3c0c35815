/**
 * The heavy-thread row's floor for the event-loop delay (heavy-thread.scenario.ts): a process
 * that does nothing but measure its own loop's delay, with the server's instrument
 * (monitorEventLoopDelay at prom-client's 10 ms resolution), beside each window. What it sees
 * is what the machine alone puts under any loop: the scheduler sharing two cores between the
 * server, PostgreSQL, the bench's clients and itself.
 *
 *   node bench/load/loop-canary.ts   prints "ready"; when its stdin ends (the bench closed it,
 *                                    or the bench is gone), one JSON { p99Ms, maxMs }, and exits
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';

const histogram = monitorEventLoopDelay({ resolution: 10 });
histogram.enable();
const ms = (ns: number) => Math.round(ns / 1e5) / 10;
process.stdout.on('error', () => {}); // the bench is gone: nobody to tell
process.stdin.on('data', () => {});
process.stdin.once('end', () => {
  histogram.disable();
  process.stdout.write(JSON.stringify({ p99Ms: ms(histogram.percentile(99)), maxMs: ms(histogram.max) }));
  process.stdin.destroy();
});
process.stdout.write('ready\n');
