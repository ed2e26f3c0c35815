/**
 * Local Pub/Sub stand-in: a subset of the Pub/Sub emulator, served over
 * plaintext gRPC on 127.0.0.1 with the pubsub.proto shipped by
 * `@google-cloud/pubsub`, so the official client talks to it in emulator mode
 * (`PUBSUB_EMULATOR_HOST=<standIn.host>`).
 *
 * Implemented RPCs
 *   Publisher:  CreateTopic, GetTopic, DeleteTopic, Publish, ListTopics,
 *               ListTopicSubscriptions
 *   Subscriber: CreateSubscription, GetSubscription, DeleteSubscription,
 *               ListSubscriptions, Pull, StreamingPull, Acknowledge,
 *               ModifyAckDeadline
 * Everything else answers UNIMPLEMENTED (grpc-js default handler).
 *
 * Deliberate differences from the real service (for tests):
 *   - ackDeadlineSeconds / stream_ack_deadline_seconds may be 1..600 s (real
 *     minimum is 10 s); 0 / unset means "use the default" (10 s for a
 *     subscription, the subscription's deadline for a stream) instead of an
 *     INVALID_ARGUMENT on streams.
 *   - ReceivedMessage.delivery_attempt is always reported (real service: only
 *     with a dead-letter policy, otherwise 0).
 *   - Pull with return_immediately=false waits at most `pullWaitMs` (default 0,
 *     i.e. an empty pull returns at once) for a message to arrive.
 *   - No retention limit, no ordering keys, no exactly-once, no filters,
 *     no dead-lettering, no push; flow control honours
 *     max_outstanding_messages only (not bytes); pagination is ignored (one
 *     page with everything).
 *   - Acks/modacks for ack ids whose lease already expired are ignored (stale).
 *   - An empty StreamingPull request (the client's keep-alive ping) is answered
 *     with an empty StreamingPullResponse (server heartbeat).
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

// ---------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------

export type PubSubMethod =
  | 'CreateTopic'
  | 'UpdateTopic'
  | 'Publish'
  | 'GetTopic'
  | 'ListTopics'
  | 'ListTopicSubscriptions'
  | 'ListTopicSnapshots'
  | 'DeleteTopic'
  | 'DetachSubscription'
  | 'CreateSubscription'
  | 'GetSubscription'
  | 'UpdateSubscription'
  | 'ListSubscriptions'
  | 'DeleteSubscription'
  | 'ModifyAckDeadline'
  | 'Acknowledge'
  | 'Pull'
  | 'StreamingPull'
  | 'ModifyPushConfig'
  | 'GetSnapshot'
  | 'ListSnapshots'
  | 'CreateSnapshot'
  | 'UpdateSnapshot'
  | 'DeleteSnapshot'
  | 'Seek';

export interface PubSubStandInOptions {
  /** Default project for the direct helpers' short names. Default 'test-project'. */
  projectId?: string;
  /**
   * How long a unary Pull with return_immediately=false waits for a message
   * when none is available. Default 0 (answer an empty pull at once).
   */
  pullWaitMs?: number;
}

export interface SubscriptionStats {
  /** Messages deliverable right now (never delivered, nacked, or lease expired). */
  available: number;
  /** Messages delivered and neither acked nor nacked, lease not yet expired. */
  leased: number;
  /** Successful acknowledgements (counter, cleared by resetCounters()). */
  acked: number;
  /** Deliveries incl. redeliveries, via Pull and StreamingPull (counter, cleared by resetCounters()). */
  deliveries: number;
}

export interface InjectedFault {
  method: PubSubMethod;
  /** gRPC status code, e.g. grpc.status.UNAVAILABLE (14). */
  code: number;
  /** How many subsequent calls of `method` fail. Default 1. */
  times?: number;
  /** Status details text. Default `injected fault: <method> -> <code>`. */
  details?: string;
}

export interface PubSubStandIn {
  /** '127.0.0.1:PORT' — the value for PUBSUB_EMULATOR_HOST. */
  readonly host: string;
  readonly port: number;
  readonly projectId: string;
  /** Creates a topic; short name or 'projects/P/topics/T'. Returns the full name. Throws code 6 if it exists. */
  createTopic(name: string): string;
  /**
   * Creates a subscription on an existing topic (short or full names).
   * Returns the full subscription name. Throws code 5 for an unknown topic,
   * code 6 if the subscription exists.
   */
  createSubscription(topic: string, subscription: string, opts?: { ackDeadlineSeconds?: number }): string;
  /** Publishes directly (objects are JSON-encoded). Returns the messageId. */
  publish(topic: string, data: Buffer | string | object, attributes?: Record<string, string>): string;
  /** Throws code 5 for an unknown subscription. */
  stats(subscription: string): SubscriptionStats;
  /** Queues a fault: the next `times` calls of `method` fail with `code`. */
  injectFault(fault: InjectedFault): void;
  /** Drops queued faults not yet consumed. */
  clearFaults(): void;
  /** Calls received per RPC method (faulted calls included). */
  readonly calls: Record<PubSubMethod, number>;
  /** Open StreamingPull streams (all subscriptions, or one). */
  openStreams(subscription?: string): number;
  /** Zeroes `calls` and the per-subscription acked/deliveries counters. */
  resetCounters(): void;
  /** Force-shutdown: cancels open streams and pending pulls. Idempotent. */
  close(): Promise<void>;
}

// ---------------------------------------------------------------------------
// Internals
// ---------------------------------------------------------------------------

const DELETED_TOPIC = '_deleted-topic_';
const DEFAULT_ACK_DEADLINE_S = 10;
const MAX_ACK_DEADLINE_S = 600;
const MAX_STREAM_BATCH = 1000;

const require = createRequire(import.meta.url);

function protoPaths(): { file: string; includeDirs: string[] } {
  // pubsub.proto imports google/pubsub/v1/schema.proto (ships next to it),
  // google/api/*.proto and google/protobuf/*.proto (ship with google-gax).
  const pubsubMain = require.resolve('@google-cloud/pubsub');
  const pubsubRoot = path.resolve(path.dirname(pubsubMain), '..', '..');
  const pubsubProtos = path.join(pubsubRoot, 'build', 'protos');
  const gaxMain = require.resolve('google-gax', { paths: [pubsubRoot] });
  const gaxProtos = path.resolve(path.dirname(gaxMain), '..', '..', 'build', 'protos');
  return {
    file: path.join(pubsubProtos, 'google', 'pubsub', 'v1', 'pubsub.proto'),
    includeDirs: [pubsubProtos, gaxProtos],
  };
}

interface ServiceDefs {
  publisher: grpc.ServiceDefinition;
  subscriber: grpc.ServiceDefinition;
}

let cachedDefs: ServiceDefs | undefined;
function loadServices(): ServiceDefs {
  if (cachedDefs) return cachedDefs;
  const { file, includeDirs } = protoPaths();
  const def = protoLoader.loadSync(file, {
    keepCase: false,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
    includeDirs,
  });
  const pkg = grpc.loadPackageDefinition(def) as unknown as {
    google: { pubsub: { v1: { Publisher: { service: grpc.ServiceDefinition }; Subscriber: { service: grpc.ServiceDefinition } } } };
  };
  cachedDefs = {
    publisher: pkg.google.pubsub.v1.Publisher.service,
    subscriber: pkg.google.pubsub.v1.Subscriber.service,
  };
  return cachedDefs;
}

class RpcError extends Error {
  readonly code: number;
  readonly details: string;
  constructor(code: number, details: string) {
    super(details);
    this.code = code;
    this.details = details;
  }
}

interface Timestamp {
  seconds: number;
  nanos: number;
}

interface StoredMessage {
  data: Buffer;
  attributes: Record<string, string>;
  messageId: string;
  publishTime: Timestamp;
  orderingKey: string;
}

interface Lease {
  ackId: string;
  expiresAt: number;
  stream?: StreamState;
}

interface Entry {
  message: StoredMessage;
  attempts: number;
  lease?: Lease;
}

interface PullWaiter {
  maxMessages: number;
  done: (msgs: ReceivedMessage[]) => void;
}

interface ReceivedMessage {
  ackId: string;
  message: StoredMessage;
  deliveryAttempt: number;
}

interface SubState {
  name: string;
  resource: Record<string, unknown> & { topic: string; ackDeadlineSeconds: number };
  /** Insertion-ordered (publish order) messages not yet acked. */
  entries: Set<Entry>;
  ackIds: Map<string, Entry>;
  streams: Set<StreamState>;
  waiters: Set<PullWaiter>;
  acked: number;
  deliveries: number;
  timer?: NodeJS.Timeout;
  timerAt?: number;
  deleted: boolean;
}

interface StreamState {
  call: grpc.ServerDuplexStream<Record<string, unknown>, Record<string, unknown>>;
  sub?: SubState;
  deadlineS: number;
  maxOutstanding: number;
  outstanding: Set<string>;
  closed: boolean;
}

type Req = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const TOPIC_RE = /^projects\/[^/]+\/topics\/[^/]+$/;
const SUB_RE = /^projects\/[^/]+\/subscriptions\/[^/]+$/;
const PROJECT_RE = /^projects\/[^/]+$/;

function toBuffer(data: Buffer | string | object): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (data instanceof Uint8Array) return Buffer.from(data);
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  return Buffer.from(JSON.stringify(data), 'utf8');
}

function now(): number {
  return Date.now();
}

export async function startPubSubStandIn(opts: PubSubStandInOptions = {}): Promise<PubSubStandIn> {
  const projectId = opts.projectId ?? 'test-project';
  const pullWaitMs = Math.max(0, opts.pullWaitMs ?? 0);
  const defs = loadServices();

  const allMethods = [...Object.keys(defs.publisher), ...Object.keys(defs.subscriber)] as PubSubMethod[];
  const calls = Object.fromEntries(allMethods.map((m) => [m, 0])) as Record<PubSubMethod, number>;
  const faults = new Map<string, Array<{ code: number; details: string; remaining: number }>>();

  const topics = new Map<string, Record<string, unknown> & { name: string }>();
  const subs = new Map<string, SubState>();
  const allStreams = new Set<StreamState>();

  const ackPrefix = randomBytes(4).toString('hex');
  let ackCounter = 0;
  let messageCounter = 0;
  let closed = false;

  const topicName = (n: string) => (n.startsWith('projects/') ? n : `projects/${projectId}/topics/${n}`);
  const subName = (n: string) => (n.startsWith('projects/') ? n : `projects/${projectId}/subscriptions/${n}`);

  function getTopic(name: string) {
    const t = topics.get(name);
    if (!t) throw new RpcError(grpc.status.NOT_FOUND, `Topic not found: ${name}`);
    return t;
  }
  function getSub(name: string): SubState {
    const s = subs.get(name);
    if (!s) throw new RpcError(grpc.status.NOT_FOUND, `Subscription does not exist: ${name}`);
    return s;
  }

  function takeFault(method: string): RpcError | undefined {
    const q = faults.get(method);
    const f = q?.[0];
    if (!q || !f) return undefined;
    f.remaining -= 1;
    if (f.remaining <= 0) q.shift();
    return new RpcError(f.code, f.details);
  }

  // ---- leases -------------------------------------------------------------

  function isLiveLease(entry: Entry | undefined, ackId: string): entry is Entry & { lease: Lease } {
    return !!entry && !!entry.lease && entry.lease.ackId === ackId;
  }

  function releaseLease(sub: SubState, entry: Entry) {
    const lease = entry.lease;
    if (!lease) return;
    sub.ackIds.delete(lease.ackId);
    lease.stream?.outstanding.delete(lease.ackId);
    entry.lease = undefined;
  }

  /** Expired leases become deliverable again; their ack ids go stale. */
  function sweep(sub: SubState) {
    const t = now();
    for (const entry of sub.entries) {
      if (entry.lease && entry.lease.expiresAt <= t) releaseLease(sub, entry);
    }
  }

  function schedule(sub: SubState) {
    if (closed || sub.deleted) return;
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
    sub.timer = setTimeout(() => {
      sub.timer = undefined;
      sub.timerAt = undefined;
      dispatch(sub);
    }, Math.max(0, min - now()) + 1);
    sub.timer.unref();
  }

  function deliver(sub: SubState, max: number, deadlineS: number, stream?: StreamState): ReceivedMessage[] {
    const out: ReceivedMessage[] = [];
    if (max <= 0) return out;
    const t = now();
    for (const entry of sub.entries) {
      if (out.length >= max) break;
      if (entry.lease) continue;
      const ackId = `${ackPrefix}-${++ackCounter}`;
      entry.attempts += 1;
      entry.lease = { ackId, expiresAt: t + deadlineS * 1000, stream };
      sub.ackIds.set(ackId, entry);
      stream?.outstanding.add(ackId);
      sub.deliveries += 1;
      out.push({ ackId, message: entry.message, deliveryAttempt: entry.attempts });
    }
    return out;
  }

  function hasAvailable(sub: SubState): boolean {
    for (const entry of sub.entries) if (!entry.lease) return true;
    return false;
  }

  function streamWritable(st: StreamState): boolean {
    return !st.closed && !st.call.cancelled && st.call.writable && !closed;
  }

  /** Hands available messages to waiting pulls and open streams, re-arms the expiry timer. */
  function dispatch(sub: SubState) {
    if (closed || sub.deleted) return;
    sweep(sub);
    for (const w of [...sub.waiters]) {
      if (!hasAvailable(sub)) break;
      sub.waiters.delete(w);
      w.done(deliver(sub, w.maxMessages, sub.resource.ackDeadlineSeconds));
    }
    // Rotate so several streams on one subscription share the load.
    const streams = [...sub.streams];
    for (const st of streams) {
      if (!hasAvailable(sub)) break;
      if (!streamWritable(st)) continue;
      const capacity = st.maxOutstanding > 0 ? st.maxOutstanding - st.outstanding.size : MAX_STREAM_BATCH;
      const msgs = deliver(sub, Math.min(capacity, MAX_STREAM_BATCH), st.deadlineS, st);
      if (msgs.length > 0) {
        st.call.write({ receivedMessages: msgs });
        sub.streams.delete(st);
        sub.streams.add(st); // move to the back
      }
    }
    schedule(sub);
  }

  function acknowledge(sub: SubState, ackIds: string[]) {
    sweep(sub);
    for (const ackId of ackIds) {
      const entry = sub.ackIds.get(ackId);
      if (!isLiveLease(entry, ackId)) continue; // stale / unknown: ignored
      releaseLease(sub, entry);
      sub.entries.delete(entry);
      sub.acked += 1;
    }
  }

  function modifyAckDeadline(sub: SubState, ackIds: string[], seconds: number) {
    sweep(sub);
    for (const ackId of ackIds) {
      const entry = sub.ackIds.get(ackId);
      if (!isLiveLease(entry, ackId)) continue;
      if (seconds === 0) releaseLease(sub, entry); // nack: deliverable again now
      else entry.lease.expiresAt = now() + seconds * 1000;
    }
  }

  function checkDeadline(seconds: number, what: string) {
    if (!Number.isInteger(seconds) || seconds < 0 || seconds > MAX_ACK_DEADLINE_S) {
      throw new RpcError(grpc.status.INVALID_ARGUMENT, `Invalid ${what}: ${seconds} (must be 0..${MAX_ACK_DEADLINE_S})`);
    }
  }

  // ---- core operations shared by RPCs and helpers -------------------------

  function doCreateTopic(req: Req) {
    const name = String(req.name ?? '');
    if (!TOPIC_RE.test(name)) throw new RpcError(grpc.status.INVALID_ARGUMENT, `Invalid topic name: ${name}`);
    if (topics.has(name)) throw new RpcError(grpc.status.ALREADY_EXISTS, `Topic already exists: ${name}`);
    const topic = { ...req, name, state: 'ACTIVE' };
    topics.set(name, topic);
    return topic;
  }

  function doCreateSubscription(req: Req) {
    const name = String(req.name ?? '');
    const topic = String(req.topic ?? '');
    if (!SUB_RE.test(name)) throw new RpcError(grpc.status.INVALID_ARGUMENT, `Invalid subscription name: ${name}`);
    if (subs.has(name)) throw new RpcError(grpc.status.ALREADY_EXISTS, `Subscription already exists: ${name}`);
    if (!TOPIC_RE.test(topic)) throw new RpcError(grpc.status.INVALID_ARGUMENT, `Invalid topic name: ${topic}`);
    getTopic(topic);
    const ack = Number(req.ackDeadlineSeconds ?? 0);
    checkDeadline(ack, 'ackDeadlineSeconds');
    const resource = { ...req, name, topic, ackDeadlineSeconds: ack || DEFAULT_ACK_DEADLINE_S, state: 'ACTIVE' };
    subs.set(name, {
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

  function doPublish(topic: string, messages: Req[]): string[] {
    getTopic(topic);
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
        messageId: String(++messageCounter),
        publishTime: { seconds: Math.floor(t / 1000), nanos: (t % 1000) * 1e6 },
        orderingKey: String(m.orderingKey ?? ''),
      };
    });
    // Copy to every subscription attached to the topic at publish time.
    for (const sub of subs.values()) {
      if (sub.resource.topic !== topic) continue;
      for (const message of stored) sub.entries.add({ message, attempts: 0 });
      dispatch(sub);
    }
    return stored.map((m) => m.messageId);
  }

  function doDeleteSubscription(name: string) {
    const sub = getSub(name);
    subs.delete(name);
    sub.deleted = true;
    if (sub.timer) clearTimeout(sub.timer);
    sub.timer = undefined;
    for (const w of sub.waiters) w.done([]);
    sub.waiters.clear();
    for (const st of [...sub.streams]) {
      endStream(st, new RpcError(grpc.status.NOT_FOUND, `Subscription does not exist: ${name}`));
    }
  }

  // ---- RPC plumbing ---------------------------------------------------------

  function unary(method: PubSubMethod, handler: (req: Req, call: grpc.ServerUnaryCall<Req, unknown>) => unknown) {
    return (call: grpc.ServerUnaryCall<Req, unknown>, callback: grpc.sendUnaryData<unknown>) => {
      calls[method] = (calls[method] ?? 0) + 1;
      const fault = takeFault(method);
      if (fault) {
        callback(fault);
        return;
      }
      Promise.resolve()
        .then(() => handler(call.request, call))
        .then(
          (res) => callback(null, res ?? {}),
          (err: unknown) => {
            if (err instanceof RpcError) callback(err);
            else callback(new RpcError(grpc.status.INTERNAL, err instanceof Error ? err.message : String(err)));
          },
        );
    };
  }

  function endStream(st: StreamState, err?: RpcError) {
    if (st.closed) return;
    finishStream(st);
    if (st.call.cancelled) return;
    try {
      if (err) st.call.emit('error', err);
      else st.call.end();
    } catch {
      /* call already torn down */
    }
  }

  function finishStream(st: StreamState) {
    st.closed = true;
    allStreams.delete(st);
    st.sub?.streams.delete(st);
  }

  function onStreamRequest(st: StreamState, req: Req) {
    const ackIds: string[] = req.ackIds ?? [];
    const modIds: string[] = req.modifyDeadlineAckIds ?? [];
    const modSecs: number[] = req.modifyDeadlineSeconds ?? [];
    const streamDeadline = Number(req.streamAckDeadlineSeconds ?? 0);

    if (!st.sub) {
      const name = String(req.subscription ?? '');
      if (!name) throw new RpcError(grpc.status.INVALID_ARGUMENT, 'The first StreamingPull request must name the subscription');
      const sub = getSub(name);
      checkDeadline(streamDeadline, 'stream_ack_deadline_seconds');
      st.sub = sub;
      st.deadlineS = streamDeadline || sub.resource.ackDeadlineSeconds;
      st.maxOutstanding = Math.max(0, Number(req.maxOutstandingMessages ?? 0));
      sub.streams.add(st);
    } else {
      if (req.subscription && req.subscription !== st.sub.name) {
        throw new RpcError(grpc.status.INVALID_ARGUMENT, 'Subscription may only be set on the first request of a stream');
      }
      if (streamDeadline) {
        checkDeadline(streamDeadline, 'stream_ack_deadline_seconds');
        st.deadlineS = streamDeadline;
      }
      if (ackIds.length === 0 && modIds.length === 0 && !streamDeadline) {
        // Client keep-alive ping: answer with a heartbeat.
        if (streamWritable(st)) st.call.write({});
        return;
      }
    }
    const sub = st.sub;
    if (modIds.length !== modSecs.length) {
      throw new RpcError(grpc.status.INVALID_ARGUMENT, 'modify_deadline_seconds and modify_deadline_ack_ids must have the same length');
    }
    modSecs.forEach((s) => checkDeadline(Number(s), 'modify_deadline_seconds'));
    if (ackIds.length) acknowledge(sub, ackIds);
    modIds.forEach((id, i) => modifyAckDeadline(sub, [id], Number(modSecs[i])));
    dispatch(sub);
  }

  function streamingPull(call: grpc.ServerDuplexStream<Req, Record<string, unknown>>) {
    calls.StreamingPull = (calls.StreamingPull ?? 0) + 1;
    const st: StreamState = { call, deadlineS: DEFAULT_ACK_DEADLINE_S, maxOutstanding: 0, outstanding: new Set(), closed: false };
    const fault = takeFault('StreamingPull');
    if (fault) {
      call.on('error', () => undefined);
      call.emit('error', fault);
      return;
    }
    allStreams.add(st);
    call.on('data', (req: Req) => {
      if (st.closed) return;
      try {
        onStreamRequest(st, req);
      } catch (err) {
        endStream(st, err instanceof RpcError ? err : new RpcError(grpc.status.INTERNAL, String(err)));
      }
    });
    call.on('end', () => endStream(st)); // client half-closed: finish with OK
    call.on('cancelled', () => finishStream(st));
    call.on('error', () => finishStream(st));
    call.on('close', () => finishStream(st));
  }

  // ---- service implementations --------------------------------------------

  const publisherImpl: grpc.UntypedServiceImplementation = {
    CreateTopic: unary('CreateTopic', (req) => doCreateTopic(req)),
    GetTopic: unary('GetTopic', (req) => getTopic(String(req.topic))),
    DeleteTopic: unary('DeleteTopic', (req) => {
      const name = String(req.topic);
      getTopic(name);
      topics.delete(name);
      for (const sub of subs.values()) if (sub.resource.topic === name) sub.resource.topic = DELETED_TOPIC;
      return {};
    }),
    Publish: unary('Publish', (req) => ({ messageIds: doPublish(String(req.topic), req.messages ?? []) })),
    ListTopics: unary('ListTopics', (req) => {
      const project = String(req.project);
      if (!PROJECT_RE.test(project)) throw new RpcError(grpc.status.INVALID_ARGUMENT, `Invalid project: ${project}`);
      return { topics: [...topics.values()].filter((t) => t.name.startsWith(`${project}/topics/`)), nextPageToken: '' };
    }),
    ListTopicSubscriptions: unary('ListTopicSubscriptions', (req) => {
      const name = String(req.topic);
      getTopic(name);
      return { subscriptions: [...subs.values()].filter((s) => s.resource.topic === name).map((s) => s.name), nextPageToken: '' };
    }),
  };

  const subscriberImpl: grpc.UntypedServiceImplementation = {
    CreateSubscription: unary('CreateSubscription', (req) => doCreateSubscription(req)),
    GetSubscription: unary('GetSubscription', (req) => getSub(String(req.subscription)).resource),
    DeleteSubscription: unary('DeleteSubscription', (req) => {
      doDeleteSubscription(String(req.subscription));
      return {};
    }),
    ListSubscriptions: unary('ListSubscriptions', (req) => {
      const project = String(req.project);
      if (!PROJECT_RE.test(project)) throw new RpcError(grpc.status.INVALID_ARGUMENT, `Invalid project: ${project}`);
      return {
        subscriptions: [...subs.values()].filter((s) => s.name.startsWith(`${project}/subscriptions/`)).map((s) => s.resource),
        nextPageToken: '',
      };
    }),
    Pull: unary('Pull', (req, call) => {
      const sub = getSub(String(req.subscription));
      const max = Number(req.maxMessages ?? 0);
      if (!(max > 0)) throw new RpcError(grpc.status.INVALID_ARGUMENT, 'max_messages must be > 0');
      sweep(sub);
      const msgs = deliver(sub, max, sub.resource.ackDeadlineSeconds);
      schedule(sub);
      if (msgs.length > 0 || req.returnImmediately || pullWaitMs === 0) return { receivedMessages: msgs };
      return new Promise((resolve) => {
        const waiter: PullWaiter = {
          maxMessages: max,
          done: (received) => {
            clearTimeout(timer);
            sub.waiters.delete(waiter);
            resolve({ receivedMessages: received });
          },
        };
        const timer = setTimeout(() => waiter.done([]), pullWaitMs);
        timer.unref();
        sub.waiters.add(waiter);
        call.on('cancelled', () => {
          clearTimeout(timer);
          sub.waiters.delete(waiter);
        });
      });
    }),
    StreamingPull: streamingPull as grpc.handleBidiStreamingCall<unknown, unknown>,
    Acknowledge: unary('Acknowledge', (req) => {
      const sub = getSub(String(req.subscription));
      acknowledge(sub, req.ackIds ?? []);
      dispatch(sub); // freed stream capacity
      return {};
    }),
    ModifyAckDeadline: unary('ModifyAckDeadline', (req) => {
      const sub = getSub(String(req.subscription));
      const seconds = Number(req.ackDeadlineSeconds ?? 0);
      checkDeadline(seconds, 'ack_deadline_seconds');
      modifyAckDeadline(sub, req.ackIds ?? [], seconds);
      dispatch(sub);
      return {};
    }),
  };

  const server = new grpc.Server();
  server.addService(defs.publisher, publisherImpl);
  server.addService(defs.subscriber, subscriberImpl);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p)));
  });

  function asError(e: unknown): Error {
    return e instanceof RpcError ? Object.assign(new Error(e.details), { code: e.code }) : (e as Error);
  }

  const standIn: PubSubStandIn = {
    host: `127.0.0.1:${port}`,
    port,
    projectId,
    calls,
    createTopic(name) {
      try {
        return doCreateTopic({ name: topicName(name) }).name;
      } catch (e) {
        throw asError(e);
      }
    },
    createSubscription(topic, subscription, o = {}) {
      try {
        return doCreateSubscription({
          name: subName(subscription),
          topic: topicName(topic),
          ackDeadlineSeconds: o.ackDeadlineSeconds ?? 0,
        }).name;
      } catch (e) {
        throw asError(e);
      }
    },
    publish(topic, data, attributes) {
      try {
        const [id] = doPublish(topicName(topic), [{ data: toBuffer(data), attributes: attributes ?? {} }]);
        return id!;
      } catch (e) {
        throw asError(e);
      }
    },
    stats(subscription) {
      const sub = subs.get(subName(subscription));
      if (!sub) throw Object.assign(new Error(`Subscription does not exist: ${subName(subscription)}`), { code: grpc.status.NOT_FOUND });
      sweep(sub);
      let leased = 0;
      for (const e of sub.entries) if (e.lease) leased += 1;
      return { available: sub.entries.size - leased, leased, acked: sub.acked, deliveries: sub.deliveries };
    },
    injectFault({ method, code, times = 1, details }) {
      if (!Number.isInteger(code) || code <= 0 || code > 16) throw new Error(`injectFault: not a gRPC error status: ${code}`);
      const q = faults.get(method) ?? [];
      q.push({ code, details: details ?? `injected fault: ${method} -> ${code}`, remaining: Math.max(1, times) });
      faults.set(method, q);
    },
    clearFaults() {
      faults.clear();
    },
    openStreams(subscription) {
      if (subscription === undefined) return allStreams.size;
      return subs.get(subName(subscription))?.streams.size ?? 0;
    },
    resetCounters() {
      for (const k of Object.keys(calls) as PubSubMethod[]) calls[k] = 0;
      for (const sub of subs.values()) {
        sub.acked = 0;
        sub.deliveries = 0;
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const sub of subs.values()) {
        if (sub.timer) clearTimeout(sub.timer);
        sub.timer = undefined;
        for (const w of sub.waiters) w.done([]);
        sub.waiters.clear();
      }
      for (const st of [...allStreams]) endStream(st, new RpcError(grpc.status.UNAVAILABLE, 'Pub/Sub stand-in shutting down'));
      server.forceShutdown();
    },
  };
  return standIn;
}
