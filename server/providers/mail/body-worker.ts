/** The worker side of body-parser.ts: a whole thread answer parsed off the event loop. */
import { normaliseThreadAnswer, type ThreadAnswer, type ThreadAnswerOptions } from './thread-answer.ts';

/** `started` is flagged first, so the parser's clock counts this parse's time, not its wait in the queue. */
export function parseThread(task: { answer: Uint8Array; started?: Int32Array } & ThreadAnswerOptions): Promise<ThreadAnswer> {
  if (task.started && Atomics.compareExchange(task.started, 0, 0, 1) === 0) Atomics.notify(task.started, 0);
  return normaliseThreadAnswer(task.answer, task);
}
