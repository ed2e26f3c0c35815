/**
 * Bench item 13's second variant (issue 44; `--only heavyopens`): 4 accounts × 10 concurrent
 * opens of heavy threads never opened before, beside a normal user; windows of the normal user
 * alone and with the opens, interleaved (heavy-opens.scenario.ts).
 */
import { signIn, type SignedIn } from '../infra.ts';
import type { BenchReport } from '../report.ts';
import { heavyOpensWindow, readLag, seedHeavyThread, type HeavyOpensResult } from '../scenarios.ts';
import { settings, step, WEB_ORIGIN } from './bench.settings.ts';
import { BENCH_ADMIN_TOKEN, type BenchWorld } from './bench.world.ts';
import { heavyShape, normalP99Ratio, signInNormalUser } from './heavy.world.ts';

export async function measureHeavyOpens(world: BenchWorld, report: BenchReport): Promise<void> {
  const { db, gmail, identity, server } = world;
  const thread = heavyShape();
  const {
    heavyOpensAccounts: accounts,
    heavyOpensPerAccount: per,
    heavyOpensSets: sets,
    heavyRounds: rounds,
  } = settings;
  const each = rounds * sets * per;
  step(
    `heavy opens: ${accounts} accounts x ${each} threads of ${thread.messages} messages (${thread.textKiB} KiB text, ${thread.htmlKiB} KiB nested HTML each), ${per} opened at once per account`,
  );
  gmail.setLatency(0);
  const emails = Array.from({ length: accounts }, (_, a) => `heavy-opens-${a + 1}@bench.example`);
  const providerIds = emails.map((email) => Array.from({ length: each }, () => seedHeavyThread(gmail, email, thread)));
  const heavy: SignedIn[] = [];
  for (const [a, email] of emails.entries())
    heavy.push(
      await signIn(server.url, WEB_ORIGIN, identity, { sub: `bench-heavy-opens-${a + 1}`, email }, db.pool, 300_000),
    );
  const normal = await signInNormalUser(world, { sub: 'bench-normal-opens', email: 'normal-opens@bench.example' });
  // Each account's threads as stored by its sign-in's backfill, in the order they were seeded.
  const ids: string[][] = [];
  for (const [a, account] of heavy.entries()) {
    const { rows } = await db.pool.query<{ id: string; pid: string }>(
      '/*bench*/ select id, provider_thread_id as pid from mail_threads where account_id = $1',
      [account.accountId],
    );
    const byProvider = new Map(rows.map((r) => [r.pid, r.id]));
    const missing = providerIds[a]!.filter((pid) => !byProvider.has(pid));
    if (missing.length)
      throw new Error(`${missing.length} heavy threads of ${account.email} were not stored by the sign-in backfill`);
    ids.push(providerIds[a]!.map((pid) => byProvider.get(pid)!));
  }
  const result: HeavyOpensResult = {
    accounts,
    opensPerAccount: per,
    setsPerWindow: sets,
    thread,
    answerBytes: null,
    windows: [],
    normalP99Ratio: null,
  };
  /**
   * The stand-in keeps the heavy window's answers, made here before it: making one takes ~200 ms of
   * the bench's event loop, which would otherwise be spent in the window beside the server on the
   * same two cores, once per fetch (a refused open fetches again when it is tried again).
   */
  const warm = async (a: number, providerThreadId: string) => {
    const res = await fetch(`${gmail.url}gmail/v1/users/me/threads/${providerThreadId}?format=full`, {
      headers: { Authorization: `Bearer ${world.floorToken(emails[a]!)}` },
    });
    const bytes = (await res.arrayBuffer()).byteLength;
    if (!res.ok) throw new Error(`the stand-in answered ${res.status} for heavy thread ${providerThreadId}`);
    result.answerBytes ??= bytes;
  };
  const lag = () => readLag(server.url, BENCH_ADMIN_TOKEN);
  for (let round = 0; round < rounds; round++) {
    for (const kind of ['idle', 'heavy'] as const) {
      // This round's threads: sets of `per` per account, none opened before.
      const range = (s: number) => [(round * sets + s) * per, (round * sets + s + 1) * per] as const;
      const setsOf = (a: number) => Array.from({ length: sets }, (_, s) => ids[a]!.slice(...range(s)));
      if (kind === 'heavy') {
        gmail.keepThreadAnswers(true);
        for (let a = 0; a < accounts; a++)
          for (const pid of providerIds[a]!.slice(range(0)[0], range(sets - 1)[1])) await warm(a, pid);
      }
      const w = await heavyOpensWindow({
        kind,
        seconds: kind === 'idle' ? settings.heavySeconds : settings.heavyOpensSeconds,
        server,
        gmail,
        readLag: lag,
        normal,
        heavy: {
          accounts: heavy.map((account, a) => ({ account, sets: setsOf(a) })),
          timeoutMs: settings.heavyOpensTimeoutMs,
        },
      });
      gmail.keepThreadAnswers(false);
      result.windows.push(w);
      const h = w.heavy;
      step(
        `heavy opens: round ${round + 1}, ${kind} (${w.seconds} s): loop p99 ${w.loop.p99Ms} / max ${w.loop.maxMs} ms, RSS peak ${w.rssPeakMiB} MiB, normal p50 ${w.normal.p50Ms} / p99 ${w.normal.p99Ms} ms${h ? `, opens ${JSON.stringify(h.outcomes)}, answers ${JSON.stringify(h.byStatus)}, threads.get ${h.providerFetches}, in flight per account ${h.inFlightPeak.join('/')}, sets ${h.sets.join(' / ')} s` : ''}`,
      );
    }
  }
  result.normalP99Ratio = normalP99Ratio(result.windows);
  report.heavyOpens = result;
}
