/**
 * Reads a Server-Sent Events answer as a test needs it: frames parsed as they arrive, and
 * `next(match)` waiting for the next event that matches (no fixed waits: the test's own
 * timeout bounds it). `ended` resolves when the server closes the stream.
 */
export interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
}

export interface SseReader {
  res: Response;
  frames: SseFrame[];
  /** The next event (a frame with data) at or after the read position that matches; moves the position past it. */
  next(match?: (f: SseFrame & { json: any }) => boolean): Promise<SseFrame & { json: any }>;
  /** Waits for a comment line (heartbeat). */
  comment(): Promise<string>;
  ended: Promise<void>;
  close(): void;
}

export function readSse(res: Response, abort: AbortController, onFrame?: (f: SseFrame) => void): SseReader {
  const frames: SseFrame[] = [];
  let position = 0;
  let waiters: (() => void)[] = [];
  const wakeAll = () => {
    const w = waiters;
    waiters = [];
    for (const fn of w) fn();
  };
  let done = false;
  const ended = (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        let at: number;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          const frame: SseFrame = {};
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) frame.comment = line.slice(1).trim();
            else {
              const i = line.indexOf(':');
              const field = line.slice(0, i);
              const value = line.slice(i + 1).replace(/^ /, '');
              if (field === 'data') frame.data = frame.data === undefined ? value : `${frame.data}\n${value}`;
              else if (field === 'id' || field === 'event') frame[field] = value;
            }
          }
          frames.push(frame);
          onFrame?.(frame);
          wakeAll();
        }
      }
    } catch {
      // aborted by the test
    } finally {
      done = true;
      wakeAll();
    }
  })();

  const wait = () => new Promise<void>((resolve) => waiters.push(resolve));
  return {
    res,
    frames,
    async next(match = () => true) {
      for (;;) {
        while (position < frames.length) {
          const f = frames[position++]!;
          if (f.data === undefined) continue;
          const withJson = { ...f, json: JSON.parse(f.data) };
          if (match(withJson)) return withJson;
        }
        if (done) throw new Error(`stream ended before the expected event; frames: ${JSON.stringify(frames)}`);
        await wait();
      }
    },
    async comment() {
      for (;;) {
        const found = frames.find((f) => f.comment !== undefined);
        if (found) return found.comment!;
        if (done) throw new Error('stream ended before a comment');
        await wait();
      }
    },
    ended,
    close: () => abort.abort(),
  };
}

/** Opens GET `url` as an event stream with the given headers; the answer may be a refusal (check `res.status`). */
export async function openSse(url: string, headers: Record<string, string>): Promise<SseReader> {
  const abort = new AbortController();
  const res = await fetch(url, { headers: { Accept: 'text/event-stream', ...headers }, signal: abort.signal });
  return readSse(res, abort);
}
