/**
 * Where a message's bodies are parsed. Sanitising HTML costs about 0.4 ms per KB of dense
 * markup and more for deep nesting (a 250 KB `<div>` ladder: 0.4 s), and decoding and parsing
 * a provider answer of megabytes (a thread's bodies come base64 encoded in one JSON answer)
 * over 100 ms, so small ones are parsed on the event loop and larger ones on a worker thread
 * (a piscina pool, started on first need, its thread leaving after a minute idle): no request
 * or job holds the event loop long for one message, whatever its size or shape. A parse
 * that fails or outlasts `timeoutMs` is run once more without the HTML of the thread's big
 * messages: their plain text leaves and attachment lists, the small messages whole.
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { MAX_ANSWER_BYTES, normaliseThreadAnswer, readAnswer, UnusableAnswerError, type ThreadAnswer } from './thread-answer.ts';

export interface BodyParser {
  /**
   * A threads.get answer, read as it arrives (thread-answer.ts) and parsed on the event loop up to
   * the inline size, else on a worker thread; a big message's HTML dropped if that outlasts `timeoutMs`.
   */
  parseThread(body: AsyncIterable<Uint8Array>): Promise<ThreadAnswer>;
  /** Parses run on a worker thread so far (for tests and measurements). */
  readonly offloaded: number;
  close(): Promise<void>;
}

export interface BodyParserOptions {
  /** Thread answers up to this size (bytes) are parsed inline. */
  inlineBytes?: number;
  timeoutMs?: number;
  /** A bigger answer stops being read and is refused undecoded (default MAX_ANSWER_BYTES, 32 MiB). */
  maxAnswerBytes?: number;
}

export function createBodyParser(opts: BodyParserOptions = {}): BodyParser {
  const inlineBytes = opts.inlineBytes ?? 16 * 1024;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const maxAnswerBytes = opts.maxAnswerBytes ?? MAX_ANSWER_BYTES;
  let pool: Piscina | undefined;
  let offloaded = 0;
  const workers = () =>
    (pool ??= new Piscina({
      filename: new URL('./body-worker.ts', import.meta.url).href,
      minThreads: 0,
      maxThreads: Math.max(1, availableParallelism() - 1),
      idleTimeout: 60_000,
    }));
  const run = (task: { answer: Uint8Array; htmlUpTo?: number }) => workers().run(task, { name: 'parseThread', signal: AbortSignal.timeout(timeoutMs) }) as Promise<ThreadAnswer>;
  return {
    get offloaded() {
      return offloaded;
    },
    async parseThread(body) {
      const answer = await readAnswer(body, maxAnswerBytes);
      if (answer.byteLength <= inlineBytes) return normaliseThreadAnswer(answer);
      offloaded++;
      try {
        return await run({ answer });
      } catch {
        // A message whose text leaves (base64, so on the answer's own scale) exceed the inline size loses its HTML.
        return run({ answer, htmlUpTo: inlineBytes }).catch((err: unknown) => Promise.reject(new UnusableAnswerError(`an answer of ${answer.byteLength} bytes not parsed`, { cause: err })));
      }
    },
    async close() {
      await pool?.close({ force: true });
      pool = undefined;
    },
  };
}
