/**
 * The Pub/Sub stand-in's operations on topics, subscriptions, messages and streams, shared by the
 * gRPC handlers and the direct helpers of the control API: lookups, create, publish, delete,
 * ending a stream, and taking an injected fault.
 */
import * as grpc from '@grpc/grpc-js';
import {
  DEFAULT_ACK_DEADLINE_S,
  now,
  SUB_RE,
  TOPIC_RE,
  RpcError,
  type Broker,
  type Req,
  type StoredMessage,
  type StreamState,
  type SubState,
} from './broker.model.ts';
import { checkDeadline, dispatch } from './lease.dispatch.ts';

export function getTopic(b: Broker, name: string) {
  const t = b.topics.get(name);
  if (!t) throw new RpcError(grpc.status.NOT_FOUND, `Topic not found: ${name}`);
  return t;
}

export function getSub(b: Broker, name: string): SubState {
  const s = b.subs.get(name);
  if (!s) throw new RpcError(grpc.status.NOT_FOUND, `Subscription does not exist: ${name}`);
  return s;
}

export function takeFault(b: Broker, method: string): RpcError | undefined {
  const q = b.faults.get(method);
  const f = q?.[0];
  if (!q || !f) return undefined;
  f.remaining -= 1;
  if (f.remaining <= 0) q.shift();
  return new RpcError(f.code, f.details);
}

export function doCreateTopic(b: Broker, req: Req) {
  const name = String(req.name ?? '');
  if (!TOPIC_RE.test(name)) throw new RpcError(grpc.status.INVALID_ARGUMENT, `Invalid topic name: ${name}`);
  if (b.topics.has(name)) throw new RpcError(grpc.status.ALREADY_EXISTS, `Topic already exists: ${name}`);
  const topic = { ...req, name, state: 'ACTIVE' };
  b.topics.set(name, topic);
  return topic;
}

export function doCreateSubscription(b: Broker, req: Req) {
  const name = String(req.name ?? '');
  const topic = String(req.topic ?? '');
  if (!SUB_RE.test(name)) throw new RpcError(grpc.status.INVALID_ARGUMENT, `Invalid subscription name: ${name}`);
  if (b.subs.has(name)) throw new RpcError(grpc.status.ALREADY_EXISTS, `Subscription already exists: ${name}`);
  if (!TOPIC_RE.test(topic)) throw new RpcError(grpc.status.INVALID_ARGUMENT, `Invalid topic name: ${topic}`);
  getTopic(b, topic);
  const ack = Number(req.ackDeadlineSeconds ?? 0);
  checkDeadline(ack, 'ackDeadlineSeconds');
  const resource = { ...req, name, topic, ackDeadlineSeconds: ack || DEFAULT_ACK_DEADLINE_S, state: 'ACTIVE' };
  b.subs.set(name, {
    name,
    resource,
    entries: new Set(),
    ackIds: new Map(),
    streams: new Set(),
    waiters: new Set(),
    acked: 0,
    deliveries: 0,
    deleted: false,
  });
  return resource;
}

export function doPublish(b: Broker, topic: string, messages: Req[]): string[] {
  getTopic(b, topic);
  if (messages.length === 0) throw new RpcError(grpc.status.INVALID_ARGUMENT, 'The request contains no messages');
  const stored: StoredMessage[] = messages.map((m) => {
    const data = m.data ? Buffer.from(m.data as Uint8Array) : Buffer.alloc(0);
    const attributes: Record<string, string> = { ...(m.attributes ?? {}) };
    if (data.length === 0 && Object.keys(attributes).length === 0) {
      throw new RpcError(grpc.status.INVALID_ARGUMENT, 'A message must contain data or at least one attribute');
    }
    const t = now();
    return {
      data,
      attributes,
      messageId: String(++b.messageCounter),
      publishTime: { seconds: Math.floor(t / 1000), nanos: (t % 1000) * 1e6 },
      orderingKey: String(m.orderingKey ?? ''),
    };
  });
  // Copy to every subscription attached to the topic at publish time.
  for (const sub of b.subs.values()) {
    if (sub.resource.topic !== topic) continue;
    for (const message of stored) sub.entries.add({ message, attempts: 0 });
    dispatch(b, sub);
  }
  return stored.map((m) => m.messageId);
}

export function doDeleteSubscription(b: Broker, name: string) {
  const sub = getSub(b, name);
  b.subs.delete(name);
  sub.deleted = true;
  if (sub.timer) clearTimeout(sub.timer);
  sub.timer = undefined;
  for (const w of sub.waiters) w.done([]);
  sub.waiters.clear();
  for (const st of [...sub.streams]) {
    endStream(b, st, new RpcError(grpc.status.NOT_FOUND, `Subscription does not exist: ${name}`));
  }
}

export function endStream(b: Broker, st: StreamState, err?: RpcError) {
  if (st.closed) return;
  finishStream(b, st);
  if (st.call.cancelled) return;
  try {
    if (err) st.call.emit('error', err);
    else st.call.end();
  } catch {
    /* call already torn down */
  }
}

export function finishStream(b: Broker, st: StreamState) {
  st.closed = true;
  b.allStreams.delete(st);
  st.sub?.streams.delete(st);
}
