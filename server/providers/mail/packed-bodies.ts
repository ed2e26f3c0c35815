/**
 * A message's bodies as the store takes them: the UTF-8 bytes of their JSON, made where they
 * were parsed (on the body worker for a big answer) and handed over as they are (a transferred
 * ArrayBuffer). The event loop passes them to PostgreSQL inside one bound parameter's bytes
 * (mail-store.ts `storeThread`) and never holds them as strings: posted as strings, an opened
 * thread's bodies, and then their statement's JSON, were made and held in the event loop's heap
 * (JSON.stringify of megabytes on the event loop), waiting there for a major collection. What
 * that saves in memory is smaller than it looked: the figures are in bench/results/HISTORY.md.
 */
import type { MessageBodies } from './message-body.ts';

export interface PackedBodies {
  /** UTF-8 of the JSON object `{ bodyText, bodyHtml, attachments }` (MessageBodies). */
  readonly json: Uint8Array;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function packBodies({ bodyText, bodyHtml, attachments }: MessageBodies): PackedBodies {
  return { json: encoder.encode(JSON.stringify({ bodyText, bodyHtml, attachments } satisfies MessageBodies)) };
}

export function unpackBodies(packed: PackedBodies): MessageBodies {
  const { bodyText, bodyHtml, attachments } = JSON.parse(decoder.decode(packed.json)) as MessageBodies;
  return { bodyText, bodyHtml, attachments };
}

/** The memory to transfer with a post: the bytes' own ArrayBuffer, unless they share it (then they are copied). */
export function transferable(packed: PackedBodies): ArrayBuffer[] {
  const { buffer, byteOffset, byteLength } = packed.json;
  return buffer instanceof ArrayBuffer && byteOffset === 0 && buffer.byteLength === byteLength ? [buffer] : [];
}
