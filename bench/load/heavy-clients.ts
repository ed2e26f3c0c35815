/**
 * The heavy-thread row's heavy clients, in a process of their own (heavy-thread.scenario.ts):
 * ten clients receiving ~2 MB answers in a closed loop would otherwise share the bench's event
 * loop with the normal user whose latency the row measures, and what it measured would be the
 * bench client's own delay as much as the server's.
 *
 *   HEAVY='{"url":…,"cookie":…,"path":…,"clients":10,"until":<epoch ms>,"timeoutMs":120000}' node bench/load/heavy-clients.ts
 *
 * Prints one JSON array of { ms, status, bytes } (status 0: failed or timed out) when done.
 */
import { timed, type Send } from '../scenarios/heavy-thread.scenario.ts';

interface Job {
  url: string;
  cookie: string;
  path: string;
  clients: number;
  until: number;
  timeoutMs: number;
}

const job = JSON.parse(process.env.HEAVY ?? '{}') as Job;
const results: { ms: number; status: number; bytes: number }[] = [];

const send: Send = (path, init) => {
  const headers = new Headers(init.headers);
  headers.set('Cookie', job.cookie);
  return fetch(`${job.url}${path}`, { ...init, headers });
};

/** Opens until the window ends, and at least once: on a loaded machine this process can start after a short window ended. */
async function client(n: number): Promise<void> {
  do results.push(await timed(send, job.path, `10.31.1.${n}`, job.timeoutMs));
  while (Date.now() < job.until);
}

await Promise.all(Array.from({ length: job.clients }, (_, n) => client(n)));
process.stdout.write(JSON.stringify(results));
