/** The worker side of body-parser.ts: one message's bodies, or a whole thread answer, parsed off the event loop. */
import type { WirePart } from '../gmail-wire.ts';
import { extractBodies, type MessageBodies } from './message-body.ts';
import { normaliseThreadAnswer, type ThreadAnswer, type ThreadAnswerOptions } from './thread-answer.ts';

export default function parseBodies(payload: WirePart | undefined): Promise<MessageBodies> {
  return extractBodies(payload);
}

export function parseThread(task: { answer: Uint8Array } & ThreadAnswerOptions): Promise<ThreadAnswer> {
  return normaliseThreadAnswer(task.answer, task);
}
