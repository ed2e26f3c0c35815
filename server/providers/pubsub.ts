/**
 * The change-notification queue: a pull subscription read with @google-cloud/pubsub's
 * low-level SubscriberClient (unary Pull, bounded batches), so the intake decides when to
 * acknowledge. Every call has a deadline and no library retry: an unreachable queue must
 * fail fast (the client otherwise hangs ~90 s), and the intake does its own backoff.
 */
import { PubSub, v1, type CallOptions } from '@google-cloud/pubsub';
import * as grpc from '@grpc/grpc-js';
import type { Config } from '../infra/config.ts';

export interface ReceivedNotification {
  ackId: string;
  messageId: string;
  data: Buffer;
  deliveryAttempt: number;
  publishTime?: Date;
}

export interface NotificationQueue {
  pull(maxMessages: number): Promise<ReceivedNotification[]>;
  ack(ackIds: string[]): Promise<void>;
  /** Makes the messages deliverable again after `seconds` (0 = now). */
  retryLater(ackIds: string[], seconds: number): Promise<void>;
  close(): Promise<void>;
}

/** Each call's deadline (a pull waits this long for notifications) unless PUBSUB_TIMEOUT_MS sets another. */
const CALL_TIMEOUT_MS = 10_000;
const noRetry = (config: Readonly<Config>) =>
  ({ retry: null, timeout: config.timeoutsMs.queue ?? CALL_TIMEOUT_MS }) as unknown as Record<string, unknown>;

export function subscriptionPath(config: Readonly<Config>): string {
  const sub = config.pubsub.subscription!;
  return sub.startsWith('projects/') ? sub : `projects/${config.pubsub.projectId}/subscriptions/${sub}`;
}

export function pubsubClientOptions(config: Readonly<Config>): ConstructorParameters<typeof v1.SubscriberClient>[0] {
  const host = config.pubsub.emulatorHost;
  const projectId = config.pubsub.projectId ?? subscriptionPath(config).split('/')[1];
  if (!host) return { projectId };
  // The emulator needs no credentials: keep google-auth from probing a metadata server.
  process.env.METADATA_SERVER_DETECTION ??= 'none';
  const [servicePath, port] = host.split(':');
  return { servicePath, port: Number(port), sslCreds: grpc.credentials.createInsecure(), projectId };
}

export function createNotificationQueue(config: Readonly<Config>): NotificationQueue {
  const client = new v1.SubscriberClient(pubsubClientOptions(config));
  const subscription = subscriptionPath(config);
  const callOptions = noRetry(config);
  return {
    async pull(maxMessages) {
      let res;
      try {
        [res] = await client.pull({ subscription, maxMessages, returnImmediately: false }, callOptions);
      } catch (err) {
        // A waiting pull on an idle subscription ends at the call deadline: that is "no messages", not a failure.
        if ((err as { code?: unknown }).code === grpc.status.DEADLINE_EXCEEDED) return [];
        throw err;
      }
      return (res.receivedMessages ?? []).flatMap((m) =>
        m.ackId && m.message
          ? [
              {
                ackId: m.ackId,
                messageId: String(m.message.messageId ?? ''),
                data: Buffer.from((m.message.data as Uint8Array | string | undefined) ?? ''),
                deliveryAttempt: Number(m.deliveryAttempt ?? 0),
                publishTime: m.message.publishTime?.seconds
                  ? new Date(Number(m.message.publishTime.seconds) * 1000)
                  : undefined,
              },
            ]
          : [],
      );
    },
    async ack(ackIds) {
      if (ackIds.length) await client.acknowledge({ subscription, ackIds }, callOptions);
    },
    async retryLater(ackIds, seconds) {
      if (ackIds.length)
        await client.modifyAckDeadline(
          { subscription, ackIds, ackDeadlineSeconds: Math.max(0, Math.min(600, Math.round(seconds))) },
          callOptions,
        );
    },
    close: () => client.close(),
  };
}

/**
 * Emulator convenience for local runs: create the topic and subscription if missing. Every
 * call has a deadline and no retry, like the queue's: an unreachable emulator must not keep
 * a retrying client alive long after start-up (or after the server stopped).
 */
export async function ensureEmulatorSubscription(config: Readonly<Config>): Promise<void> {
  if (!config.pubsub.emulatorHost || !config.pubsub.topic) return;
  const [servicePath, port] = config.pubsub.emulatorHost.split(':');
  const pubsub = new PubSub({
    projectId: config.pubsub.projectId,
    servicePath,
    port: Number(port),
    sslCreds: grpc.credentials.createInsecure(),
  });
  const gaxOpts = noRetry(config) as CallOptions;
  const exists = async (get: () => Promise<unknown>) => {
    try {
      await get();
      return true;
    } catch (err) {
      if ((err as { code?: unknown }).code === grpc.status.NOT_FOUND) return false;
      throw err;
    }
  };
  try {
    const topic = pubsub.topic(config.pubsub.topic);
    if (!(await exists(() => topic.getMetadata(gaxOpts)))) await topic.create(gaxOpts);
    const sub = pubsub.subscription(subscriptionPath(config));
    if (!(await exists(() => sub.getMetadata(gaxOpts))))
      await topic.createSubscription(subscriptionPath(config), { ackDeadlineSeconds: 30, gaxOpts });
  } finally {
    await pubsub.close();
  }
}
