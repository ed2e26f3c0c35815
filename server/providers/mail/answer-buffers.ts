/**
 * The shared memory big thread answers are read into (thread-answer.ts `readAnswer`), kept and
 * used again. A SharedArrayBuffer is counted by neither `arrayBuffers` nor `external`, so its
 * megabytes do not hasten a garbage collection: one let go after its parse stays in RSS until both
 * the event loop's heap and the body worker's collect their handles to it, which under a run of
 * big opens is many answers later. Used again, the answers' memory is what the room holds at
 * once (answer-room.ts), never more; buffers unused for `idleMs` are let go, so an idle process
 * does not keep them.
 *
 * What a big answer's parse leaves behind is garbage V8 is slow to see: the buffers let go, and the
 * megabytes of bodies stored meanwhile (packed-bodies.ts, each copied once more into its statement
 * by pg), whose small handles outlive a young-generation collection and wait for a major one. So
 * when a big parse has ended (at most once per `collectGapMs`) and when the kept buffers are let go,
 * a major collection is asked for, run concurrently (V8's incremental marking), where the process
 * allows it (npm start's `--expose-gc`; without it, nothing is asked).
 */

export interface AnswerBuffers {
  /** A buffer that can grow to `maxBytes`: a kept one, else a new one. */
  take(): SharedArrayBuffer;
  /** The buffer back for the next answer: nothing reads or writes it any more. */
  give(buffer: SharedArrayBuffer): void;
  /** A big answer's parse has ended: its garbage is collected soon. */
  parsed(): void;
  /** Buffers kept for the next answers now (for tests and measurements). */
  readonly kept: number;
}

/** A major collection run concurrently, where `--expose-gc` defines `gc`. */
const collectConcurrently = () => globalThis.gc?.({ type: 'major', execution: 'async' });

export function createAnswerBuffers(opts: {
  maxBytes: number;
  idleMs: number;
  /** The least time between two collections asked for after parses (default 1 s). */
  collectGapMs?: number;
  /** Asks for the collection (tests count the calls). */
  collect?: () => void;
  /** Milliseconds now (tests pass a clock they move). */
  now?: () => number;
}): AnswerBuffers {
  const collect = opts.collect ?? collectConcurrently;
  const now = opts.now ?? Date.now;
  const gap = opts.collectGapMs ?? 1_000;
  let kept: SharedArrayBuffer[] = [];
  let timer: NodeJS.Timeout | undefined;
  let collected = -Infinity;
  return {
    take() {
      return kept.pop() ?? new SharedArrayBuffer(0, { maxByteLength: opts.maxBytes });
    },
    give(buffer) {
      kept.push(buffer);
      clearTimeout(timer);
      timer = setTimeout(() => {
        kept = [];
        collect();
      }, opts.idleMs);
      timer.unref();
    },
    parsed() {
      if (now() - collected < gap) return;
      collected = now();
      collect();
    },
    get kept() {
      return kept.length;
    },
  };
}
