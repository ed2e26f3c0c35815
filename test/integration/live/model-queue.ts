/**
 * An in-memory notification queue with Pub/Sub's delivery semantics, driven by a test
 * schedule on a virtual clock: at-least-once delivery, leases that expire (redelivery),
 * acks of expired leases ignored, modifyAckDeadline as "deliverable again after N s",
 * delivery order chosen by the schedule, messages published late (delayed) or never
 * (dropped), and injected call failures. It implements the service's NotificationQueue,
 * so the real intake runs on it unchanged.
 */
import type { NotificationQueue, ReceivedNotification } from '../../../server/providers/pubsub.ts';

/** Virtual milliseconds per tick of the schedule. */
export const TICK_MS = 5_000;
const ACK_DEADLINE_MS = 10_000;

export interface QueuedMessage {
  messageId: string;
  data: Buffer;
  /** Which schedule step published it (for the checks). */
  step: number;
  visibleAt: number;
  deliveries: number;
  lease?: { ackId: string; expiresAt: number };
  acked: boolean;
}

export interface AckEvent {
  message: QueuedMessage;
  /** The delivery (ack id) that was acknowledged. */
  ackId: string;
}

export type QueueMethod = 'pull' | 'ack' | 'retryLater';

export class ModelQueue implements NotificationQueue {
  now = 0;
  readonly messages: QueuedMessage[] = [];
  /** Order chooser for the next pull: a permutation seed and a cap on how many are handed out. */
  nextPull: { order: number; take: number } = { order: 0, take: Infinity };
  private readonly faults: QueueMethod[] = [];
  private seq = 0;
  private readonly byAckId = new Map<string, QueuedMessage>();
  /** Called synchronously for every live ack id acknowledged, before it takes effect. */
  onAck?: (e: AckEvent) => void;
  /** Called for every delivery handed out by pull. */
  onDeliver?: (m: QueuedMessage, ackId: string) => void;

  readonly reportDeliveryAttempt: boolean;

  constructor(reportDeliveryAttempt: boolean) {
    this.reportDeliveryAttempt = reportDeliveryAttempt;
  }

  publish(data: Buffer | string | object, step: number, delayTicks = 0): QueuedMessage {
    const buf = Buffer.isBuffer(data) ? data : Buffer.from(typeof data === 'string' ? data : JSON.stringify(data));
    const m: QueuedMessage = {
      messageId: String(++this.seq),
      data: buf,
      step,
      visibleAt: this.now + delayTicks * TICK_MS,
      deliveries: 0,
      acked: false,
    };
    this.messages.push(m);
    return m;
  }

  advance(ms: number): void {
    this.now += ms;
  }

  inject(method: QueueMethod): void {
    this.faults.push(method);
  }

  clearFaults(): void {
    this.faults.length = 0;
  }

  /** Messages not acknowledged yet (delivered or not). */
  pending(): QueuedMessage[] {
    return this.messages.filter((m) => !m.acked);
  }

  private fail(method: QueueMethod): void {
    const i = this.faults.indexOf(method);
    if (i >= 0) {
      this.faults.splice(i, 1);
      throw Object.assign(new Error(`model queue: injected ${method} failure`), { code: 14 });
    }
  }

  private expireLeases(): void {
    for (const m of this.messages) {
      if (m.lease && m.lease.expiresAt <= this.now) {
        this.byAckId.delete(m.lease.ackId);
        m.lease = undefined;
      }
    }
  }

  private live(ackId: string): QueuedMessage | undefined {
    this.expireLeases();
    const m = this.byAckId.get(ackId);
    return m && m.lease?.ackId === ackId && !m.acked ? m : undefined;
  }

  async pull(maxMessages: number): Promise<ReceivedNotification[]> {
    this.fail('pull');
    this.expireLeases();
    const ready = this.messages.filter((m) => !m.acked && !m.lease && m.visibleAt <= this.now);
    // A deterministic shuffle from the schedule's order seed: deliveries out of publish order.
    let x = (this.nextPull.order >>> 0) + 1;
    const keyed = ready.map((m) => {
      x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + 0x9e3779b9) >>> 0;
      return { m, k: x };
    });
    keyed.sort((a, b) => a.k - b.k);
    const take = Math.min(maxMessages, this.nextPull.take);
    this.nextPull = { order: 0, take: Infinity };
    return keyed.slice(0, take).map(({ m }) => {
      const ackId = `ack-${m.messageId}-${++m.deliveries}`;
      m.lease = { ackId, expiresAt: this.now + ACK_DEADLINE_MS };
      this.byAckId.set(ackId, m);
      this.onDeliver?.(m, ackId);
      return {
        ackId,
        messageId: m.messageId,
        data: m.data,
        deliveryAttempt: this.reportDeliveryAttempt ? m.deliveries : 0,
      };
    });
  }

  async ack(ackIds: string[]): Promise<void> {
    this.fail('ack');
    for (const ackId of ackIds) {
      const m = this.live(ackId);
      if (!m) continue; // stale: ignored, like the real service
      this.onAck?.({ message: m, ackId });
      m.acked = true;
      m.lease = undefined;
      this.byAckId.delete(ackId);
    }
  }

  async retryLater(ackIds: string[], seconds: number): Promise<void> {
    this.fail('retryLater');
    for (const ackId of ackIds) {
      const m = this.live(ackId);
      if (!m) continue;
      if (seconds === 0) {
        m.lease = undefined;
        this.byAckId.delete(ackId);
        m.visibleAt = this.now;
      } else m.lease = { ackId, expiresAt: this.now + Math.round(seconds * 1000) };
    }
  }

  async close(): Promise<void> {}
}
