/**
 * One open event stream: what has happened since the reader last took events, coalesced so
 * that a slow reader costs bounded memory (at most MAX_EVENT_THREAD_IDS thread ids, two flags
 * and the newest id), however many changes pass meanwhile.
 */
import { MAX_EVENT_THREAD_IDS } from '../../../shared/schemas/events.ts';
import type { LoggedEvent } from './event-log.ts';

/** Events heard while a stream is positioned, at most (then: reset). */
const HOLD_MAX = 1_000;

export interface Pending {
  /** The newest event id covered. */
  id: string;
  threadIds: string[];
  reset: boolean;
  sync: boolean;
}

export class EventStream {
  readonly accountId: string;
  readonly sessionKey: string;
  private id = '';
  private threads = new Set<string>();
  private reset = false;
  private sync = false;
  private ended = false;
  private wake: (() => void) | undefined;
  /** Events heard while the stream is being positioned (see `open`); null once open. */
  private held: LoggedEvent[] | null = [];
  private heldOverflow = false;

  constructor(accountId: string, sessionKey: string) {
    this.accountId = accountId;
    this.sessionKey = sessionKey;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  /** Adds one logged event (as heard or as read back from the log); one at or before the stream's position is dropped. */
  push(e: LoggedEvent): void {
    if (this.ended) return;
    if (this.held) {
      if (this.held.length < HOLD_MAX) this.held.push(e);
      else this.heldOverflow = true;
      return;
    }
    if (this.id && BigInt(e.id) <= BigInt(this.id)) return;
    this.id = e.id;
    if (e.kind === 'sync') this.sync = true;
    else if (e.kind === 'reset') this.resetAll();
    else if (!this.reset) {
      for (const t of e.threadIds ?? []) this.threads.add(t);
      if (this.threads.size > MAX_EVENT_THREAD_IDS) this.resetAll();
    }
    this.notify();
  }

  /** Something may have been missed (the listening connection was lost): re-read everything. */
  resetAll(): void {
    this.reset = true;
    this.sync = true;
    this.threads.clear();
    this.notify();
  }

  end(): void {
    this.ended = true;
    this.notify();
  }

  /**
   * Waits for something to send (or the end); null when the stream is over. A reader that
   * goes away ends the stream (the service does, on its abort): no listener per wait.
   */
  async take(): Promise<Pending | null> {
    while (!this.ended && !this.reset && !this.sync && this.threads.size === 0) {
      await new Promise<void>((resolve) => (this.wake = resolve));
      this.wake = undefined;
    }
    if (this.ended) return null;
    const taken: Pending = { id: this.id, threadIds: [...this.threads], reset: this.reset, sync: this.sync };
    this.threads.clear();
    this.reset = false;
    this.sync = false;
    return taken;
  }

  /**
   * Positions the stream at `id` (what the reader has) after `missed` (read from the log since
   * the reader's id), then adds what was heard meanwhile. The stream listens before the log
   * is read, so nothing committed in between is lost; what both saw is dropped by its id.
   */
  open(id: string, missed: LoggedEvent[]): void {
    const heard = this.held ?? [];
    this.held = null;
    this.id = id;
    for (const e of missed) this.push(e);
    for (const e of heard) this.push(e);
    if (this.heldOverflow) this.resetAll();
  }

  private notify(): void {
    this.wake?.();
  }
}
