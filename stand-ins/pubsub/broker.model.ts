/**
 * The Pub/Sub stand-in's data model: topics, subscriptions with their unacked messages and
 * leases, open StreamingPull streams, pending pulls, queued faults and call counters (the
 * Broker), plus the gRPC error type, name patterns and limits the RPCs check against.
 */
import { randomBytes } from 'node:crypto';
import type * as grpc from '@grpc/grpc-js';
import type { PubSubMethod } from './pubsub.types.ts';

export const DELETED_TOPIC = '_deleted-topic_';
export const DEFAULT_ACK_DEADLINE_S = 10;
export const MAX_ACK_DEADLINE_S = 600;
export const MAX_STREAM_BATCH = 1000;

export class RpcError extends Error {
  readonly code: number;
  readonly details: string;
  constructor(code: number, details: string) {
    super(details);
    this.code = code;
    this.details = details;
  }
}

export interface Timestamp {
  seconds: number;
  nanos: number;
}

export interface StoredMessage {
  data: Buffer;
  attributes: Record<string, string>;
  messageId: string;
  publishTime: Timestamp;
  orderingKey: string;
}

export interface Lease {
  ackId: string;
  expiresAt: number;
  stream?: StreamState;
}

export interface Entry {
  message: StoredMessage;
  attempts: number;
  lease?: Lease;
}

export interface PullWaiter {
  maxMessages: number;
  done: (msgs: ReceivedMessage[]) => void;
}

export interface ReceivedMessage {
  ackId: string;
  message: StoredMessage;
  deliveryAttempt: number;
}

export interface SubState {
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

export interface StreamState {
  call: grpc.ServerDuplexStream<Record<string, unknown>, Record<string, unknown>>;
  sub?: SubState;
  deadlineS: number;
  maxOutstanding: number;
  outstanding: Set<string>;
  closed: boolean;
}

export type Req = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export const TOPIC_RE = /^projects\/[^/]+\/topics\/[^/]+$/;
export const SUB_RE = /^projects\/[^/]+\/subscriptions\/[^/]+$/;
export const PROJECT_RE = /^projects\/[^/]+$/;

export function toBuffer(data: Buffer | string | object): Buffer {
  if (Buffer.isBuffer(data)) return data;
  if (data instanceof Uint8Array) return Buffer.from(data);
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  return Buffer.from(JSON.stringify(data), 'utf8');
}

export function now(): number {
  return Date.now();
}

/** Everything the stand-in holds between calls; the RPCs and the control API share it. */
export class Broker {
  readonly calls: Record<PubSubMethod, number>;
  readonly faults = new Map<string, Array<{ code: number; details: string; remaining: number }>>();
  readonly topics = new Map<string, Record<string, unknown> & { name: string }>();
  readonly subs = new Map<string, SubState>();
  readonly allStreams = new Set<StreamState>();
  readonly ackPrefix = randomBytes(4).toString('hex');
  ackCounter = 0;
  messageCounter = 0;
  closed = false;

  /** How long a Pull with return_immediately=false waits for a message (0: not at all). */
  readonly pullWaitMs: number;

  constructor(methods: PubSubMethod[], pullWaitMs: number) {
    this.pullWaitMs = pullWaitMs;
    this.calls = Object.fromEntries(methods.map((m) => [m, 0])) as Record<PubSubMethod, number>;
  }
}
