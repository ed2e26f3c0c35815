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
 *
 * This module starts the gRPC server and holds the control API; the model, delivery and leases,
 * operations and RPC handlers are in pubsub/.
 */
import * as grpc from '@grpc/grpc-js';
import { Broker, RpcError, toBuffer } from './pubsub/broker.model.ts';
import { doCreateSubscription, doCreateTopic, doPublish, endStream } from './pubsub/broker.ops.ts';
import { sweep } from './pubsub/lease.dispatch.ts';
import { loadServices } from './pubsub/proto.loader.ts';
import { publisherImpl, subscriberImpl } from './pubsub/pubsub.rpc.ts';
import type { PubSubMethod, PubSubStandIn, PubSubStandInOptions } from './pubsub/pubsub.types.ts';

export type {
  InjectedFault,
  PubSubMethod,
  PubSubStandIn,
  PubSubStandInOptions,
  SubscriptionStats,
} from './pubsub/pubsub.types.ts';

export async function startPubSubStandIn(opts: PubSubStandInOptions = {}): Promise<PubSubStandIn> {
  const projectId = opts.projectId ?? 'test-project';
  const defs = loadServices();
  const allMethods = [...Object.keys(defs.publisher), ...Object.keys(defs.subscriber)] as PubSubMethod[];
  const b = new Broker(allMethods, Math.max(0, opts.pullWaitMs ?? 0));

  const topicName = (n: string) => (n.startsWith('projects/') ? n : `projects/${projectId}/topics/${n}`);
  const subName = (n: string) => (n.startsWith('projects/') ? n : `projects/${projectId}/subscriptions/${n}`);

  const server = new grpc.Server();
  server.addService(defs.publisher, publisherImpl(b));
  server.addService(defs.subscriber, subscriberImpl(b));
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, p) =>
      err ? reject(err) : resolve(p),
    );
  });

  function asError(e: unknown): Error {
    return e instanceof RpcError ? Object.assign(new Error(e.details), { code: e.code }) : (e as Error);
  }

  const standIn: PubSubStandIn = {
    host: `127.0.0.1:${port}`,
    port,
    projectId,
    calls: b.calls,
    createTopic(name) {
      try {
        return doCreateTopic(b, { name: topicName(name) }).name;
      } catch (e) {
        throw asError(e);
      }
    },
    createSubscription(topic, subscription, o = {}) {
      try {
        return doCreateSubscription(b, {
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
        const [id] = doPublish(b, topicName(topic), [{ data: toBuffer(data), attributes: attributes ?? {} }]);
        return id!;
      } catch (e) {
        throw asError(e);
      }
    },
    stats(subscription) {
      const sub = b.subs.get(subName(subscription));
      if (!sub)
        throw Object.assign(new Error(`Subscription does not exist: ${subName(subscription)}`), {
          code: grpc.status.NOT_FOUND,
        });
      sweep(sub);
      let leased = 0;
      for (const e of sub.entries) if (e.lease) leased += 1;
      return { available: sub.entries.size - leased, leased, acked: sub.acked, deliveries: sub.deliveries };
    },
    injectFault({ method, code, times = 1, details }) {
      if (!Number.isInteger(code) || code <= 0 || code > 16)
        throw new Error(`injectFault: not a gRPC error status: ${code}`);
      const q = b.faults.get(method) ?? [];
      q.push({ code, details: details ?? `injected fault: ${method} -> ${code}`, remaining: Math.max(1, times) });
      b.faults.set(method, q);
    },
    clearFaults() {
      b.faults.clear();
    },
    openStreams(subscription) {
      if (subscription === undefined) return b.allStreams.size;
      return b.subs.get(subName(subscription))?.streams.size ?? 0;
    },
    resetCounters() {
      for (const k of Object.keys(b.calls) as PubSubMethod[]) b.calls[k] = 0;
      for (const sub of b.subs.values()) {
        sub.acked = 0;
        sub.deliveries = 0;
      }
    },
    async close() {
      if (b.closed) return;
      b.closed = true;
      for (const sub of b.subs.values()) {
        if (sub.timer) clearTimeout(sub.timer);
        sub.timer = undefined;
        for (const w of sub.waiters) w.done([]);
        sub.waiters.clear();
      }
      for (const st of [...b.allStreams])
        endStream(b, st, new RpcError(grpc.status.UNAVAILABLE, 'Pub/Sub stand-in shutting down'));
      server.forceShutdown();
    },
  };
  return standIn;
}
