/**
 * The four stand-in providers (identity, Gmail, OpenAI, Pub/Sub) started together in this
 * process, wired as the real ones are (Gmail's watch notifications published to the Pub/Sub
 * topic), with the service environment that points at them.
 */
import { startGmailStandIn, type GmailStandIn } from '../stand-ins/gmail.stand-in.ts';
import { startIdentityStandIn, type IdentityStandIn, type StandInUser } from '../stand-ins/identity.stand-in.ts';
import { startOpenAIStandIn, type OpenAIStandIn } from '../stand-ins/openai.stand-in.ts';
import { startPubSubStandIn, type PubSubStandIn } from '../stand-ins/pubsub.stand-in.ts';
import { identityEnv } from '../stand-ins/stand-in-env.ts';

export const TOPIC = 'projects/test-project/topics/mail';
export const SUBSCRIPTION = 'mail-sync';

export interface StandIns {
  identity: IdentityStandIn;
  gmail: GmailStandIn;
  openai: OpenAIStandIn;
  pubsub: PubSubStandIn;
  /** Service environment pointing at the stand-ins. */
  env: Record<string, string>;
  close(): Promise<void>;
}

export async function startStandIns(
  opts: { users?: StandInUser[]; ackDeadlineSeconds?: number; openaiLatencyMs?: number } = {},
): Promise<StandIns> {
  const identity = await startIdentityStandIn({ users: opts.users });
  const gmail = await startGmailStandIn({ authorize: (token) => identity.accessTokenOwner(token)?.email ?? null });
  const openai = await startOpenAIStandIn({ latencyMs: opts.openaiLatencyMs });
  const pubsub = await startPubSubStandIn({ projectId: 'test-project' });
  pubsub.createTopic('mail');
  pubsub.createSubscription('mail', SUBSCRIPTION, { ackDeadlineSeconds: opts.ackDeadlineSeconds ?? 10 });
  // The mail provider publishes its change notifications to the watch topic.
  gmail.onNotification((n) => {
    try {
      pubsub.publish(n.topicName, { emailAddress: n.emailAddress, historyId: String(n.historyId) });
    } catch {
      /* the stand-in may be closing */
    }
  });
  let closed = false;
  return {
    identity,
    gmail,
    openai,
    pubsub,
    env: {
      ...identityEnv(identity),
      GMAIL_API_URL: gmail.url,
      GMAIL_USER_UNITS_PER_MINUTE: '0',
      OPENAI_API_KEY: openai.apiKey,
      OPENAI_BASE_URL: openai.baseUrl,
      PUBSUB_PROJECT_ID: 'test-project',
      PUBSUB_TOPIC: TOPIC,
      PUBSUB_SUBSCRIPTION: SUBSCRIPTION,
      PUBSUB_EMULATOR_HOST: pubsub.host,
    },
    async close() {
      if (closed) return;
      closed = true;
      // Some may have been closed already by a test (a provider refusing connections).
      await Promise.allSettled([identity.close(), gmail.close(), openai.close(), pubsub.close()]);
    },
  };
}

export const user = (n: number | string): StandInUser => ({
  sub: `user-${n}`,
  email: `user${n}@example.com`,
  email_verified: true,
});
