/**
 * Delivery and leases of the Pub/Sub stand-in: handing available messages to pulls and streams
 * under an ack deadline, expiring leases (redelivery), acks, nacks and deadline changes.
 */
import * as grpc from '@grpc/grpc-js';
import {
  MAX_ACK_DEADLINE_S,
  MAX_STREAM_BATCH,
  now,
  RpcError,
  type Broker,
  type Entry,
  type Lease,
  type ReceivedMessage,
  type StreamState,
  type SubState,
} from './broker.model.ts';

export function isLiveLease(entry: Entry | undefined, ackId: string): entry is Entry & { lease: Lease } {
  return !!entry && !!entry.lease && entry.lease.ackId === ackId;
}

export function releaseLease(sub: SubState, entry: Entry) {
  const lease = entry.lease;
  if (!lease) return;
  sub.ackIds.delete(lease.ackId);
  lease.stream?.outstanding.delete(lease.ackId);
  entry.lease = undefined;
}

/** Expired leases become deliverable again; their ack ids go stale. */
export function sweep(sub: SubState) {
  const t = now();
  for (const entry of sub.entries) {
    if (entry.lease && entry.lease.expiresAt <= t) releaseLease(sub, entry);
  }
}

export function schedule(b: Broker, sub: SubState) {
  if (b.closed || sub.deleted) return;
  let min = Infinity;
  for (const entry of sub.entries) {
    if (entry.lease && entry.lease.expiresAt < min) min = entry.lease.expiresAt;
  }
  if (min === Infinity) {
    if (sub.timer) clearTimeout(sub.timer);
    sub.timer = undefined;
    sub.timerAt = undefined;
    return;
  }
  if (sub.timer && sub.timerAt === min) return;
  if (sub.timer) clearTimeout(sub.timer);
  sub.timerAt = min;
  sub.timer = setTimeout(
    () => {
      sub.timer = undefined;
      sub.timerAt = undefined;
      dispatch(b, sub);
    },
    Math.max(0, min - now()) + 1,
  );
  sub.timer.unref();
}

export function deliver(
  b: Broker,
  sub: SubState,
  max: number,
  deadlineS: number,
  stream?: StreamState,
): ReceivedMessage[] {
  const out: ReceivedMessage[] = [];
  if (max <= 0) return out;
  const t = now();
  for (const entry of sub.entries) {
    if (out.length >= max) break;
    if (entry.lease) continue;
    const ackId = `${b.ackPrefix}-${++b.ackCounter}`;
    entry.attempts += 1;
    entry.lease = { ackId, expiresAt: t + deadlineS * 1000, stream };
    sub.ackIds.set(ackId, entry);
    stream?.outstanding.add(ackId);
    sub.deliveries += 1;
    out.push({ ackId, message: entry.message, deliveryAttempt: entry.attempts });
  }
  return out;
}

export function hasAvailable(sub: SubState): boolean {
  for (const entry of sub.entries) if (!entry.lease) return true;
  return false;
}

export function streamWritable(b: Broker, st: StreamState): boolean {
  return !st.closed && !st.call.cancelled && st.call.writable && !b.closed;
}

/** Hands available messages to waiting pulls and open streams, re-arms the expiry timer. */
export function dispatch(b: Broker, sub: SubState) {
  if (b.closed || sub.deleted) return;
  sweep(sub);
  for (const w of [...sub.waiters]) {
    if (!hasAvailable(sub)) break;
    sub.waiters.delete(w);
    w.done(deliver(b, sub, w.maxMessages, sub.resource.ackDeadlineSeconds));
  }
  // Rotate so several streams on one subscription share the load.
  const streams = [...sub.streams];
  for (const st of streams) {
    if (!hasAvailable(sub)) break;
    if (!streamWritable(b, st)) continue;
    const capacity = st.maxOutstanding > 0 ? st.maxOutstanding - st.outstanding.size : MAX_STREAM_BATCH;
    const msgs = deliver(b, sub, Math.min(capacity, MAX_STREAM_BATCH), st.deadlineS, st);
    if (msgs.length > 0) {
      st.call.write({ receivedMessages: msgs });
      sub.streams.delete(st);
      sub.streams.add(st); // move to the back
    }
  }
  schedule(b, sub);
}

export function acknowledge(sub: SubState, ackIds: string[]) {
  sweep(sub);
  for (const ackId of ackIds) {
    const entry = sub.ackIds.get(ackId);
    if (!isLiveLease(entry, ackId)) continue; // stale / unknown: ignored
    releaseLease(sub, entry);
    sub.entries.delete(entry);
    sub.acked += 1;
  }
}

export function modifyAckDeadline(sub: SubState, ackIds: string[], seconds: number) {
  sweep(sub);
  for (const ackId of ackIds) {
    const entry = sub.ackIds.get(ackId);
    if (!isLiveLease(entry, ackId)) continue;
    if (seconds === 0)
      releaseLease(sub, entry); // nack: deliverable again now
    else entry.lease.expiresAt = now() + seconds * 1000;
  }
}

export function checkDeadline(seconds: number, what: string) {
  if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_ACK_DEADLINE_S) {
    throw new RpcError(grpc.status.INVALID_ARGUMENT, `Invalid ${what}: ${seconds} (must be 0..${MAX_ACK_DEADLINE_S})`);
  }
}
