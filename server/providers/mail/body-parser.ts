/**
 * Where a message's bodies are parsed. Sanitising HTML costs time in proportion to its markup
 * and more for deep nesting, and decoding and parsing a provider answer of megabytes (a
 * thread's bodies come base64 encoded in one JSON answer) far longer than a turn of the event
 * loop may take (bench/results/HISTORY.md), so small ones are parsed on the event loop and
 * larger ones on a worker thread (a piscina pool, started on first need, its thread leaving
 * after `idleMs` idle): no request or job holds the event loop long for one message, whatever
 * its size or shape. A parse that fails or outlasts `timeoutMs` is run once more without the
 * HTML of the thread's big messages: their plain text leaves and attachment lists, the small
 * messages whole. The worker posts each message as soon as it is made (body-worker.ts), and `parseThreadInto` hands it on at
 * once: a caller that stores each as it comes (thread-bodies.service.ts) never holds the
 * thread's messages, on either thread.
 *
 * The pool is shared by every user, so it is bounded: at most `maxQueue` parses wait (each
 * holds its answer, up to MAX_ANSWER_BYTES), answers still being read past the inline size
 * included; one more is SERVICE_UNAVAILABLE with a Retry-After at once, before the rest of its
 * answer is read, rather than a wait behind everyone else's. And by bytes: the answers it holds
 * (read past the inline size, waiting, or being parsed) stay within `maxQueueBytes`, an answer
 * still being read counted at the cap (answer-room.ts); one without room waits for it up to
 * `roomWaitMs`, the rest of it unread, then is refused the same way; their shared memory is used
 * again (answer-buffers.ts). A worker's heap is capped
 * (`maxOldGenerationSizeMb`: a parse that needs more ends that worker, not the process), and
 * `timeoutMs` counts from when a worker takes the task up, never the time it waited its turn; a
 * worker runs below the event loop's priority (`workerNice`), so a parse takes what the event
 * loop and PostgreSQL leave of a core, not a core from them.
 * The waiting parses are counted here: piscina's own `maxQueue` does not count tasks that carry
 * an abort signal (they wait in its skip queue, unbounded), and each of ours carries one.
 */
import { availableParallelism } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { AppError } from '../../domain/errors.ts';
import { createAnswerBuffers } from './answer-buffers.ts';
import { createAnswerRoom } from './answer-room.ts';
import type { WorkerPost } from './body-worker.ts';
import {
  collectMessages,
  forEachThreadMessage,
  MAX_ANSWER_BYTES,
  readAnswer,
  UnusableAnswerError,
  type MessageSink,
  type ThreadAnswer,
} from './thread-answer.ts';

export interface BodyParser {
  /**
   * A threads.get answer, read as it arrives (thread-answer.ts) and parsed on the event loop up to
   * the inline size, else on a worker thread; a big message's HTML dropped if that outlasts `timeoutMs`.
   */
  parseThread(body: AsyncIterable<Uint8Array>): Promise<ThreadAnswer>;
  /**
   * The same parse, each message handed to `each` as soon as it is made, in order: the count, or
   * 'malformed' (messages given before it were each whole and well-formed). A place can be given
   * again (forEachThreadMessage; the try without big HTML after a parse outlasted `timeoutMs`):
   * the later one stands.
   */
  parseThreadInto(body: AsyncIterable<Uint8Array>, each: MessageSink): Promise<number | 'malformed'>;
  /** Parses run on a worker thread so far (for tests and measurements). */
  readonly offloaded: number;
  /** Worker threads alive now (for tests and measurements). */
  readonly workers: number;
  /** Bytes of the answers held now, read past the inline size, waiting or being parsed (for tests and measurements). */
  readonly heldBytes: number;
  /** Buffers kept for the next big answers (answer-buffers.ts; for tests and measurements). */
  readonly keptBuffers: number;
  close(): Promise<void>;
}

export interface BodyParserOptions {
  /** Thread answers up to this size (bytes) are parsed inline. */
  inlineBytes?: number;
  /** A worker's time for one parse, from when it starts it (default 10 s). */
  timeoutMs?: number;
  /** A bigger answer stops being read and is refused undecoded (default MAX_ANSWER_BYTES, 32 MiB). */
  maxAnswerBytes?: number;
  /** Worker threads (default: the cores but one, at least one). */
  maxThreads?: number;
  /** Parses waiting for a worker at most (default 8); past it an open is SERVICE_UNAVAILABLE. */
  maxQueue?: number;
  /**
   * Bytes of the answers held at most: read past the inline size (counted at `maxAnswerBytes`
   * until read), waiting for a worker or being parsed (default twice `maxAnswerBytes`: one parsed
   * while the next is read). An answer without room waits its turn for it, then is SERVICE_UNAVAILABLE.
   */
  maxQueueBytes?: number;
  /** How long an answer waits for room in `maxQueueBytes`, its rest unread (default 2 s: BUSY_RETRY_AFTER_SECONDS). */
  roomWaitMs?: number;
  /** A worker's old-generation heap (default 256 MB: a 32 MiB answer's parse needs about 100). */
  maxOldGenerationSizeMb?: number;
  /**
   * A worker's young generation (default 16 MB). Left to V8, it grows to 128 MB under a big
   * answer's parse, each message's garbage collected late: most of what the parse costs in
   * RSS, for no gain in time (bench/results/HISTORY.md).
   */
  maxYoungGenerationSizeMb?: number;
  /**
   * The worker threads' nice value (default WORKER_NICE): a big parse takes a core for seconds,
   * and the event loop, which answers every other user, and PostgreSQL come first for it.
   */
  workerNice?: number;
  /**
   * A worker leaves after this long without a task (default 5 s): it keeps the heap its last
   * parse grew (tens of MiB after a 25 MB answer) for as long as it lives, and big parses are
   * rare (an opened thread's bodies are stored).
   */
  idleMs?: number;
}

/** The body worker threads' nice value: below the event loop's (0), so a parse runs on what the rest leaves of a core. */
export const WORKER_NICE = 10;

/** Seconds a client is told to wait when every worker is busy and the queue full. */
export const BUSY_RETRY_AFTER_SECONDS = 2;

type Task = { answer: Uint8Array; htmlUpTo?: number };

export function createBodyParser(opts: BodyParserOptions = {}): BodyParser {
  const inlineBytes = opts.inlineBytes ?? 16 * 1024;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const maxAnswerBytes = opts.maxAnswerBytes ?? MAX_ANSWER_BYTES;
  const maxQueue = opts.maxQueue ?? 8;
  let pool: Piscina | undefined;
  let offloaded = 0;
  /** Parses handed to the pool that no worker has started yet. */
  let waiting = 0;
  /** Answers being read that are past the inline size: each holds a place in the queue before the rest of it is read. */
  let reserved = 0;
  const busy = (why: string) =>
    new AppError('SERVICE_UNAVAILABLE', { retryAfter: BUSY_RETRY_AFTER_SECONDS, cause: new Error(why) });
  /** The answers past the inline size, by bytes, from there until their parse has ended. */
  const room = createAnswerRoom({
    maxBytes: opts.maxQueueBytes ?? 2 * maxAnswerBytes,
    capBytes: maxAnswerBytes,
    waitMs: opts.roomWaitMs ?? BUSY_RETRY_AFTER_SECONDS * 1000,
    refused: (held) => busy(`${held} bytes of answers held: no room for one more`),
  });
  /** The shared memory the answers past the inline size are read into, used again while the parser is busy. */
  const buffers = createAnswerBuffers({ maxBytes: maxAnswerBytes, idleMs: opts.idleMs ?? 5_000 });
  /** The queue is full (waiting parses and answers being read for one): SERVICE_UNAVAILABLE at once. */
  const refuseIfFull = () => {
    if (waiting + reserved >= maxQueue)
      throw busy(`${waiting} parses waiting for a worker, ${reserved} answers being read for one`);
  };
  const workers = () => pool ?? startPool();
  const startPool = () => {
    // `npm start`'s --max-semi-space-size=16 is a V8 flag of the whole process, and V8 lets it win over a worker's
    // resourceLimits: the worker's young generation was 2 x 16 MiB, not the 16 MB asked for (more RSS while it parses,
    // for nothing: bench/results/HISTORY.md). Set back to 0 ("unset"), it reaches only isolates made from now on: the event loop's heap keeps its size.
    setFlagsFromString('--max-semi-space-size=0');
    pool = new Piscina({
      filename: new URL('./body-worker.ts', import.meta.url).href,
      minThreads: 0,
      maxThreads: opts.maxThreads ?? Math.max(1, availableParallelism() - 1),
      resourceLimits: {
        maxOldGenerationSizeMb: opts.maxOldGenerationSizeMb ?? 256,
        maxYoungGenerationSizeMb: opts.maxYoungGenerationSizeMb ?? 16,
      },
      idleTimeout: opts.idleMs ?? 5_000,
    });
    // A worker that dies with no task of ours on it (out of heap while starting, say) is reported here; unheard, it would end the process.
    pool.on('error', () => {});
    return pool;
  };

  /** One parse on a worker; its clock starts when the worker flags `started` (body-worker.ts). */
  async function run(task: Task, each: MessageSink): Promise<number | 'malformed'> {
    refuseIfFull();
    waiting++;
    const started = new Int32Array(new SharedArrayBuffer(4));
    const abort = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    let settled = false;
    // Resolves when the worker flags the start (1), or when the task settled without one (2).
    void Promise.resolve(Atomics.waitAsync(started, 0, 0).value).then(() => {
      waiting--;
      if (!settled && Atomics.load(started, 0) === 1)
        timer = setTimeout(() => abort.abort(new Error(`a parse over ${timeoutMs} ms`)), timeoutMs);
    });
    // The messages come one by one on a port of their own (body-worker.ts), the end last.
    const { port1, port2 } = new MessageChannel();
    const ended = new Promise<number | 'malformed'>((resolve, reject) => {
      port1.on('message', (post: WorkerPost) => ('end' in post ? resolve(post.end) : each(post.message, post.index)));
      port1.once('close', () => reject(new Error('the body worker closed its port before the end')));
    });
    ended.catch(() => {}); // awaited only once the worker's run succeeded
    try {
      await workers().run(
        { ...task, started, port: port2, nice: opts.workerNice ?? WORKER_NICE },
        { name: 'parseThread', signal: abort.signal, transferList: [port2] },
      );
      return await ended;
    } finally {
      port1.close();
      settled = true;
      clearTimeout(timer);
      // Never started (refused or failed in the queue): release the waiter, arm nothing.
      if (Atomics.compareExchange(started, 0, 0, 2) === 0) Atomics.notify(started, 0);
    }
  }

  return {
    get offloaded() {
      return offloaded;
    },
    get workers() {
      return pool?.threads.length ?? 0;
    },
    get heldBytes() {
      return room.held;
    },
    get keptBuffers() {
      return buffers.kept;
    },
    async parseThread(body) {
      const sink = collectMessages();
      return sink.answer(await this.parseThreadInto(body, sink.each));
    },
    async parseThreadInto(body, each) {
      // A big answer's place is taken once it passes the inline size, before the rest (up to 32 MiB) is read: a full queue
      // refuses it then, and a retry costs the provider's first bytes, not the whole download.
      let holds = false;
      /** The room this answer holds: the cap while it is read, then its size. */
      let bytes = 0;
      /** The buffer it is read into, given back once its parse has ended, unless a worker may still read it. */
      let buffer: SharedArrayBuffer | undefined;
      let parsedOnWorker = false;
      const reserve = async () => {
        refuseIfFull();
        reserved++;
        holds = true;
        await room.take();
        bytes = maxAnswerBytes;
        return (buffer = buffers.take());
      };
      try {
        let answer: Uint8Array;
        try {
          answer = await readAnswer(body, maxAnswerBytes, { bytes: inlineBytes, reserve });
        } finally {
          if (holds) reserved--; // handed to run() below, which counts it as waiting from here (no await between)
        }
        if (bytes) {
          room.release(bytes - answer.byteLength);
          bytes = answer.byteLength;
        }
        if (answer.byteLength <= inlineBytes) return await forEachThreadMessage(answer, {}, each);
        offloaded++;
        parsedOnWorker = true;
        try {
          return await run({ answer }, each);
        } catch (err) {
          if (err instanceof AppError) throw err; // the pool is full: trying again now would only add to it
          buffer = undefined; // a worker ended by the timeout may still be reading it as it stops
          // A message whose text leaves (base64, so on the answer's own scale) exceed the inline size loses its HTML.
          return await run({ answer, htmlUpTo: inlineBytes }, each).catch((again: unknown) =>
            Promise.reject(
              again instanceof AppError
                ? again
                : new UnusableAnswerError(`an answer of ${answer.byteLength} bytes not parsed`, { cause: again }),
            ),
          );
        }
      } finally {
        room.release(bytes); // its parse has ended (or it was refused)
        if (buffer) buffers.give(buffer);
        if (parsedOnWorker) buffers.parsed();
      }
    },
    async close() {
      await pool?.close({ force: true });
      pool = undefined;
    },
  };
}
