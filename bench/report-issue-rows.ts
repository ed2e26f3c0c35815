/** The Markdown of bench items 11-13 (sync CPU next to its floor, the burst next to its floor, the heavy thread) and of issue 28's backfill and resync rows. */
import type { BackfillResult, BurstFloorResult, HeavyThreadResult, ResyncScaleResult, StoreCheck, SyncCpuResult } from './scenarios.ts';

const f2 = (n: number | null | undefined) => (n == null || Number.isNaN(n) ? 'n/a' : n.toFixed(2));
const ok = (b: boolean) => (b ? 'yes' : '**no**');
const s1 = (ms: number | null | undefined) => (ms == null ? 'timeout' : `${(ms / 1000).toFixed(1)} s`);

export function renderSyncCpu(r: SyncCpuResult): string[] {
  const out: string[] = [];
  out.push(`## 11. Sync CPU — one incremental sync of one new message, next to the floor (${r.syncsPerRound} syncs per round, ${r.rounds.length / 3} interleaved rounds)`);
  out.push('');
  out.push('| target | CPU ms per sync: process (median) | per round | database ms per sync | statements per sync | WAL bytes per sync | process / floor |');
  out.push('|---|---:|---|---:|---:|---:|---:|');
  const names = { route: 'service, `POST /api/mail/sync`', job: 'service, notification → job (idle CPU taken off)', floor: 'floor: undici + pg, same calls and writes' } as const;
  for (const t of ['route', 'job', 'floor'] as const) {
    const m = r.median[t];
    const per = r.rounds.filter((x) => x.target === t).map((x) => f2(x.processMsPerSync)).join(', ');
    out.push(`| ${names[t]} | ${f2(m.processMs)} | ${per} | ${f2(m.databaseMs)} | ${m.statements == null ? 'n/a' : m.statements.toFixed(1)} | ${Math.round(m.walBytes)} | ${t === 'floor' ? '1' : `${f2(r.ratio[t])}×`} |`);
  }
  out.push('');
  const jobIdle = r.rounds.filter((x) => x.target === 'job').map((x) => `${f2(x.idleMsPerSync)} / ${f2(x.idleDatabaseMsPerSync)}`).join(', ');
  out.push(`Goal (issue 29): at most 2 ms of server CPU per sync: route ${ok(r.median.route.processMs <= 2)}, job ${ok(r.median.job.processMs <= 2)}. CPU from /proc (10 ms ticks), the process that synced and the database's backends; the job row has the server's and the database's idle CPU over the same wall time taken off (${jobIdle} ms per sync, server / database). Statements and WAL: over the round (the job engine's own polling included in the job row). The provider's answers of one sync (history.list and one messages.get, as the floor received them): ${r.rounds.find((x) => x.providerBytesPerSync)?.providerBytesPerSync ?? 'n/a'} bytes.`);
  out.push('');
  out.push('<details><summary>Statements with the most execution time per sync (last round of each target, pg_stat_statements)</summary>');
  out.push('');
  out.push('| target | calls per sync | exec ms per sync | statement |');
  out.push('|---|---:|---:|---|');
  for (const t of ['route', 'job', 'floor'] as const) {
    const last = r.rounds.filter((x) => x.target === t).at(-1);
    for (const st of last?.topStatements ?? []) out.push(`| ${t} | ${st.calls} | ${st.ms.toFixed(3)} | \`${st.query.replace(/\|/g, '\\|')}\` |`);
  }
  out.push('');
  out.push('</details>');
  out.push('');
  if (r.profile) {
    const p = r.profile;
    out.push(`Where the route sync's CPU goes: V8 CPU profile of a second server doing ${p.syncs} route syncs (${f2(p.busyMsPerSync)} ms sampled per sync on the main thread${p.windowed ? '' : ', whole profile: the window held no sample'}; profiling adds its own cost). Self time by the part running (adds up), and inclusive time by package or folder (a sample counts once for each part on its stack: what a package and everything it calls cost):`);
    out.push('');
    out.push('| self: part | ms per sync | | inclusive: part | ms per sync |');
    out.push('|---|---:|---|---|---:|');
    for (let i = 0; i < Math.max(p.selfByPart.length, p.byPart.length); i++) {
      const a = p.selfByPart[i];
      const b = p.byPart[i];
      out.push(`| ${a?.part ?? ''} | ${a ? f2(a.msPerSync) : ''} | | ${b?.part ?? ''} | ${b ? f2(b.msPerSync) : ''} |`);
    }
    out.push('');
    out.push('<details><summary>Functions with the most self time</summary>');
    out.push('');
    out.push('| ms per sync | function |');
    out.push('|---:|---|');
    for (const x of p.topSelf) out.push(`| ${f2(x.msPerSync)} | \`${x.fn.replace(/\|/g, '\\|')}\` |`);
    out.push('');
    out.push('</details>');
    out.push('');
  }
  return out;
}

export function renderBurstFloor(r: BurstFloorResult): string[] {
  const out: string[] = [];
  out.push(`## 12. Burst next to its floor — ${r.changes} changes over ${r.accounts} accounts, ${r.latencyMs} ms provider latency`);
  out.push('');
  out.push('| round | drained by | stored | drain | freshness p50 / p99 | jobs | syncs (history.list) | messages.get | CPU ms: process / database | per sync |');
  out.push('|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  r.rounds.forEach((x, i) => {
    const who = x.target === 'service' ? 'service (watch → Pub/Sub → intake → job → sync)' : `floor (${r.floorConcurrency} syncs in flight)`;
    const fresh = x.target === 'service' ? `${x.p50Ms ?? 'n/a'} / ${x.p99Ms ?? 'n/a'} ms` : '–';
    const per = x.syncs ? `${f2(x.cpuMs.process / x.syncs)} / ${f2(x.cpuMs.database / x.syncs)}` : 'n/a';
    out.push(`| ${Math.floor(i / 2) + 1} | ${who} | ${x.stored} / ${x.changes} | ${s1(x.drainMs)} | ${fresh} | ${x.jobs ?? '–'} | ${x.syncs} | ${x.messageGets} | ${x.cpuMs.process} / ${x.cpuMs.database} | ${per} |`);
  });
  out.push('');
  out.push(`Service drain / floor drain (medians): **${r.ratio == null ? 'n/a' : `${r.ratio.toFixed(2)}×`}** (goal ≤ 1.2: ${ok(r.ratio != null && r.ratio <= 1.2)}). The floor makes the same provider calls and writes with undici and pg (bench/floor/), one sync per touched account; the service's drain ends at the last row's created_at.`);
  out.push('');
  return out;
}

export function renderHeavyThread(r: HeavyThreadResult): string[] {
  const out: string[] = [];
  out.push(`## 13. Heavy thread — ${r.clients} clients opening a ${r.messages}-message thread (${r.textKiB} KiB text + ${r.htmlKiB} KiB nested HTML + ${r.attachments} attachments each) beside a normal user`);
  out.push('');
  out.push('| window | seconds | loop delay p99 / max | an idle process beside it: p99 / max | RSS peak | normal user: requests, p50 / p99 / max | heavy opens by status, p50 / max | heavy answer (median bytes) |');
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const w of r.windows) {
    const h = w.heavy;
    out.push(`| ${w.kind} | ${w.seconds} | ${w.loop.p99Ms} / ${w.loop.maxMs} ms | ${w.idleProcessLoop.p99Ms} / ${w.idleProcessLoop.maxMs} ms | ${w.rssPeakMiB ?? 'n/a'} MiB | ${w.normal.requests}, ${w.normal.p50Ms} / ${w.normal.p99Ms} / ${w.normal.maxMs} ms${w.normal.non200 ? ` (${w.normal.non200} not 200)` : ''} | ${h ? `${Object.entries(h.byStatus).map(([s, n]) => `${n}× ${s === '0' ? 'failed' : s}`).join(', ')}; ${h.p50Ms} / ${h.maxMs} ms` : '–'} | ${h?.bytesMedian ?? '–'} |`);
  }
  out.push('');
  const heavy = r.windows.filter((w) => w.kind === 'heavy');
  const loopMax = Math.max(...heavy.map((w) => w.loop.maxMs));
  const floorMax = Math.max(...heavy.map((w) => w.idleProcessLoop.maxMs));
  const rssMax = Math.max(...heavy.map((w) => w.rssPeakMiB ?? Infinity));
  out.push(`Goals (issue 31), heavy windows: loop max < 50 ms: ${loopMax} ms ${ok(loopMax < 50)} (an idle process beside it: ${floorMax} ms); RSS < 400 MiB: ${rssMax} MiB ${ok(rssMax < 400)}; normal user's p99 within 2× of idle: ${r.normalP99Ratio == null ? 'n/a' : `${r.normalP99Ratio.toFixed(2)}×`} ${ok(r.normalP99Ratio != null && r.normalP99Ratio <= 2)}. The normal user lists the inbox and opens one of its threads in turn, one request at a time; the heavy clients each open the heavy thread in a loop (own client address, one session).`);
  out.push('');
  return out;
}

/** Issue 28: mail that arrived during the backfill, and the resync by difference after the history expired. */
export function renderBackfillLive(b: BackfillResult): string[] {
  const out: string[] = [];
  if (b.arrivals) {
    const a = b.arrivals;
    out.push('| mail arriving during the backfill | stored | p50 | p99 (goal ≤ 5 s) | max |', '|---:|---:|---:|---:|---:|');
    out.push(`| ${a.count} | ${a.stored} | ${a.p50Ms} ms | ${a.p99Ms} ms ${ok(a.p99Ms <= 5_000 && a.stored === a.count)} | ${a.maxMs} ms |`, '');
  }
  if (b.resync) {
    const r = b.resync;
    out.push('| resync after the history expired | changed upstream | quota units | fetching every message | share (goal ≤ 5 %) | messages.get | list pages | time |', '|---|---:|---:|---:|---:|---:|---:|---:|');
    out.push(`| ${b.messages} messages | ${r.changed} | ${r.units} | ${r.fetchAllUnits} | ${(r.share * 100).toFixed(2)} % ${ok(r.share <= 0.05)} | ${r.messagesGets} | ${r.listPages} | ${(r.ms / 1000).toFixed(1)} s |`, '');
    out.push('A listing reads ids (500 a page: the unread ones, then the inbox), fetches only what the store does not know, relabels the rest from the ids and fetches the stored inbox messages it did not name; its units grow with the pages, about 0.02 units per message, plus 5 per changed message.', '');
    if (r.check) out.push(`Afterwards, every stored message and inbox thread next to the provider's mailbox: ${storeCheck(r.check)}.`, '');
  }
  return out;
}

const storeCheck = (c: StoreCheck) =>
  `inbox ${c.storedInbox} stored / ${c.providerInbox} at the provider, ${c.inboxMismatched} missing or another read state, ${c.storedNotInInbox} stored in the inbox but not there, ${c.storedDeleted} deleted there but stored; inbox threads ${c.storedThreads} / ${c.providerThreads}, ${c.threadsMismatched} differ: ${c.equal ? 'equal' : '**not equal**'}`;

/** Issue 28: the resync of a big inbox (`--only resync`), after a backfill with the quota lifted. */
export function renderResyncScale(x: ResyncScaleResult): string[] {
  const r = x.resync;
  const calls = Object.entries(r.calls ?? {}).filter(([k]) => !k.includes(':')).map(([k, v]) => `${k} ${v}`).join(', ');
  return [
    `## 7. Resync — a ${x.messages}-message inbox, ${r.changed} changed while the history expired, provider quota ${x.quotaUnitsPerSecond} units/s`,
    '',
    '| inbox | changed | quota units | fetching every message | share (goal ≤ 5 %) | calls refused (goal 0) | time | calls |',
    '|---:|---:|---:|---:|---:|---:|---:|---|',
    `| ${r.inbox} | ${r.changed} | ${r.units} | ${r.fetchAllUnits} | ${(r.share * 100).toFixed(2)} % ${ok(r.share <= 0.05)} | ${x.refused} ${ok(x.refused === 0)} | ${s1(r.ms)} | ${calls} |`,
    '',
    `Afterwards, every stored message and inbox thread next to the provider's mailbox: ${r.check ? storeCheck(r.check) : 'not read'}.`,
    '',
    `Before it, the service's own backfill filled the store with the quota lifted (the stand-in's off, a server of its own with its pacer off): ${s1(x.fill.ms)}, ${x.fill.units} units in ${x.fill.providerRequests} calls; ${storeCheck(x.fill.check)}. The resync ran on a server with the real pacing (${x.quotaUnitsPerSecond} units/s) started on the same database, against the stand-in enforcing the same quota. Fetching every message: 5 units per messages.get and 5 per messages.list page of 500 ids.`,
    '',
  ];
}
