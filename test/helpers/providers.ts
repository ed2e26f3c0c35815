/**
 * The stand-in providers wired together as the service sees them: the identity provider
 * issues tokens, the mail stand-in accepts exactly those, the AI stand-in its key. Returns
 * the environment that points the service's real client libraries at them.
 */
import { startGmailStandIn, type GmailStandIn } from '../../stand-ins/gmail.stand-in.ts';
import { startIdentityStandIn, type IdentityStandIn } from '../../stand-ins/identity.stand-in.ts';
import { startOpenAIStandIn, type OpenAIStandIn } from '../../stand-ins/openai.stand-in.ts';
import type { Browser } from '../../harness/browser.ts';
import { identityEnv } from '../../stand-ins/stand-in-env.ts';
import type { GmailApi, MailMessage } from '../../server/providers/gmail.ts';
import { collectMessages } from '../../server/providers/mail/thread-answer.ts';

export interface Providers {
  identity: IdentityStandIn;
  gmail: GmailStandIn;
  openai: OpenAIStandIn;
  env: Record<string, string>;
}

export async function startProviders(t: { after(fn: () => unknown): void }): Promise<Providers> {
  const identity = await startIdentityStandIn();
  const gmail = await startGmailStandIn({ authorize: (token) => identity.accessTokenOwner(token)?.email ?? null });
  const openai = await startOpenAIStandIn();
  t.after(() => Promise.all([identity.close(), gmail.close(), openai.close()]));
  return {
    identity,
    gmail,
    openai,
    env: {
      ...identityEnv(identity),
      GMAIL_API_URL: gmail.url,
      OPENAI_API_KEY: openai.apiKey,
      OPENAI_BASE_URL: openai.baseUrl,
      PUBSUB_TOPIC: 'projects/test-project/topics/mail',
    },
  };
}

/**
 * Signs the browser in through the real redirect flow (service -> consent -> callback) and
 * returns the CSRF token of the new session.
 */
export async function signIn(browser: Browser): Promise<{ csrfToken: string; email: string; location: string }> {
  const start = await browser.fetch('/auth/provider');
  if (start.status !== 302) throw new Error(`GET /auth/provider answered ${start.status}`);
  const consent = await fetch(start.headers.get('location')!, { redirect: 'manual' });
  const callback = consent.headers.get('location');
  if (!callback) throw new Error(`consent answered ${consent.status}`);
  const done = await browser.fetch(callback);
  const location = done.headers.get('location') ?? '';
  const session = await (await browser.fetch('/auth/session')).json();
  if (!session.authenticated) throw new Error(`sign-in did not authenticate (redirected to ${location})`);
  return { csrfToken: session.csrfToken, email: session.email, location };
}

/** Headers a web app sends on a CSRF-required call. */
export function csrfHeaders(csrfToken: string, origin: string): Record<string, string> {
  return { 'X-CSRF-Token': csrfToken, Origin: origin };
}

/** A thread's messages with their bodies, collected from the provider client's stream of them (null: the thread is gone). */
export async function threadMessages(
  api: Pick<GmailApi, 'getThreadFull'>,
  threadId: string,
): Promise<MailMessage[] | null> {
  const sink = collectMessages();
  const count = await api.getThreadFull(threadId, sink.each);
  return count === null ? null : (sink.answer(count) as MailMessage[]);
}
