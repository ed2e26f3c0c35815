/**
 * One timer for the comment heartbeat of every open event stream, not one per stream. The
 * streams are spread over the turns of a wheel (one turn a second at the default 25 s), so a
 * tick writes to the streams of one turn, not to thousands at once; each stream is written
 * to once per `everyMs`, the first time about `everyMs` after it was added.
 */
export interface Heartbeat<T> {
  add(target: T): void;
  delete(target: T): void;
}

export function createHeartbeat<T extends { write(chunk: string): unknown }>(
  everyMs: number,
  beat: string,
): Heartbeat<T> {
  const turns = Array.from({ length: Math.max(1, Math.min(25, Math.round(everyMs / 1_000))) }, () => new Set<T>());
  let turn = 0;
  let size = 0;
  let timer: NodeJS.Timeout | undefined;

  function tick() {
    turn = (turn + 1) % turns.length;
    for (const target of turns[turn]!) target.write(beat);
  }

  return {
    add(target) {
      // The turn just beaten comes round again last: a full interval from now.
      turns[turn]!.add(target);
      size += 1;
      if (!timer) {
        timer = setInterval(tick, everyMs / turns.length);
        timer.unref();
      }
    },
    delete(target) {
      if (!turns.some((set) => set.delete(target))) return;
      size -= 1;
      if (!size && timer) {
        clearInterval(timer);
        timer = undefined;
      }
    },
  };
}
