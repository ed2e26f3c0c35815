/**
 * The heavy opens' normal user (heavy-opens.scenario.ts) in a process of its own: it lists the
 * inbox and opens one of its threads in turn, one request at a time, as item 13's normal user
 * does. Item 13's runs on the bench's event loop; this one cannot, because there the Gmail
 * stand-in makes each heavy thread's ~26 MB answer in one turn of the loop, dozens of times a
 * window, and what the row timed would be those turns as much as the server.
 *
 *   NORMAL='{"url":…,"cookie":…,"threadIds":[…],"ip":"10.33.0.1"}' node bench/load/normal-client.ts
 *                  prints "ready" once it has begun; when its stdin ends (the bench closed it, or
 *                  the bench is gone), one JSON array of { ms, status } and exits
 */
import { timed, type Send } from '../scenarios/heavy-thread.scenario.ts';

const job = JSON.parse(process.env.NORMAL ?? '{}') as { url: string; cookie: string; threadIds: string[]; ip: string };
const results: { ms: number; status: number }[] = [];
let stopped = false;
process.stdout.on('error', () => {}); // the bench is gone: nobody to tell
process.stdin.on('data', () => {});
process.stdin.once('end', () => (stopped = true));

const send: Send = (path, init) => {
  const headers = new Headers(init.headers);
  headers.set('Cookie', job.cookie);
  return fetch(`${job.url}${path}`, { ...init, headers });
};
const one = async (path: string) => {
  const { ms, status } = await timed(send, path, job.ip, 30_000);
  if (!stopped) results.push({ ms, status });
};

process.stdout.write('ready\n');
for (let i = 0; !stopped; i++) {
  await one('/api/mail/threads?limit=50');
  if (!stopped) await one(`/api/mail/threads/${job.threadIds[i % job.threadIds.length]}`);
}
process.stdout.write(JSON.stringify(results));
process.stdin.destroy();
