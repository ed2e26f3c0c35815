/**
 * The Pub/Sub stand-in's public types: the RPC names, start options, per-subscription stats,
 * injected faults and the control API a test drives it with.
 */
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
