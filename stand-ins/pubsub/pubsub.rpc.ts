/**
 * The unary RPCs of the Pub/Sub stand-in's Publisher and Subscriber services (StreamingPull is in
 * streaming-pull.rpc.ts): call counting, injected faults, and mapping errors to gRPC statuses.
 */
import * as grpc from '@grpc/grpc-js';
import { DELETED_TOPIC, PROJECT_RE, RpcError, type Broker, type PullWaiter, type Req } from './broker.model.ts';
import {
  doCreateSubscription,
  doCreateTopic,
  doDeleteSubscription,
  doPublish,
  getSub,
  getTopic,
  takeFault,
} from './broker.ops.ts';
import { acknowledge, checkDeadline, deliver, dispatch, modifyAckDeadline, schedule, sweep } from './lease.dispatch.ts';
import type { PubSubMethod } from './pubsub.types.ts';
import { streamingPull } from './streaming-pull.rpc.ts';

function unary(
  b: Broker,
  method: PubSubMethod,
  handler: (req: Req, call: grpc.ServerUnaryCall<Req, unknown>) => unknown,
) {
  return (call: grpc.ServerUnaryCall<Req, unknown>, callback: grpc.sendUnaryData<unknown>) => {
    b.calls[method] = (b.calls[method] ?? 0) + 1;
    const fault = takeFault(b, method);
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

export function publisherImpl(b: Broker): grpc.UntypedServiceImplementation {
  return {
    CreateTopic: unary(b, 'CreateTopic', (req) => doCreateTopic(b, req)),
    GetTopic: unary(b, 'GetTopic', (req) => getTopic(b, String(req.topic))),
    DeleteTopic: unary(b, 'DeleteTopic', (req) => {
      const name = String(req.topic);
      getTopic(b, name);
      b.topics.delete(name);
      for (const sub of b.subs.values()) if (sub.resource.topic === name) sub.resource.topic = DELETED_TOPIC;
      return {};
    }),
    Publish: unary(b, 'Publish', (req) => ({ messageIds: doPublish(b, String(req.topic), req.messages ?? []) })),
    ListTopics: unary(b, 'ListTopics', (req) => {
      const project = String(req.project);
      if (!PROJECT_RE.test(project)) throw new RpcError(grpc.status.INVALID_ARGUMENT, `Invalid project: ${project}`);
      return {
        topics: [...b.topics.values()].filter((t) => t.name.startsWith(`${project}/topics/`)),
        nextPageToken: '',
      };
    }),
    ListTopicSubscriptions: unary(b, 'ListTopicSubscriptions', (req) => {
      const name = String(req.topic);
      getTopic(b, name);
      return {
        subscriptions: [...b.subs.values()].filter((s) => s.resource.topic === name).map((s) => s.name),
        nextPageToken: '',
      };
    }),
  };
}

export function subscriberImpl(b: Broker): grpc.UntypedServiceImplementation {
  return {
    CreateSubscription: unary(b, 'CreateSubscription', (req) => doCreateSubscription(b, req)),
    GetSubscription: unary(b, 'GetSubscription', (req) => getSub(b, String(req.subscription)).resource),
    DeleteSubscription: unary(b, 'DeleteSubscription', (req) => {
      doDeleteSubscription(b, String(req.subscription));
      return {};
    }),
    ListSubscriptions: unary(b, 'ListSubscriptions', (req) => {
      const project = String(req.project);
      if (!PROJECT_RE.test(project)) throw new RpcError(grpc.status.INVALID_ARGUMENT, `Invalid project: ${project}`);
      return {
        subscriptions: [...b.subs.values()]
          .filter((s) => s.name.startsWith(`${project}/subscriptions/`))
          .map((s) => s.resource),
        nextPageToken: '',
      };
    }),
    Pull: unary(b, 'Pull', (req, call) => {
      const sub = getSub(b, String(req.subscription));
      const max = Number(req.maxMessages ?? 0);
      if (!(max > 0)) throw new RpcError(grpc.status.INVALID_ARGUMENT, 'max_messages must be > 0');
      sweep(sub);
      const msgs = deliver(b, sub, max, sub.resource.ackDeadlineSeconds);
      schedule(b, sub);
      if (msgs.length > 0 || req.returnImmediately || b.pullWaitMs === 0) return { receivedMessages: msgs };
      return new Promise((resolve) => {
        const waiter: PullWaiter = {
          maxMessages: max,
          done: (received) => {
            clearTimeout(timer);
            sub.waiters.delete(waiter);
            resolve({ receivedMessages: received });
          },
        };
        const timer = setTimeout(() => waiter.done([]), b.pullWaitMs);
        timer.unref();
        sub.waiters.add(waiter);
        call.on('cancelled', () => {
          clearTimeout(timer);
          sub.waiters.delete(waiter);
        });
      });
    }),
    StreamingPull: ((call: Parameters<typeof streamingPull>[1]) =>
      streamingPull(b, call)) as grpc.handleBidiStreamingCall<unknown, unknown>,
    Acknowledge: unary(b, 'Acknowledge', (req) => {
      const sub = getSub(b, String(req.subscription));
      acknowledge(sub, req.ackIds ?? []);
      dispatch(b, sub); // freed stream capacity
      return {};
    }),
    ModifyAckDeadline: unary(b, 'ModifyAckDeadline', (req) => {
      const sub = getSub(b, String(req.subscription));
      const seconds = Number(req.ackDeadlineSeconds ?? 0);
      checkDeadline(seconds, 'ack_deadline_seconds');
      modifyAckDeadline(sub, req.ackIds ?? [], seconds);
      dispatch(b, sub);
      return {};
    }),
  };
}
