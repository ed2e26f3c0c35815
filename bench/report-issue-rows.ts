/** The Markdown of bench items 11-13: sync CPU next to its floor, the burst next to its floor, the heavy thread and the heavy opens (the mail quota's rows: report-mail-rows.ts). */
import type { BurstFloorResult, HeavyOpensResult, HeavyThreadResult, SyncCpuResult } from './scenarios.ts';
import { f2, ok, s1 } from './report-format.ts';

export function renderSyncCpu(r: SyncCpuResult): string[] {
  const out: string[] = [];
  out.push(
    `## 11. Sync CPU — one incremental sync of one new message, next to the floor (${r.syncsPerRound} syncs per round, ${r.rounds.length / 3} interleaved rounds)`,
  );
  out.push('');
  out.push(
    '| target | CPU ms per sync: process (median) | per round | database ms per sync | statements per sync | WAL bytes per sync | process / floor |',
  );
  out.push('|---|---:|---|---:|---:|---:|---:|');
  const names = {
    route: 'service, `POST /api/mail/sync`',
    job: 'service, notification → job (idle CPU taken off)',
    floor: 'floor: undici + pg, same calls and writes',
  } as const;
  for (const t of ['route', 'job', 'floor'] as const) {
    const m = r.median[t];
    const per = r.rounds
      .filter((x) => x.target === t)
      .map((x) => f2(x.processMsPerSync))
      .join(', ');
    out.push(
      `| ${names[t]} | ${f2(m.processMs)} | ${per} | ${f2(m.databaseMs)} | ${m.statements == null ? 'n/a' : m.statements.toFixed(1)} | ${Math.round(m.walBytes)} | ${t === 'floor' ? '1' : `${f2(r.ratio[t])}×`} |`,
    );
  }
  out.push('');
  const jobIdle = r.rounds
    .filter((x) => x.target === 'job')
    .map((x) => `${f2(x.idleMsPerSync)} / ${f2(x.idleDatabaseMsPerSync)}`)
    .join(', ');
  out.push(
    `Goal (issue 29): at most 2 ms of server CPU per sync: route ${ok(r.median.route.processMs <= 2)}, job ${ok(r.median.job.processMs <= 2)}. CPU from /proc (10 ms ticks), the process that synced and the database's backends; the job row has the server's and the database's idle CPU over the same wall time taken off (${jobIdle} ms per sync, server / database). Statements and WAL: over the round (the job engine's own polling included in the job row). The provider's answers of one sync (history.list and one messages.get, as the floor received them): ${r.rounds.find((x) => x.providerBytesPerSync)?.providerBytesPerSync ?? 'n/a'} bytes.`,
  );
  out.push('');
  out.push(
    '<details><summary>Statements with the most execution time per sync (last round of each target, pg_stat_statements)</summary>',
  );
  out.push('');
  out.push('| target | calls per sync | exec ms per sync | statement |');
  out.push('|---|---:|---:|---|');
  for (const t of ['route', 'job', 'floor'] as const) {
    const last = r.rounds.filter((x) => x.target === t).at(-1);
    for (const st of last?.topStatements ?? [])
      out.push(`| ${t} | ${st.calls} | ${st.ms.toFixed(3)} | \`${st.query.replace(/\|/g, '\\|')}\` |`);
  }
  out.push('');
  out.push('</details>');
  out.push('');
  if (r.profile) {
    const p = r.profile;
    out.push(
      `Where the route sync's CPU goes: V8 CPU profile of a second server doing ${p.syncs} route syncs (${f2(p.busyMsPerSync)} ms sampled per sync on the main thread${p.windowed ? '' : ', whole profile: the window held no sample'}; profiling adds its own cost). Self time by the part running (adds up), and inclusive time by package or folder (a sample counts once for each part on its stack: what a package and everything it calls cost):`,
    );
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
  out.push(
    `## 12. Burst next to its floor — ${r.changes} changes over ${r.accounts} accounts, ${r.latencyMs} ms provider latency`,
  );
  out.push('');
  out.push(
    '| round | drained by | stored | drain | freshness p50 / p99 | jobs | syncs (history.list) | messages.get | CPU ms: process / database | per sync |',
  );
  out.push('|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|');
  r.rounds.forEach((x, i) => {
    const who =
      x.target === 'service'
        ? 'service (watch → Pub/Sub → intake → job → sync)'
        : `floor (${r.floorConcurrency} syncs in flight)`;
    const fresh = x.target === 'service' ? `${x.p50Ms ?? 'n/a'} / ${x.p99Ms ?? 'n/a'} ms` : '–';
    const per = x.syncs ? `${f2(x.cpuMs.process / x.syncs)} / ${f2(x.cpuMs.database / x.syncs)}` : 'n/a';
    out.push(
      `| ${Math.floor(i / 2) + 1} | ${who} | ${x.stored} / ${x.changes} | ${s1(x.drainMs)} | ${fresh} | ${x.jobs ?? '–'} | ${x.syncs} | ${x.messageGets} | ${x.cpuMs.process} / ${x.cpuMs.database} | ${per} |`,
    );
  });
  out.push('');
  out.push(
    `Service drain / floor drain (medians): **${r.ratio == null ? 'n/a' : `${r.ratio.toFixed(2)}×`}** (goal ≤ 1.2: ${ok(r.ratio != null && r.ratio <= 1.2)}). The floor makes the same provider calls and writes with undici and pg (bench/floor/), one sync per touched account; the service's drain ends at the last row's created_at.`,
  );
  out.push('');
  return out;
}

export function renderHeavyThread(r: HeavyThreadResult): string[] {
  const out: string[] = [];
  out.push(
    `## 13. Heavy thread — ${r.clients} clients opening a ${r.messages}-message thread (${r.textKiB} KiB text + ${r.htmlKiB} KiB nested HTML + ${r.attachments} attachments each) beside a normal user`,
  );
  out.push('');
  out.push(
    '| window | seconds | loop delay p99 / max | an idle process beside it: p99 / max | RSS peak | normal user: requests, p50 / p99 / max | heavy opens by status, p50 / max | heavy answer (median bytes) |',
  );
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|');
  for (const w of r.windows) {
    const h = w.heavy;
    out.push(
      `| ${w.kind} | ${w.seconds} | ${w.loop.p99Ms} / ${w.loop.maxMs} ms | ${w.idleProcessLoop.p99Ms} / ${w.idleProcessLoop.maxMs} ms | ${w.rssPeakMiB ?? 'n/a'} MiB | ${w.normal.requests}, ${w.normal.p50Ms} / ${w.normal.p99Ms} / ${w.normal.maxMs} ms${w.normal.non200 ? ` (${w.normal.non200} not 200)` : ''} | ${
        h
          ? `${Object.entries(h.byStatus)
              .map(([s, n]) => `${n}× ${s === '0' ? 'failed' : s}`)
              .join(', ')}; ${h.p50Ms} / ${h.maxMs} ms`
          : '–'
      } | ${h?.bytesMedian ?? '–'} |`,
    );
  }
  out.push('');
  const heavy = r.windows.filter((w) => w.kind === 'heavy');
  const loopMax = Math.max(...heavy.map((w) => w.loop.maxMs));
  const floorMax = Math.max(...heavy.map((w) => w.idleProcessLoop.maxMs));
  const rssMax = Math.max(...heavy.map((w) => w.rssPeakMiB ?? Infinity));
  out.push(
    `Goals (issue 31), heavy windows: loop max < 50 ms: ${loopMax} ms ${ok(loopMax < 50)} (an idle process beside it: ${floorMax} ms); RSS < 400 MiB: ${rssMax} MiB ${ok(rssMax < 400)}; normal user's p99 within 2× of idle: ${r.normalP99Ratio == null ? 'n/a' : `${r.normalP99Ratio.toFixed(2)}×`} ${ok(r.normalP99Ratio != null && r.normalP99Ratio <= 2)}. The normal user lists the inbox and opens one of its threads in turn, one request at a time; the heavy clients each open the heavy thread in a loop (own client address, one session).`,
  );
  out.push('');
  return out;
}

/** Issue 44: accounts each opening heavy threads never opened before, all at once, beside a normal user. */
export function renderHeavyOpens(r: HeavyOpensResult): string[] {
  const t = r.thread;
  const size = r.answerBytes === null ? 'n/a' : `${(r.answerBytes / 1e6).toFixed(1)} MB`;
  const out = [
    `## 13. Heavy opens — ${r.accounts} accounts × ${r.opensPerAccount} concurrent opens of ${t.messages}-message threads never opened before (${size} each as the provider answers it) beside a normal user`,
    '',
  ];
  out.push(
    '| window | seconds | loop delay p99 / max | an idle process beside it: p99 / max | RSS peak | normal user: requests, p50 / p99 / max | heavy opens: served / refused / failed | answers by status | served open: p50 / max | threads.get at the provider | most in flight, per account | sets (s) |',
  );
  out.push('|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
  for (const w of r.windows) {
    const h = w.heavy;
    const o = (k: string) => h?.outcomes[k] ?? 0;
    const heavy = h
      ? `${h.opens}: ${o('served')} / ${o('refused')} / ${o('failed')} | ${Object.entries(h.byStatus)
          .map(([s, n]) => `${n}× ${s === '0' ? 'failed' : s}`)
          .join(
            ', ',
          )} | ${h.servedP50Ms ?? 'n/a'} / ${h.servedMaxMs ?? 'n/a'} ms | ${h.providerFetches} | ${h.inFlightPeak.join(' / ')} | ${h.sets.join(' / ')}`
      : '– | – | – | – | – | –';
    out.push(
      `| ${w.kind} | ${w.seconds} | ${w.loop.p99Ms} / ${w.loop.maxMs} ms | ${w.idleProcessLoop.p99Ms} / ${w.idleProcessLoop.maxMs} ms | ${w.rssPeakMiB ?? 'n/a'} MiB | ${w.normal.requests}, ${w.normal.p50Ms} / ${w.normal.p99Ms} / ${w.normal.maxMs} ms${w.normal.non200 ? ` (${w.normal.non200} not 200)` : ''} | ${heavy} |`,
    );
  }
  out.push('');
  const heavy = r.windows.flatMap((w) => (w.heavy ? [{ ...w, heavy: w.heavy }] : []));
  const rssMax = Math.max(...heavy.map((w) => w.rssPeakMiB ?? Infinity));
  const inFlight = Math.max(...heavy.flatMap((w) => w.heavy.inFlightPeak));
  const bare = heavy.reduce((n, w) => n + w.heavy.refusalsWithoutRetryAfter, 0);
  const loopMax = Math.max(...heavy.map((w) => w.loop.maxMs));
  out.push(
    `Goals (issue 44), heavy windows: RSS ≤ 400 MiB: ${rssMax} MiB ${ok(rssMax <= 400)}; the normal user's p99 ≤ 2× idle: ${r.normalP99Ratio == null ? 'n/a' : `${r.normalP99Ratio.toFixed(2)}×`} ${ok(r.normalP99Ratio != null && r.normalP99Ratio <= 2)}; at most 2 provider fetches in flight per account: ${inFlight} ${ok(inFlight <= 2)}; every 503 with a Retry-After: ${bare ? `${bare} without` : 'yes'}; loop max ${loopMax} ms (item 13's goal < 50 ms: ${ok(loopMax < 50)}).`,
  );
  out.push(
    `Each account opens ${r.opensPerAccount} of its threads at once (each open a threads.get of ${t.messages} messages of ${t.textKiB} KiB text + ${t.htmlKiB} KiB nested HTML + ${t.attachments} attachments, as none is stored yet), a new set once every open of the last has ended (up to ${r.setsPerWindow} a window); an open answered 503 with a Retry-After is tried again after it while the window lasts, then it counts as refused; at the window's end the opens in progress are awaited, so a heavy window lasts until the server has answered them. Answers by status: every try. In flight: from the stand-in's arrival of a threads.get to its answer handed to the connection, the most at once for each account. The normal user lists the inbox and opens one of its threads in turn, one request at a time; both clients run in processes of their own (the Gmail stand-in makes each heavy answer on the bench's event loop).`,
  );
  out.push('');
  return out;
}
