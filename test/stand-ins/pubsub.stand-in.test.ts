import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import * as grpc from '@grpc/grpc-js';
import { PubSub, v1 } from '@google-cloud/pubsub';
import type { Message, Subscription } from '@google-cloud/pubsub';
import { startPubSubStandIn } from '../../stand-ins/pubsub.stand-in.ts';
import type { PubSubStandIn } from '../../stand-ins/pubsub.stand-in.ts';

/** The environment this file's clients read; put back after each block (test/run.ts runs other files in this process). */
const ENV_KEYS = ['GCE_METADATA_HOST', 'PUBSUB_EMULATOR_HOST'] as const;
const envBefore = Object.fromEntries(ENV_KEYS.map((k) => [k, process.env[k]]));
function useStandInEnv(): void {
  // Never probe a metadata server from tests.
  process.env.GCE_METADATA_HOST = '127.0.0.1:9';
}
function restoreEnv(): void {
  for (const k of ENV_KEYS) {
    if (envBefore[k] === undefined) delete process.env[k];
    else process.env[k] = envBefore[k];
  }
}

const PROJECT = 'stand-in-project';
const noRetry = { retry: null, timeout: 5000 };

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await sleep(20);
  }
}

function subscriberClientFor(host: string): v1.SubscriberClient {
  const [servicePath, port] = host.split(':');
  return new v1.SubscriberClient({
    servicePath,
    port: Number(port),
    sslCreds: grpc.credentials.createInsecure(),
    projectId: PROJECT,
  });
}

async function rejectionOf(p: Promise<unknown>): Promise<Error & { code?: number }> {
  try {
    await p;
  } catch (err) {
    return err as Error & { code?: number };
  }
  assert.fail('expected the call to be rejected');
}

describe('Pub/Sub stand-in with the official client', { timeout: 30_000 }, () => {
  let standIn: PubSubStandIn;
  let pubsub: PubSub;
  let subscriber: v1.SubscriberClient;
  const subPath = (s: string) => `projects/${PROJECT}/subscriptions/${s}`;

  before(async () => {
    useStandInEnv();
    standIn = await startPubSubStandIn({ projectId: PROJECT });
    process.env.PUBSUB_EMULATOR_HOST = standIn.host;
    pubsub = new PubSub({ projectId: PROJECT });
    subscriber = subscriberClientFor(standIn.host);
  });

  after(async () => {
    await subscriber.close();
    await pubsub.close();
    await standIn.close();
    delete process.env.PUBSUB_EMULATOR_HOST;
  });

  it('exposes host and projectId', () => {
    assert.match(standIn.host, /^127\.0\.0\.1:\d+$/);
    assert.notEqual(standIn.host, '127.0.0.1:0');
    assert.equal(standIn.projectId, PROJECT);
  });

  it('creates topics and subscriptions through the client, with ALREADY_EXISTS on duplicates', async () => {
    const [topic] = await pubsub.createTopic('orders', noRetry);
    assert.equal(topic.name, `projects/${PROJECT}/topics/orders`);
    const [exists] = await pubsub.topic('orders').exists();
    assert.equal(exists, true);

    await topic.createSubscription('orders-short', { ackDeadlineSeconds: 2, gaxOpts: noRetry });
    await topic.createSubscription('orders-default', { gaxOpts: noRetry });

    const [short] = await subscriber.getSubscription({ subscription: subPath('orders-short') }, noRetry);
    assert.equal(short.ackDeadlineSeconds, 2);
    assert.equal(short.topic, `projects/${PROJECT}/topics/orders`);
    const [dflt] = await subscriber.getSubscription({ subscription: subPath('orders-default') }, noRetry);
    assert.equal(dflt.ackDeadlineSeconds, 10);

    const [topicNames] = await pubsub.getTopics({ gaxOpts: { autoPaginate: true } });
    assert.deepEqual(
      topicNames.map((t) => t.name),
      [`projects/${PROJECT}/topics/orders`],
    );

    const dupTopic = await rejectionOf(pubsub.createTopic('orders', noRetry));
    assert.equal(dupTopic.code, 6);
    const dupSub = await rejectionOf(topic.createSubscription('orders-short', { gaxOpts: noRetry }));
    assert.equal(dupSub.code, 6);
    const noTopic = await rejectionOf(pubsub.topic('nope').createSubscription('x', { gaxOpts: noRetry }));
    assert.equal(noTopic.code, 5);

    assert.deepEqual(standIn.stats('orders-short'), { available: 0, leased: 0, acked: 0, deliveries: 0 });
  });

  it('publishes via client and direct helper; unary pull honours maxMessages; ack removes', async () => {
    standIn.createTopic('mail');
    standIn.createSubscription('mail', 'mail-sub', { ackDeadlineSeconds: 30 });
    const topic = pubsub.topic('mail');
    const id1 = await topic.publishMessage({ data: Buffer.from('one'), attributes: { kind: 'client' } });
    const id2 = await topic.publishMessage({ json: { n: 2 } });
    const id3 = standIn.publish('mail', { historyId: '42' }, { kind: 'direct' });
    assert.equal(new Set([id1, id2, id3]).size, 3);
    assert.deepEqual(standIn.stats('mail-sub'), { available: 3, leased: 0, acked: 0, deliveries: 0 });

    const [first] = await subscriber.pull({ subscription: subPath('mail-sub'), maxMessages: 2 }, noRetry);
    const got1 = first.receivedMessages ?? [];
    assert.equal(got1.length, 2);
    assert.deepEqual(standIn.stats('mail-sub'), { available: 1, leased: 2, acked: 0, deliveries: 2 });

    const [second] = await subscriber.pull({ subscription: subPath('mail-sub'), maxMessages: 10 }, noRetry);
    const got2 = second.receivedMessages ?? [];
    assert.equal(got2.length, 1);

    const all = [...got1, ...got2];
    const byId = new Map(all.map((r) => [r.message!.messageId, r]));
    assert.deepEqual([...byId.keys()].sort(), [id1, id2, id3].sort());
    assert.equal(Buffer.from(byId.get(id1)!.message!.data as Uint8Array).toString(), 'one');
    assert.equal(byId.get(id1)!.message!.attributes!.kind, 'client');
    assert.deepEqual(JSON.parse(Buffer.from(byId.get(id2)!.message!.data as Uint8Array).toString()), { n: 2 });
    assert.deepEqual(JSON.parse(Buffer.from(byId.get(id3)!.message!.data as Uint8Array).toString()), {
      historyId: '42',
    });
    assert.equal(byId.get(id3)!.message!.attributes!.kind, 'direct');
    for (const r of all) {
      assert.equal(r.deliveryAttempt, 1);
      assert.ok(r.ackId, 'ackId present');
      assert.ok(Number(r.message!.publishTime!.seconds) > 1_600_000_000, 'publishTime set');
    }

    // Nothing left: empty pull returns at once.
    const t0 = Date.now();
    const [empty] = await subscriber.pull({ subscription: subPath('mail-sub'), maxMessages: 10 }, noRetry);
    assert.equal((empty.receivedMessages ?? []).length, 0);
    assert.ok(Date.now() - t0 < 1000);

    await subscriber.acknowledge({ subscription: subPath('mail-sub'), ackIds: all.map((r) => r.ackId!) }, noRetry);
    assert.deepEqual(standIn.stats('mail-sub'), { available: 0, leased: 0, acked: 3, deliveries: 3 });

    // Acking again (stale ids) and unknown ids is ignored, not an error.
    await subscriber.acknowledge({ subscription: subPath('mail-sub'), ackIds: [all[0]!.ackId!, 'bogus'] }, noRetry);
    assert.equal(standIn.stats('mail-sub').acked, 3);
  });

  it('copies a message to every subscription existing at publish time', async () => {
    standIn.createTopic('fan');
    standIn.createSubscription('fan', 'fan-a');
    standIn.createSubscription('fan', 'fan-b');
    standIn.publish('fan', 'x');
    standIn.createSubscription('fan', 'fan-late');
    assert.equal(standIn.stats('fan-a').available, 1);
    assert.equal(standIn.stats('fan-b').available, 1);
    assert.equal(standIn.stats('fan-late').available, 0);
  });

  it('redelivers an unacked message after its ack deadline with a fresh ackId and higher deliveryAttempt', async () => {
    standIn.createTopic('redeliver');
    standIn.createSubscription('redeliver', 'redeliver-sub', { ackDeadlineSeconds: 1 });
    const id = standIn.publish('redeliver', 'hello');
    const pull = async () =>
      (await subscriber.pull({ subscription: subPath('redeliver-sub'), maxMessages: 5 }, noRetry))[0]
        .receivedMessages ?? [];

    const a = await pull();
    assert.equal(a.length, 1);
    assert.equal(a[0]!.deliveryAttempt, 1);
    assert.equal((await pull()).length, 0, 'leased message is not redelivered before the deadline');
    assert.equal(standIn.stats('redeliver-sub').leased, 1);

    await sleep(1200);
    assert.deepEqual(standIn.stats('redeliver-sub'), { available: 1, leased: 0, acked: 0, deliveries: 1 });
    const b = await pull();
    assert.equal(b.length, 1);
    assert.equal(b[0]!.message!.messageId, id);
    assert.equal(b[0]!.deliveryAttempt, 2);
    assert.notEqual(b[0]!.ackId, a[0]!.ackId);

    // The expired ackId is stale: acking it does nothing.
    await subscriber.acknowledge({ subscription: subPath('redeliver-sub'), ackIds: [a[0]!.ackId!] }, noRetry);
    assert.deepEqual(standIn.stats('redeliver-sub'), { available: 0, leased: 1, acked: 0, deliveries: 2 });
    await subscriber.acknowledge({ subscription: subPath('redeliver-sub'), ackIds: [b[0]!.ackId!] }, noRetry);
    assert.deepEqual(standIn.stats('redeliver-sub'), { available: 0, leased: 0, acked: 1, deliveries: 2 });
  });

  it('modifyAckDeadline 0 nacks (immediate redelivery); a positive value extends the lease', async () => {
    standIn.createTopic('nack');
    standIn.createSubscription('nack', 'nack-sub', { ackDeadlineSeconds: 1 });
    standIn.publish('nack', 'n');
    const sub = subPath('nack-sub');
    const pull = async () =>
      (await subscriber.pull({ subscription: sub, maxMessages: 5 }, noRetry))[0].receivedMessages ?? [];

    const a = await pull();
    assert.equal(a.length, 1);
    await subscriber.modifyAckDeadline({ subscription: sub, ackIds: [a[0]!.ackId!], ackDeadlineSeconds: 0 }, noRetry);
    const b = await pull();
    assert.equal(b.length, 1, 'nacked message is deliverable immediately');
    assert.equal(b[0]!.deliveryAttempt, 2);

    // Extend to 5 s: still leased after the original 1 s deadline.
    await subscriber.modifyAckDeadline({ subscription: sub, ackIds: [b[0]!.ackId!], ackDeadlineSeconds: 5 }, noRetry);
    await sleep(1300);
    assert.equal((await pull()).length, 0);
    assert.equal(standIn.stats('nack-sub').leased, 1);

    // Nack with the stale first ackId is ignored.
    await subscriber.modifyAckDeadline({ subscription: sub, ackIds: [a[0]!.ackId!], ackDeadlineSeconds: 0 }, noRetry);
    assert.equal(standIn.stats('nack-sub').leased, 1);
  });

  it('returns NOT_FOUND (5) for unknown subscriptions and topics', async () => {
    const pullErr = await rejectionOf(subscriber.pull({ subscription: subPath('missing'), maxMessages: 1 }, noRetry));
    assert.equal(pullErr.code, 5);
    const ackErr = await rejectionOf(
      subscriber.acknowledge({ subscription: subPath('missing'), ackIds: ['x'] }, noRetry),
    );
    assert.equal(ackErr.code, 5);
    const getErr = await rejectionOf(subscriber.getSubscription({ subscription: subPath('missing') }, noRetry));
    assert.equal(getErr.code, 5);
    const pubErr = await rejectionOf(pubsub.topic('missing-topic').publishMessage({ data: Buffer.from('x') }));
    assert.equal(pubErr.code, 5);
    assert.throws(
      () => standIn.stats('missing'),
      (e: Error & { code?: number }) => e.code === 5,
    );
  });

  it('deletes subscriptions and topics', async () => {
    standIn.createTopic('del');
    standIn.createSubscription('del', 'del-sub');
    await pubsub.subscription('del-sub').delete({ retry: null, timeout: 5000 });
    const err = await rejectionOf(subscriber.getSubscription({ subscription: subPath('del-sub') }, noRetry));
    assert.equal(err.code, 5);
    await pubsub.topic('del').delete({ retry: null, timeout: 5000 });
    const [exists] = await pubsub.topic('del').exists();
    assert.equal(exists, false);
  });

  it('surfaces injected faults, consumes them, and counts calls', async () => {
    standIn.createTopic('faulty');
    standIn.createSubscription('faulty', 'faulty-sub');
    standIn.resetCounters();
    assert.equal(standIn.calls.Pull, 0);

    standIn.injectFault({ method: 'Pull', code: grpc.status.PERMISSION_DENIED });
    const err = await rejectionOf(subscriber.pull({ subscription: subPath('faulty-sub'), maxMessages: 1 }, noRetry));
    assert.equal(err.code, 7);
    assert.equal(standIn.calls.Pull, 1);
    const [ok] = await subscriber.pull({ subscription: subPath('faulty-sub'), maxMessages: 1 }, noRetry);
    assert.equal((ok.receivedMessages ?? []).length, 0);
    assert.equal(standIn.calls.Pull, 2);

    // A retryable code with the client's default retry settings is retried transparently.
    standIn.publish('faulty', 'after-fault');
    standIn.injectFault({ method: 'Pull', code: grpc.status.UNAVAILABLE, times: 2 });
    const [retried] = await subscriber.pull({ subscription: subPath('faulty-sub'), maxMessages: 1 });
    assert.equal((retried.receivedMessages ?? []).length, 1);
    assert.equal(standIn.calls.Pull, 5);

    standIn.injectFault({ method: 'Publish', code: grpc.status.PERMISSION_DENIED });
    const pubErr = await rejectionOf(pubsub.topic('faulty').publishMessage({ data: Buffer.from('x') }));
    assert.equal(pubErr.code, 7);
    assert.equal(standIn.calls.Publish, 1);

    standIn.injectFault({ method: 'Acknowledge', code: grpc.status.INTERNAL });
    const ackErr = await rejectionOf(
      subscriber.acknowledge({ subscription: subPath('faulty-sub'), ackIds: ['x'] }, noRetry),
    );
    assert.equal(ackErr.code, 13);

    standIn.resetCounters();
    assert.equal(standIn.calls.Pull, 0);
    assert.equal(standIn.stats('faulty-sub').deliveries, 0);
  });

  it('works with a v1.SubscriberClient built from PubSub.options', async () => {
    standIn.createTopic('opts');
    standIn.createSubscription('opts', 'opts-sub');
    standIn.publish('opts', 'via-options');
    const client = new v1.SubscriberClient(pubsub.options as ConstructorParameters<typeof v1.SubscriberClient>[0]);
    try {
      const [res] = await client.pull({ subscription: subPath('opts-sub'), maxMessages: 1 }, noRetry);
      assert.equal(Buffer.from(res.receivedMessages![0]!.message!.data as Uint8Array).toString(), 'via-options');
    } finally {
      await client.close();
    }
  });

  describe('StreamingPull via subscription.on("message")', () => {
    // Every subscription opened here is closed in after(), even when a test fails
    // midway, so a failing assertion cannot leave client streams retrying forever.
    const opened: Subscription[] = [];
    const open = (name: string, options?: Parameters<PubSub['subscription']>[1]) => {
      const s = pubsub.subscription(name, options);
      opened.push(s);
      return s;
    };
    after(async () => {
      await Promise.all(opened.map((s) => s.close().catch(() => undefined)));
    });

    it('receives messages as they arrive, redelivers nacks, and records acks', async () => {
      standIn.createTopic('stream');
      standIn.createSubscription('stream', 'stream-sub', { ackDeadlineSeconds: 10 });
      standIn.publish('stream', { seq: 1 }); // published before the stream opens
      const received: Array<{ data: string; attempt: number }> = [];
      const errors: Error[] = [];
      let nackedOnce = false;
      const subscription = open('stream-sub');
      subscription.on('error', (e: Error) => errors.push(e));
      subscription.on('message', (m: Message) => {
        const data = m.data.toString();
        received.push({ data, attempt: m.deliveryAttempt });
        if (data.includes('"seq":2') && !nackedOnce) {
          nackedOnce = true;
          m.nack();
        } else {
          m.ack();
        }
      });
      await waitFor('stream open', () => standIn.openStreams('stream-sub') > 0);
      await pubsub.topic('stream').publishMessage({ json: { seq: 2 } });
      standIn.publish('stream', { seq: 3 });

      await waitFor('3 messages acked', () => standIn.stats('stream-sub').acked === 3);
      assert.deepEqual(errors, []);
      const seqs = received.map((r) => JSON.parse(r.data).seq as number);
      assert.deepEqual([...seqs].sort(), [1, 2, 2, 3]);
      const attemptsOf2 = received.filter((r) => r.data.includes('"seq":2')).map((r) => r.attempt);
      assert.deepEqual(attemptsOf2, [1, 2]);
      assert.deepEqual(standIn.stats('stream-sub'), { available: 0, leased: 0, acked: 3, deliveries: 4 });
      assert.ok(standIn.calls.StreamingPull >= 1);

      await subscription.close();
      await waitFor('streams closed', () => standIn.openStreams('stream-sub') === 0);
    });

    it('an injected non-retryable StreamingPull fault surfaces as a subscription error', async () => {
      standIn.createTopic('stream-fault');
      standIn.createSubscription('stream-fault', 'stream-fault-sub');
      standIn.injectFault({ method: 'StreamingPull', code: grpc.status.PERMISSION_DENIED, times: 5 });
      try {
        const subscription = open('stream-fault-sub', { streamingOptions: { maxStreams: 1 } });
        const errors: Array<Error & { code?: number }> = [];
        subscription.on('error', (e: Error) => errors.push(e));
        subscription.on('message', () => undefined);
        await waitFor('subscription error', () => errors.length > 0);
        assert.equal(errors[0]!.code, 7);
        assert.equal(standIn.openStreams('stream-fault-sub'), 0);
        await subscription.close();
      } finally {
        standIn.clearFaults();
      }
    });

    it('NOT_FOUND for an unknown subscription surfaces as a subscription error', async () => {
      const subscription = open('no-such-sub', { streamingOptions: { maxStreams: 1 } });
      const errors: Array<Error & { code?: number }> = [];
      subscription.on('error', (e: Error) => errors.push(e));
      subscription.on('message', () => undefined);
      await waitFor('subscription error', () => errors.length > 0);
      assert.equal(errors[0]!.code, 5);
      await subscription.close();
    });
  });
});

describe('Pub/Sub stand-in options and shutdown', { timeout: 20_000 }, () => {
  before(useStandInEnv);
  after(restoreEnv);

  it('pullWaitMs: a pull without returnImmediately waits for a message; returnImmediately does not', async () => {
    const standIn = await startPubSubStandIn({ pullWaitMs: 3000 });
    const client = subscriberClientFor(standIn.host);
    try {
      standIn.createTopic('w');
      const sub = standIn.createSubscription('w', 'w-sub');
      assert.equal(sub, 'projects/test-project/subscriptions/w-sub');

      let t0 = Date.now();
      const [immediate] = await client.pull({ subscription: sub, maxMessages: 1, returnImmediately: true }, noRetry);
      assert.equal((immediate.receivedMessages ?? []).length, 0);
      assert.ok(Date.now() - t0 < 1000, 'returnImmediately answers at once');

      t0 = Date.now();
      setTimeout(() => standIn.publish('w', 'arrived'), 300);
      const [waited] = await client.pull({ subscription: sub, maxMessages: 1 }, noRetry);
      const elapsed = Date.now() - t0;
      assert.equal(Buffer.from(waited.receivedMessages![0]!.message!.data as Uint8Array).toString(), 'arrived');
      assert.ok(elapsed >= 250 && elapsed < 2500, `long-poll answered after ${elapsed} ms`);
    } finally {
      await client.close();
      await standIn.close();
    }
  });

  it('close() returns promptly while a StreamingPull stream is open', { timeout: 10_000 }, async () => {
    const standIn = await startPubSubStandIn();
    assert.equal(standIn.projectId, 'test-project');
    standIn.createTopic('t');
    standIn.createSubscription('t', 's');
    process.env.PUBSUB_EMULATOR_HOST = standIn.host;
    const pubsub = new PubSub({ projectId: 'test-project' });
    const subscription = pubsub.subscription('s', { streamingOptions: { maxStreams: 1 } });
    subscription.on('error', () => undefined);
    const got: string[] = [];
    subscription.on('message', (m: Message) => {
      got.push(m.data.toString());
      m.ack();
    });
    try {
      await waitFor('stream open', () => standIn.openStreams() === 1);
      standIn.publish('t', 'before-close');
      await waitFor('message received', () => got.length === 1);

      const t0 = Date.now();
      await standIn.close();
      const elapsed = Date.now() - t0;
      assert.ok(elapsed < 1000, `close() took ${elapsed} ms`);
      assert.equal(standIn.openStreams(), 0);
      await standIn.close(); // idempotent
    } finally {
      await standIn.close(); // no-op if the test got that far
      await subscription.close().catch(() => undefined);
      await pubsub.close().catch(() => undefined);
      delete process.env.PUBSUB_EMULATOR_HOST;
    }
  });
});
