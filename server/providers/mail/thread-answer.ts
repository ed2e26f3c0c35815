/**
 * A threads.get (format=full) answer as the provider sends it — bytes, not yet decoded — made
 * into the thread's normalised messages: UTF-8 decoded, JSON-parsed, shape-checked
 * (gmail-wire.ts), each message's metadata (message-meta.ts) and bodies (message-body.ts).
 * One answer holds every body of the thread, base64 encoded (a third more than the bodies):
 * read whole by gaxios, decoded and parsed on the event loop, it held the loop for hundreds of
 * milliseconds in one step (bench/results/HISTORY.md).
 * So the answer is copied into shared memory chunk by chunk as the network delivers it, and
 * body-parser.ts parses any answer over its inline size on a worker thread, which reads that
 * memory as it is, one message at a time (answer-split.ts).
 */
import { messageSchema, threadSchema, type GmailMessage, type WirePart } from '../gmail-wire.ts';
import { splitThreadAnswer } from './answer-split.ts';
import { extractBodies, type MessageBodies } from './message-body.ts';
import { toMessageMeta, type MessageMeta } from './message-meta.ts';
import { packBodies, unpackBodies, type PackedBodies } from './packed-bodies.ts';

export type ThreadMessage = MessageMeta & MessageBodies;

/** A message as a sink is given it: its bodies as the store takes them (packed-bodies.ts), never as strings. */
export type PackedMessage = MessageMeta & { bodies: PackedBodies };

/** The thread's messages (none when the answer has none), or 'malformed' when the answer is not a thread. */
export type ThreadAnswer = ThreadMessage[] | 'malformed';

export interface ThreadAnswerOptions {
  /**
   * Drop the HTML of every message whose text leaves exceed this many base64 characters
   * (plain text and attachments stay): the second try after a parse outlasted its time.
   */
  htmlUpTo?: number;
}

/**
 * The most an answer may hold before it is decoded. Decoding and parsing one costs about three
 * times its size in memory on the worker, so a thread answer of hundreds of megabytes would
 * take the memory of every other user. 32 MiB holds a hundred messages of ordinary mail (tens of
 * kilobytes each, base64) many times over; a bigger answer is the provider's failure, never parsed.
 */
export const MAX_ANSWER_BYTES = 32 * 1024 * 1024;

/**
 * A thread answer the service will not parse (over the cap) or could not (its parse failed on
 * the worker, twice): opening the thread again would cost as much and fail the same way, so
 * the thread's opens remember it for a while (thread-bodies.service.ts).
 */
export class UnusableAnswerError extends Error {
  constructor(message: string, opts?: { cause?: unknown }) {
    super(message, opts);
    this.name = 'UnusableAnswerError';
  }
}

/** An answer over the cap: read no further, decoded never. */
export class AnswerTooLargeError extends UnusableAnswerError {
  readonly max: number;
  constructor(max: number) {
    super(`an answer of over ${max} bytes`);
    this.max = max;
    this.name = 'AnswerTooLargeError';
  }
}

/**
 * The answer's bytes as they arrive, in a growable SharedArrayBuffer (growing it copies
 * nothing): the event loop copies only the chunks that came in, and a worker reads it without a copy.
 * Past `big.bytes`, `reserve` hands over the buffer to go on in (answer-buffers.ts: one used
 * again), the bytes so far copied into it.
 */
export async function readAnswer(
  body: AsyncIterable<Uint8Array>,
  max = MAX_ANSWER_BYTES,
  big?: { bytes: number; reserve(): SharedArrayBuffer | Promise<SharedArrayBuffer> },
): Promise<Uint8Array> {
  let shared = new SharedArrayBuffer(0, { maxByteLength: max });
  let length = 0;
  const growTo = (end: number) => {
    if (end > shared.byteLength) shared.grow(Math.min(max, Math.max(end, 2 * shared.byteLength, 64 * 1024)));
  };
  for await (const chunk of body) {
    const end = length + chunk.byteLength;
    if (end > max) throw new AnswerTooLargeError(max);
    // Past `big.bytes` the answer will need a worker: `reserve` takes its place (the rest is not read while it waits for
    // one) or throws, which stops the read (the stream is destroyed).
    if (big && length <= big.bytes && end > big.bytes) {
      const read = new Uint8Array(shared, 0, length);
      shared = await big.reserve();
      growTo(length);
      new Uint8Array(shared, 0, length).set(read);
    }
    growTo(end);
    new Uint8Array(shared, length, chunk.byteLength).set(chunk);
    length = end;
  }
  return new Uint8Array(shared, 0, length);
}

/** Text leaves' base64url characters, summed (what decoding and sanitising them costs grows with). */
export function textLeafChars(part: WirePart | undefined, depth = 0): number {
  if (!part || depth > 20) return 0;
  const own = /^text\/(plain|html)$/i.test(part.mimeType ?? '') ? (part.body?.data?.length ?? 0) : 0;
  return own + (part.parts ?? []).reduce((sum, child) => sum + textLeafChars(child, depth + 1), 0);
}

/** The part with its HTML leaves emptied. */
export function withoutHtml(part: WirePart): WirePart {
  return {
    ...part,
    body: /^text\/html$/i.test(part.mimeType ?? '') ? {} : part.body,
    parts: part.parts?.map(withoutHtml),
  };
}

/** A message of the answer made into a thread message (its HTML dropped past `htmlUpTo`). */
async function normaliseMessage(m: GmailMessage, opts: ThreadAnswerOptions): Promise<ThreadMessage> {
  const payload =
    m.payload && opts.htmlUpTo !== undefined && textLeafChars(m.payload) > opts.htmlUpTo
      ? withoutHtml(m.payload)
      : m.payload;
  return { ...toMessageMeta(m), ...(await extractBodies(payload)) };
}

/** JSON text (bytes of the answer, UTF-8, or text already decoded) parsed; undefined when it is not JSON. */
function parseJson(json: Uint8Array | string): unknown {
  try {
    return JSON.parse(typeof json === 'string' ? json : new TextDecoder().decode(json));
  } catch {
    return undefined;
  }
}

/** Each normalised message with its place in the thread; a place can be given again (see forEachThreadMessage). */
export type MessageSink = (message: PackedMessage, index: number) => void;

const packed = ({ bodyText, bodyHtml, attachments, ...meta }: ThreadMessage): PackedMessage => ({
  ...meta,
  bodies: packBodies({ bodyText, bodyHtml, attachments }),
});

/** Message by message (answer-split.ts); undefined when the answer is not split that way and the whole parse decides. */
async function messageByMessage(
  answer: Uint8Array,
  opts: ThreadAnswerOptions,
  each: MessageSink,
): Promise<number | 'malformed' | undefined> {
  const split = splitThreadAnswer(answer);
  if (!split) return undefined;
  const rest = parseJson(split.skeleton) as { messages?: unknown } | undefined;
  if (!Array.isArray(rest?.messages) || rest.messages.length) return undefined;
  if (!threadSchema.safeParse(rest).success) return 'malformed';
  for (const [index, bytes] of split.messages.entries()) {
    const raw = parseJson(bytes);
    if (raw === undefined) return undefined;
    const m = messageSchema.safeParse(raw);
    if (!m.success) return 'malformed';
    each(packed(await normaliseMessage(m.data, opts)), index);
  }
  return split.messages.length;
}

/**
 * The answer's messages handed to `each` one at a time as they are made, so that no more than
 * one is held here (the body worker posts each to the event loop as it comes): the thread's
 * message count, or 'malformed'. When the split finds a piece that does not parse after it
 * gave earlier ones, the whole parse gives every message again from place 0, so a sink keeps
 * messages by their place, the later standing. Each message given passed the message schema on
 * its own, even when the answer turns out 'malformed' after it: the thread is then not answered,
 * but a sink may keep what it was given (thread-bodies.service.ts stores it).
 */
export async function forEachThreadMessage(
  answer: Uint8Array,
  opts: ThreadAnswerOptions,
  each: MessageSink,
): Promise<number | 'malformed'> {
  const split = await messageByMessage(answer, opts, each);
  if (split !== undefined) return split;
  const data = parseJson(answer);
  if (data === undefined) return 'malformed';
  const thread = threadSchema.safeParse(data);
  if (!thread.success) return 'malformed';
  for (const [index, m] of thread.data.messages.entries()) each(packed(await normaliseMessage(m, opts)), index);
  return thread.data.messages.length;
}

/** A collecting sink: the messages by place, their bodies unpacked, once the count is known. */
export function collectMessages(): { each: MessageSink; answer(count: number | 'malformed'): ThreadAnswer } {
  const messages: ThreadMessage[] = [];
  return {
    each: ({ bodies, ...meta }, index) => void (messages[index] = { ...meta, ...unpackBodies(bodies) }),
    answer: (count) => (count === 'malformed' ? count : messages.slice(0, count)),
  };
}

export async function normaliseThreadAnswer(answer: Uint8Array, opts: ThreadAnswerOptions = {}): Promise<ThreadAnswer> {
  const sink = collectMessages();
  return sink.answer(await forEachThreadMessage(answer, opts, sink.each));
}
