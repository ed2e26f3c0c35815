/**
 * Where a message's bodies are parsed. Sanitising HTML costs about 0.4 ms per KB of dense
 * markup and more for deep nesting (a 250 KB `<div>` ladder: 0.4 s), so a message whose text
 * leaves are small is parsed on the event loop and a larger one on a worker thread (a
 * piscina pool, started on first need, its thread leaving after a minute idle): no request
 * or job holds the event loop long for one message, whatever its size or shape. A parse
 * that fails or outlasts `timeoutMs` gives what can be shown without it: the plain text
 * leaves (HTML dropped) and the attachment list.
 */
import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import type { WirePart } from '../gmail-wire.ts';
import { extractBodies, type MessageBodies } from './message-body.ts';

export interface BodyParser {
  parse(payload: WirePart | undefined): Promise<MessageBodies>;
  /** Parses run on a worker thread so far (for tests and measurements). */
  readonly offloaded: number;
  close(): Promise<void>;
}

export interface BodyParserOptions {
  /** Text leaves (base64url characters, summed) up to this size are parsed inline. */
  inlineChars?: number;
  timeoutMs?: number;
}

function textLeafChars(part: WirePart | undefined, depth = 0): number {
  if (!part || depth > 20) return 0;
  const own = /^text\/(plain|html)$/i.test(part.mimeType ?? '') ? (part.body?.data?.length ?? 0) : 0;
  return own + (part.parts ?? []).reduce((sum, child) => sum + textLeafChars(child, depth + 1), 0);
}

function withoutHtml(part: WirePart): WirePart {
  return { ...part, body: /^text\/html$/i.test(part.mimeType ?? '') ? {} : part.body, parts: part.parts?.map(withoutHtml) };
}

export function createBodyParser(opts: BodyParserOptions = {}): BodyParser {
  const inlineChars = opts.inlineChars ?? 16 * 1024;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  let pool: Piscina<WirePart | undefined, MessageBodies> | undefined;
  let offloaded = 0;
  const workers = () =>
    (pool ??= new Piscina({
      filename: new URL('./body-worker.ts', import.meta.url).href,
      minThreads: 0,
      maxThreads: Math.max(1, availableParallelism() - 1),
      idleTimeout: 60_000,
    }));
  return {
    get offloaded() {
      return offloaded;
    },
    async parse(payload) {
      if (textLeafChars(payload) <= inlineChars) return extractBodies(payload);
      offloaded++;
      try {
        return await workers().run(payload, { signal: AbortSignal.timeout(timeoutMs) });
      } catch {
        return extractBodies(payload && withoutHtml(payload));
      }
    },
    async close() {
      await pool?.close({ force: true });
      pool = undefined;
    },
  };
}
