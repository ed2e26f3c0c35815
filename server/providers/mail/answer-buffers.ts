/**
 * The shared memory big thread answers are read into (thread-answer.ts `readAnswer`), kept and
 * used again. A SharedArrayBuffer is counted by neither `arrayBuffers` nor `external`, so its
 * megabytes do not hasten a garbage collection: one let go after its parse stays in RSS until both
 * the event loop's heap and the body worker's collect their handles to it, which under a run of
 * big opens is many answers later. Used again, the answers' memory is what the room holds at
 * once (answer-room.ts), never more; buffers unused for `idleMs` are let go, so an idle process
 * does not keep them.
 */

export interface AnswerBuffers {
  /** A buffer that can grow to `maxBytes`: a kept one, else a new one. */
  take(): SharedArrayBuffer;
  /** The buffer back for the next answer: nothing reads or writes it any more. */
  give(buffer: SharedArrayBuffer): void;
  /** Buffers kept for the next answers now (for tests and measurements). */
  readonly kept: number;
}

export function createAnswerBuffers(opts: { maxBytes: number; idleMs: number }): AnswerBuffers {
  let kept: SharedArrayBuffer[] = [];
  let timer: NodeJS.Timeout | undefined;
  return {
    take() {
      return kept.pop() ?? new SharedArrayBuffer(0, { maxByteLength: opts.maxBytes });
    },
    give(buffer) {
      kept.push(buffer);
      clearTimeout(timer);
      timer = setTimeout(() => (kept = []), opts.idleMs);
      timer.unref();
    },
    get kept() {
      return kept.length;
    },
  };
}
