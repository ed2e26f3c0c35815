/**
 * A response body sent as the buffers it is made of, without copying them into one: a thread's
 * answer is megabytes of cached bodies (domain/serialised-answer.ts), and a fresh buffer of
 * that size per open was a copy, memory, and garbage collections (V8 collects when external
 * memory grows) on the event loop. The parts stay readable for the answer observer (tests).
 */
import { Readable } from 'node:stream';

export class PartsBody extends Readable {
  readonly parts: readonly Buffer[];
  readonly byteLength: number;
  private next = 0;

  constructor(parts: Buffer[]) {
    super();
    this.parts = parts;
    this.byteLength = parts.reduce((n, p) => n + p.length, 0);
  }

  override _read(): void {
    while (this.next < this.parts.length) if (!this.push(this.parts[this.next++])) return;
    this.push(null);
  }
}
