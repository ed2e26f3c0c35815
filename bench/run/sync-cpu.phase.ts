/**
 * Bench item 11 (issue 29): CPU per incremental sync of one new message — through the sync
 * route and through the notification path — next to the sync floor, in interleaved rounds
 * (the order rotates); then a CPU profile of a second server doing route syncs only.
 */
import { mkdtempSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { signIn } from '../infra.ts';
import { profileClockUs, summariseProfile } from '../profile-summary.ts';
import type { BenchReport } from '../report.ts';
import {
  floorSyncs,
  jobSyncs,
  routeSyncs,
  type SyncCpuResult,
  type SyncCpuRound,
  type SyncCpuTarget,
} from '../scenarios.ts';
import { median, settings, step, WEB_ORIGIN } from './bench.settings.ts';
import type { BenchWorld } from './bench.world.ts';

const TARGETS: SyncCpuTarget[] = ['route', 'job', 'floor'];

export async function measureSyncCpu(world: BenchWorld, report: BenchReport): Promise<void> {
  const { db, gmail, identity, server } = world;
  gmail.setLatency(0);
  step('sync cpu: signing in an account for the service and one for the floor, starting the floor');
  gmail.seed('cpu@bench.example', 3, { sentReplies: false });
  gmail.seed('cpu-floor@bench.example', 3, { sentReplies: false });
  const account = await signIn(
    server.url,
    WEB_ORIGIN,
    identity,
    { sub: 'bench-cpu', email: 'cpu@bench.example' },
    db.pool,
  );
  const floorAccount = await signIn(
    server.url,
    WEB_ORIGIN,
    identity,
    { sub: 'bench-cpu-floor', email: 'cpu-floor@bench.example' },
    db.pool,
  );
  const floor = await world.startSyncFloor();
  const floorUser = {
    accountId: floorAccount.accountId,
    email: floorAccount.email,
    token: world.floorToken(floorAccount.email),
  };
  const deps = { db, gmail };
  const n = settings.syncCpuSyncs;
  const run = async (target: SyncCpuTarget, syncs: number): Promise<SyncCpuRound> => {
    if (target === 'route') return routeSyncs(deps, server.url, WEB_ORIGIN, server.pid, account, syncs);
    if (target === 'floor') return floorSyncs(deps, floor.url, floor.pid, floorUser, syncs);
    const published = world.setForwarding(true);
    try {
      return await jobSyncs(deps, server.pid, account, syncs);
    } finally {
      world.setForwarding(false);
      void published;
    }
  };
  // Warm-up: each path once (JIT, pools, prepared statements), not counted.
  for (const target of TARGETS) await run(target, 2);
  const rounds: SyncCpuRound[] = [];
  for (let round = 0; round < settings.syncCpuRounds; round++) {
    for (let i = 0; i < TARGETS.length; i++) {
      const target = TARGETS[(i + round) % TARGETS.length]!;
      const r = await run(target, n);
      rounds.push(r);
      step(
        `sync cpu: round ${round + 1}, ${target}: ${r.processMsPerSync.toFixed(2)} ms process + ${r.databaseMsPerSync.toFixed(2)} ms database per sync, ${r.statementsPerSync?.toFixed(1) ?? '?'} statements`,
      );
    }
  }
  const med = (t: SyncCpuTarget) => {
    const of = rounds.filter((r) => r.target === t);
    const st = of.map((r) => r.statementsPerSync).filter((x): x is number => x !== null);
    return {
      processMs: median(of.map((r) => r.processMsPerSync)),
      databaseMs: median(of.map((r) => r.databaseMsPerSync)),
      statements: st.length ? median(st) : null,
      walBytes: median(of.map((r) => r.walBytesPerSync)),
    };
  };
  const m = { route: med('route'), job: med('job'), floor: med('floor') };
  const result: SyncCpuResult = {
    syncsPerRound: n,
    rounds,
    median: m,
    ratio: { route: m.route.processMs / m.floor.processMs, job: m.job.processMs / m.floor.processMs },
  };
  result.profile = await profileRouteSyncs(world, account);
  report.syncCpu = result;
  step(
    `sync cpu: route ${m.route.processMs.toFixed(2)} ms (${result.ratio.route.toFixed(1)}x floor), job ${m.job.processMs.toFixed(2)} ms (${result.ratio.job.toFixed(1)}x), floor ${m.floor.processMs.toFixed(2)} ms`,
  );
}

/** A second server under --cpu-prof, route syncs only; the profile read over the syncs' window. */
async function profileRouteSyncs(
  world: BenchWorld,
  account: Awaited<ReturnType<typeof signIn>>,
): Promise<SyncCpuResult['profile']> {
  const dir = mkdtempSync(path.join(path.dirname(world.serverLog), 'sync-cpu-profile-'));
  const { server } = await world.startSecondServer({
    name: 'sync-cpu-profile',
    nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`],
  });
  const syncs = settings.syncCpuProfileSyncs;
  await routeSyncs({ db: world.db, gmail: world.gmail }, server.url, WEB_ORIGIN, server.pid, account, 3);
  const fromUs = profileClockUs();
  await routeSyncs({ db: world.db, gmail: world.gmail }, server.url, WEB_ORIGIN, server.pid, account, syncs);
  const toUs = profileClockUs();
  await server.stop();
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) return null;
  const s = summariseProfile(path.join(dir, file), { fromUs, toUs });
  step(
    `sync cpu profile: ${(s.busyMs / syncs).toFixed(2)} ms busy per sync (${s.windowed ? 'window' : 'whole profile'}); ${s.selfByPart
      .slice(0, 8)
      .map((p) => `${p.part} ${(p.ms / syncs).toFixed(2)}`)
      .join(', ')}`,
  );
  return {
    syncs,
    busyMsPerSync: s.busyMs / syncs,
    windowed: s.windowed,
    byPart: s.byPart.map((p) => ({ part: p.part, msPerSync: p.ms / syncs })),
    selfByPart: s.selfByPart.map((p) => ({ part: p.part, msPerSync: p.ms / syncs })),
    topSelf: s.topSelf.map((f) => ({ fn: f.fn, msPerSync: f.ms / syncs })),
  };
}
