/** The worker side of body-parser.ts: one message's bodies, parsed off the event loop. */
import type { WirePart } from '../gmail-wire.ts';
import { extractBodies, type MessageBodies } from './message-body.ts';

export default function parseBodies(payload: WirePart | undefined): Promise<MessageBodies> {
  return extractBodies(payload);
}
