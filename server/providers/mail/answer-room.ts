/**
 * The body parser's room for thread answers, by bytes (body-parser.ts): the answers it holds —
 * being read past the inline size, waiting for a worker, being parsed — stay within `maxBytes`.
 * An answer still being read has an unknown size, so it takes room for one at the cap
 * (`capBytes`), and gives back the difference once it has been read; what it still holds goes
 * back once its parse has ended (or it was refused). With nothing held, an answer is always
 * taken. Without room, it waits its turn (first come, first served; the rest of it is not read
 * meanwhile) for at most `waitMs`, then is refused: ordinary answers are read and parsed in
 * milliseconds, so one waits briefly, and only a process full of big answers refuses.
 *
 * Counted by number alone, a few accounts opening big threads together held several full-size
 * answers behind one worker's parse; counted by the bytes read so far, answers taken at the same
 * moment grew together past the budget and were refused half read, and tried again at once
 * (bench item 13's heavy opens; the figures are in bench/results/HISTORY.md).
 */

export interface AnswerRoom {
  /** Takes room for one answer at the cap: at once, else in turn once room frees, else the refusal after `waitMs`. */
  take(): void | Promise<void>;
  /** Gives `bytes` back and lets in those waiting that now fit, in turn. */
  release(bytes: number): void;
  /** Bytes held now. */
  readonly held: number;
}

export function createAnswerRoom(opts: {
  maxBytes: number;
  capBytes: number;
  waitMs: number;
  refused: (held: number) => Error;
}): AnswerRoom {
  let held = 0;
  const waiting: (() => void)[] = [];
  const fits = () => held === 0 || held + opts.capBytes <= opts.maxBytes;
  return {
    take() {
      if (!waiting.length && fits()) {
        held += opts.capBytes;
        return;
      }
      return new Promise<void>((resolve, reject) => {
        const go = () => {
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiting.splice(waiting.indexOf(go), 1);
          reject(opts.refused(held));
        }, opts.waitMs);
        waiting.push(go);
      });
    },
    release(bytes) {
      held -= bytes;
      while (waiting.length && fits()) {
        held += opts.capBytes;
        waiting.shift()!();
      }
    },
    get held() {
      return held;
    },
  };
}
