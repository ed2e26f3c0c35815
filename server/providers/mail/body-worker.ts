/**
 * The worker side of body-parser.ts: a thread answer parsed off the event loop, each message
 * posted to the parser's port as soon as it is made (then let go here), the count or 'malformed'
 * last, so that neither side ever holds the thread's messages twice. A message's bodies go as the
 * bytes the store takes (packed-bodies.ts), their memory handed over: the event loop never decodes them.
 */
import { setPriority } from 'node:os';
import type { MessagePort } from 'node:worker_threads';
import { transferable } from './packed-bodies.ts';
import { forEachThreadMessage, type PackedMessage, type ThreadAnswerOptions } from './thread-answer.ts';

/** What the port carries: a message and its place (its bodies' bytes transferred, not copied), then the end. */
export type WorkerPost = { message: PackedMessage; index: number } | { end: number | 'malformed' };

/** The nice value this worker thread was given (body-parser.ts `workerNice`). */
let niceness: number | undefined;

/** `started` is flagged first, so the parser's clock counts this parse's time, not its wait in the queue. */
export async function parseThread(
  task: { answer: Uint8Array; started?: Int32Array; port: MessagePort; nice?: number } & ThreadAnswerOptions,
): Promise<void> {
  if (task.nice !== undefined && niceness !== task.nice) {
    niceness = task.nice;
    try {
      setPriority(task.nice); // this thread's alone: Linux keeps a nice value per thread, and no pid means the caller's
    } catch {
      /* refused: it runs at the process's priority */
    }
  }
  if (task.started && Atomics.compareExchange(task.started, 0, 0, 1) === 0) Atomics.notify(task.started, 0);
  try {
    const end = await forEachThreadMessage(task.answer, task, (message, index) =>
      task.port.postMessage({ message, index } satisfies WorkerPost, transferable(message.bodies)),
    );
    task.port.postMessage({ end } satisfies WorkerPost);
  } finally {
    task.port.close();
  }
}
