/**
 * What the heavy rows share (heavy.phase.ts, item 13; heavy-opens.phase.ts, issue 44): the heavy
 * thread's shape from the settings, the normal user beside the heavy load (signed in, their
 * newest inbox threads as the ones they open) and the goal's ratio of the normal user's p99.
 */
import { signIn, type SignedIn } from '../infra.ts';
import type { HeavyWindow } from '../scenarios.ts';
import { median, settings, WEB_ORIGIN } from './bench.settings.ts';
import type { BenchWorld } from './bench.world.ts';

/** The heavy thread's shape (bench.settings.ts). */
export const heavyShape = () => ({
  messages: settings.heavyMessages,
  htmlKiB: settings.heavyHtmlKiB,
  textKiB: settings.heavyTextKiB,
  attachments: settings.heavyAttachments,
});

/** The normal user of a heavy row: 20 ordinary threads seeded, signed in; the 10 newest in the inbox are the ones opened. */
export async function signInNormalUser(
  world: BenchWorld,
  who: { sub: string; email: string },
): Promise<{ account: SignedIn; threadIds: string[] }> {
  const { db, gmail, identity, server } = world;
  gmail.seed(who.email, 20, { sentReplies: false });
  const account = await signIn(server.url, WEB_ORIGIN, identity, who, db.pool);
  const { rows } = await db.pool.query<{ id: string }>(
    '/*bench*/ select id from mail_threads where account_id = $1 and in_inbox order by last_message_at desc limit 10',
    [account.accountId],
  );
  return { account, threadIds: rows.map((r) => r.id) };
}

/** The normal user's p99, median of the heavy windows over the median of the idle ones (the goal: at most 2). */
export function normalP99Ratio(windows: Pick<HeavyWindow, 'kind' | 'normal'>[]): number {
  const p99 = (k: 'idle' | 'heavy') =>
    median(windows.filter((w) => w.kind === k && w.normal.p99Ms !== null).map((w) => w.normal.p99Ms!));
  return p99('heavy') / p99('idle');
}
