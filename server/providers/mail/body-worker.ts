/** The worker side of body-parser.ts: a whole thread answer parsed off the event loop. */
import { normaliseThreadAnswer, type ThreadAnswer, type ThreadAnswerOptions } from './thread-answer.ts';

export function parseThread(task: { answer: Uint8Array } & ThreadAnswerOptions): Promise<ThreadAnswer> {
  return normaliseThreadAnswer(task.answer, task);
}
