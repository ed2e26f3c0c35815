/** The Markdown of the mail quota's rows: issue 28's backfill and resync, and bench item 15 (analysis on arrival). */
import type { AutoTriageResult, BackfillResult, Latency, ResyncScaleResult, StoreCheck } from './scenarios.ts';
import { f2, ok, s1 } from './report-format.ts';

const n0 = (n: number) => Math.round(n).toLocaleString('en-US');
/** "6,000 units per 10 s window (2026 profile)". */
const quotaOf = (q: { unitsPerWindow: number; windowMs: number; profile: string }) =>
  `${n0(q.unitsPerWindow)} units per ${q.windowMs / 1000} s window (${q.profile} profile)`;
/** What the bench's quota is (bench.settings.ts): Google's 2026 per-user limit counted in a shorter window. */
const quotaNote = (q: { unitsPerWindow: number; windowMs: number; profile: string }) =>
  `Google's ${q.profile} costs (messages.get 20 units, threads.get 40, messages.list 5, history.list 2, the profile and labels.get 1, watch 100) and ${n0(q.unitsPerWindow)} units per user counted in a ${q.windowMs / 1000} s window instead of a minute (Google's 2026 limit is 6,000 a minute: ${(((q.unitsPerWindow / q.windowMs) * 60_000) / 6_000).toFixed(0)}× its rate, scaled for the bench; the server's GMAIL_QUOTA_PROFILE=${q.profile}, GMAIL_QUOTA_WINDOW_SECONDS=${q.windowMs / 1000}, GMAIL_USER_UNITS_PER_MINUTE=${q.unitsPerWindow}, the stand-in's setQuota the same)`;

/** Issue 28 / 42: the backfill under the 2026 quota, the user opening threads and mail arriving meanwhile, the resync after it. */
export function renderBackfill(b: BackfillResult): string[] {
  const out: string[] = [];
  const limit = b.quota.unitsPerWindow;
  out.push(
    `## 7. Backfill — a ${b.messages}-message inbox from sign-in to fully listed, provider quota ${quotaOf(b.quota)}`,
    '',
  );
  const pct1 = (x: number) => `${(x * 100).toFixed(1)} %`;
  out.push(
    '| stored | time | quota-limited optimum | ratio (goal ≥ 90 %) | every lane: units sent / (limit × time) | the same after the first window | calls refused (goal 0) | most units in one window / limit | provider requests |',
  );
  out.push('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  out.push(
    `| ${b.stored} / ${b.messages} | ${s1(b.ms)} | ${s1(b.optimumMs)} (${n0(b.optimumUnits)} units) | ${pct1(b.ratio)} ${ok(b.ratio >= 0.9 && b.stored >= b.messages)} | ${pct1(b.windowShare)} | ${b.sustainedShare == null ? 'n/a' : pct1(b.sustainedShare)} | ${b.refused} ${ok(b.refused === 0)} | ${n0(b.quotaPeak)} / ${n0(limit)} ${ok(b.quotaPeak <= limit)} | ${b.providerRequests} |`,
    '',
  );
  out.push(
    `The quota: ${quotaNote(b.quota)}. The stand-in refuses (429) any call past the limit in a moving window; the service paces each account within it through its ledger (bulk work at most 95 % of the window, counted over the window plus a small allowance: at most about 91 % of the limit once the first window is spent). Optimum: the units the listing needs (messages.list 5 per 500 ids, messages.get 20 each, the watch 100, the profile and the inbox count 1 each, the history reads it made) spent at exactly the limit per window (units / limit × window); the user's opens and the mail that arrived meanwhile spend units of the same windows outside it (the next two columns count every unit sent to the stand-in, the last of them from the end of the first window on, which a backfill spends at once).`,
    '',
  );
  const byEndpoint = Object.entries(b.unitsByEndpoint)
    .filter(([, v]) => v > 0)
    .map(([k, v]) => `${k} ${n0(v)}`)
    .join(', ');
  out.push(
    '| units per backfilled message | units charged | fixed (watch, profile, inbox count, list pages) | thread opens | stored messages | per message | naive (one messages.get) | the shape at its cheapest | inbox threads (of 3+ messages) | reads: threads / messages |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  out.push(
    `| ${b.messages} messages | ${n0(b.quotaSpent)} | ${n0(b.fixedUnits)} | ${n0(b.opensUnits)} | ${b.stored} | ${b.unitsPerMessage.toFixed(2)} | 20 | ${b.threadShapeUnitsPerMessage.toFixed(2)} | ${b.threads} (${b.threadsOfThreeOrMore}) | ${b.threadReads} / ${b.messageReads} |`,
    '',
  );
  out.push(
    `Units charged: what the stand-in charged the mailbox from the sign-in until the backfill was done (by endpoint: ${byEndpoint}); per message: those less the fixed costs and the user's thread opens (threads.get format=full), over the stored messages (the inbox and the mail that arrived; the history reads and the arrivals' fetches stay in). The inbox has the seed's own thread shape, ${(b.messages / Math.max(1, b.threads)).toFixed(2)} messages per thread (the seed has no option for 2-3 per thread); at its cheapest every thread of three or more messages is read once (threads.get, 40 units) and every other message by messages.get (20).`,
    '',
  );
  if (b.opens) {
    const o = b.opens;
    out.push(
      '| the user during the backfill | thread opens | not 200 | p50 | p99 (goal ≤ 2 s) | max | inbox lists (p99) |',
      '|---|---:|---:|---:|---:|---:|---:|',
    );
    out.push(
      `| list 20, open one not opened yet | ${o.count} | ${o.non200}${
        o.non200
          ? ` (${Object.entries(o.statuses)
              .map(([k, v]) => `${k}: ${v}`)
              .join(', ')})`
          : ''
      } ${ok(o.non200 === 0)} | ${o.p50Ms} ms | ${o.p99Ms} ms ${ok(o.count > 0 && o.p99Ms <= 2_000)} | ${o.maxMs} ms | ${o.lists.count} (${o.lists.p99Ms} ms, ${o.lists.non200} not 200) |`,
      '',
    );
    out.push(
      `Each open fetches the thread's bodies (one threads.get, 40 units) in the user's lane, which may fill the window to the limit where the backfill's stops at 95 %: beside a backfill the user finds that last 5 % (${n0(limit * 0.05)} units of ${n0(limit)}), shared with the notified mail's lane (up to 98 %). An open that finds no room within 2.5 s answers 429 at once (MAIL_RATE_LIMITED).`,
      '',
    );
  }
  if (b.arrivals) {
    const a = b.arrivals;
    out.push(
      '| mail arriving during the backfill | stored | p50 | p99 (goal ≤ 5 s) | max |',
      '|---:|---:|---:|---:|---:|',
    );
    out.push(
      `| ${a.count} | ${a.stored} | ${a.p50Ms} ms | ${a.p99Ms} ms ${ok(a.p99Ms <= 5_000 && a.stored === a.count)} | ${a.maxMs} ms |`,
      '',
    );
  }
  if (b.resync) {
    const r = b.resync;
    out.push(
      '| resync after the history expired | changed upstream | quota units | fetching every message | share (goal ≤ 5 %) | messages.get | list pages | time |',
      '|---|---:|---:|---:|---:|---:|---:|---:|',
    );
    out.push(
      `| ${b.messages} messages | ${r.changed} | ${r.units} | ${r.fetchAllUnits} | ${(r.share * 100).toFixed(2)} % ${ok(r.share <= 0.05)} | ${r.messagesGets} | ${r.listPages} | ${(r.ms / 1000).toFixed(1)} s |`,
      '',
    );
    out.push(
      'A listing reads ids (500 a page: the unread ones, then the inbox), fetches only what the store does not know, relabels the rest from the ids and fetches the stored inbox messages it did not name; its units grow with the pages, about 0.02 units per message, plus 20 per changed message. Fetching every message: 20 units per messages.get and 5 per messages.list page of 500 ids.',
      '',
    );
    if (r.check)
      out.push(
        `Afterwards, every stored message and inbox thread next to the provider's mailbox: ${storeCheck(r.check)}.`,
        '',
      );
  }
  return out;
}

const storeCheck = (c: StoreCheck) =>
  `inbox ${c.storedInbox} stored / ${c.providerInbox} at the provider, ${c.inboxMismatched} missing or another read state, ${c.storedNotInInbox} stored in the inbox but not there, ${c.storedDeleted} deleted there but stored; inbox threads ${c.storedThreads} / ${c.providerThreads}, ${c.threadsMismatched} differ: ${c.equal ? 'equal' : '**not equal**'}`;

/** Issue 28: the resync of a big inbox (`--only resync`), after a backfill with the quota lifted. */
export function renderResyncScale(x: ResyncScaleResult): string[] {
  const r = x.resync;
  const calls = Object.entries(r.calls ?? {})
    .filter(([k]) => !k.includes(':'))
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  return [
    `## 7. Resync — a ${x.messages}-message inbox, ${r.changed} changed while the history expired, provider quota ${quotaOf(x.quota)}`,
    '',
    '| inbox | changed | quota units | fetching every message | share (goal ≤ 5 %) | calls refused (goal 0) | most units in one window / limit | time | calls |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---|',
    `| ${r.inbox} | ${r.changed} | ${r.units} | ${r.fetchAllUnits} | ${(r.share * 100).toFixed(2)} % ${ok(r.share <= 0.05)} | ${x.refused} ${ok(x.refused === 0)} | ${n0(x.quotaPeak)} / ${n0(x.quota.unitsPerWindow)} ${ok(x.quotaPeak <= x.quota.unitsPerWindow)} | ${s1(r.ms)} | ${calls} |`,
    '',
    `Afterwards, every stored message and inbox thread next to the provider's mailbox: ${r.check ? storeCheck(r.check) : 'not read'}.`,
    '',
    `Before it, the service's own backfill filled the store with the quota lifted (a server of its own with its pacer off, GMAIL_USER_UNITS_PER_MINUTE=0; the stand-in charging 2026 costs without a limit): ${s1(x.fill.ms)}, ${n0(x.fill.units)} units in ${x.fill.providerRequests} calls; ${storeCheck(x.fill.check)}. The resync ran on a server with the bench's pacing (${quotaOf(x.quota)}) started on the same database, against the stand-in enforcing the same. The quota: ${quotaNote(x.quota)}. Quota units: what the stand-in charged the mailbox. Fetching every message: 20 units per messages.get and 5 per messages.list page of 500 ids.`,
    '',
  ];
}

/** Issue 45: analysis on arrival under a burst, the share of the budget, the AI's concurrency, the list beside it. */
export function renderAutoTriage(r: AutoTriageResult): string[] {
  const main = r.runs[0];
  const out: string[] = [];
  if (!main) return out;
  out.push(
    `## 15. Analysis on arrival — ${main.messages} new messages over ${main.accounts} accounts with autoTriage on, AI ${main.ai.latencyMs} ms a call`,
    '',
  );
  out.push(
    '| run | daily budget / auto share | eligible of new | stored | eligible analysed | ineligible analysed (goal 0) | AI calls | AI busy / bound (calls × latency / (bound × time)) | peak in flight / bound | spent − share, max over accounts (goal ≤ 0) | left of the share: min / max | analyses an account | reserved per call: min / median / max |',
  );
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const x of r.runs) {
    const t = x.tokens;
    const res = x.reservation ? `${x.reservation.min} / ${x.reservation.median} / ${x.reservation.max}` : 'n/a';
    const all = x.analysed === x.eligible;
    out.push(
      `| ${x.name} | ${n0(x.budget.daily)} / ${n0(x.budget.shareTokens)} | ${x.eligible} of ${x.messages} | ${x.stored} in ${s1(x.storedMs)} | ${x.analysed}${all ? ` in ${s1(x.analysedMs)}` : ''} | ${x.ineligibleAnalysed} ${ok(x.ineligibleAnalysed === 0)} | ${x.aiCalls} | ${x.aiUtilisation == null ? 'n/a' : `${Math.round(x.aiUtilisation * 100)} %`} | ${x.peakInFlight} / ${x.bound} ${ok(x.peakInFlight <= x.bound)} | ${t.maxOverShare} ${ok(t.maxOverShare <= 0)} | ${t.minLeft} / ${t.maxLeft} | ${t.analysesMin}–${t.analysesMax} | ${res} |`,
    );
  }
  out.push('');
  out.push(
    `Analyses stored per 10 s from the first new message: ${r.runs.map((x) => `${x.name} ${x.analysesPer10s.join(', ')}`).join('; ')}.`,
    '',
  );
  const m = Object.entries(main.byKind)
    .map(([k, v]) => `${v} ${k}`)
    .join(', ');
  const small = r.runs[1];
  out.push(
    `Goals (issue 45): every eligible thread analysed with the default budget: ${ok(main.analysed === main.eligible)}; no account past its share (spent − share ≤ 0 in every run): ${ok(r.runs.every((x) => x.tokens.maxOverShare <= 0))}; the AI calls in flight at most ${r.workersPerInstance} per instance × ${r.instances}: ${ok(r.runs.every((x) => x.peakInFlight <= x.bound))}. The mix of every 10 new messages: 7 personal (eligible), one in Promotions, Social, Updates or Forums (by account), one with List-Unsubscribe or Precedence: bulk, one the owner's own (${m}); each its own thread, notified as item 3's (watch → Pub/Sub → intake → sync), the Gmail stand-in at ${main.mailLatencyMs} ms a request. The OpenAI stand-in answers each call after ${main.ai.latencyMs} ms with fixed usage (${main.ai.promptTokens} prompt + ${main.ai.completionTokens} completion tokens), so the ledger's sums are exact; a call reserves its upper bound (the server's upperBoundTokens of the request as sent: its bytes and the output cap) and must fit whole in what is left of the share. Times: from the first new message to the last row's created_at. A server of its own (same configuration, its own database and subscription), ${r.instances} instance.`,
    '',
  );
  if (small) {
    const od = small.onDemand;
    out.push(
      `${small.name}: AI_DAILY_TOKEN_BUDGET ${small.budget.daily}, so the share (${small.budget.share}) is ${small.budget.shareTokens} tokens: room for ${small.tokens.analysesMax} calls when the last reserves the largest upper bound of the default run. Left of the share after the burst: ${small.tokens.minLeft}–${small.tokens.maxLeft} tokens, under the smallest reservation (${small.reservation?.min ?? 'n/a'}): ${ok(small.reservation != null && small.tokens.maxLeft < small.reservation.min)} (each account stopped only when the next call's bound no longer fitted); rows still reserved ${small.tokens.reservedLeft}. The on-demand route on an eligible thread left without an analysis afterwards: ${od ? `${od.status} ${ok(od.status === 200)}, charged as ${od.operation ?? 'nothing'}` : 'not run'} (it spends the rest of the daily budget).`,
      '',
    );
  }
  out.push(
    "| list of one account, GET /api/mail/threads?limit=50 at a fixed rate | seconds | requests | not 200 | p50 | p99 | max | p99 as the server logged it | the bench client's own loop delay p99 / max |",
  );
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  r.list.forEach((w, i) => {
    const name =
      w.kind === 'burst'
        ? 'during the burst (until every eligible thread was analysed)'
        : w.kind === 'control'
          ? `control: the same burst again, autoTriage off (until stored; ${main.controlAnalysed ?? 'n/a'} analysed)`
          : i === 0
            ? 'idle, before'
            : 'idle, after';
    out.push(
      `| ${name} | ${w.seconds} | ${w.requests} | ${w.non200} | ${w.p50Ms} ms | ${w.p99Ms} ms | ${w.maxMs} ms | ${w.serverP99Ms ?? 'n/a'} ms | ${w.clientLoop.p99Ms} / ${w.clientLoop.maxMs} ms |`,
    );
    const part = (label: string, a?: Latency) =>
      a &&
      out.push(
        `| ${label} | | ${a.requests} | | ${a.p50Ms} ms | ${a.p99Ms} ms | ${a.maxMs} ms | ${a.serverP99Ms ?? 'n/a'} ms | |`,
      );
    part('of them, sent before every new message was stored (the syncs)', w.syncing);
    part('of them, sent once every new message was stored (the triage alone)', w.afterStored);
  });
  out.push('');
  const x = (v: number | null) => (v == null ? 'n/a' : `${v.toFixed(2)}×`);
  out.push(
    `p99 during the burst / idle before: **${x(r.listP99Ratio)}** (goal ≤ 2: ${ok(r.listP99Ratio != null && r.listP99Ratio <= 2)}); / idle after: ${x(r.listP99RatioAfter)}; the triage alone (after the syncs) / idle before: ${x(r.listP99RatioTriage)}. The control is the same burst with the setting off: what the syncs alone do to the list. Requests are sent on schedule whether the one before answered (an open loop), from the bench process, which also runs the stand-ins; the server's column is the \`ms\` of its request log over the same span.`,
    '',
  );
  return out;
}
